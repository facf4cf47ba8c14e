/**
 * pi's bash `operations` as toolpool runs them: pi's own shell, environment
 * and output handling (its `getShellConfig`, and `waitForChildProcess`,
 * which does not hang on pipes held by background processes), with the
 * call's processes marked (see `process-tree.ts`), so that on its deadline
 * or an abort the call's whole process tree ends, group and escapees alike,
 * not only its process group as in pi.
 *
 * The contract is pi's `BashOperations.exec`: it resolves with the exit code,
 * or throws `Error("aborted")` on an abort and `Error("timeout:<seconds>")`
 * at the deadline, which pi's bash tool turns into its own "Command aborted"
 * and "Command timed out after N seconds" results. Unlike pi, a call that
 * ends by itself also ends the background processes it started (`cmd &`,
 * `setsid`, `nohup`): no process of a call outlives it. With
 * `keepBackground` they keep running, as in pi, until the pool terminates
 * their thread, the runtime closes or the process exits.
 *
 * @module
 */
import { type ChildProcess, spawn as nodeSpawn } from "node:child_process";
import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { constants as osConstants } from "node:os";
import { threadId } from "node:worker_threads";

import { callMarkerName, chainedMarker, endProcessTree, threadMarkerPrefix } from "./process-tree.js";

/** What toolpool uses of pi's `utils/shell.js` and `utils/child-process.js`. */
export interface PiShellUtils {
  getShellConfig(shellPath?: string): { shell: string; args: string[]; commandTransport?: "stdin" | "args" };
  getShellEnv(): NodeJS.ProcessEnv;
  waitForChildProcess(child: ChildProcess): Promise<number | null>;
}

/** pi's `BashOperations`. */
interface BashOperations {
  exec(
    command: string,
    cwd: string,
    options: { onData: (data: Buffer) => void; signal?: AbortSignal; timeout?: number; env?: NodeJS.ProcessEnv },
  ): Promise<{ exitCode: number | null }>;
}

let callCount = 0;

/**
 * The bash operations of one call: `graceMs` between SIGTERM and SIGKILL
 * when its tree must end; its shell started by `spawn` (default Node's).
 */
export function createBashOperations(
  pi: PiShellUtils,
  options: { shellPath?: string | undefined; graceMs: number; keepBackground: boolean; spawn?: typeof nodeSpawn },
): BashOperations {
  const spawn = options.spawn ?? nodeSpawn;
  return {
    async exec(command, cwd, { onData, signal, timeout, env }) {
      const timeoutMs = timeout === undefined ? undefined : timeoutMsOf(timeout);
      if (signal?.aborted) throw new Error("aborted");
      const shellConfig = pi.getShellConfig(options.shellPath);
      try {
        await access(cwd, constants.F_OK);
      } catch {
        throw new Error(`Working directory does not exist: ${cwd}\nCannot execute bash commands.`);
      }
      callCount += 1;
      const marker = `${threadMarkerPrefix(threadId)}${callCount}`;
      const fromStdin = shellConfig.commandTransport === "stdin";
      const child = spawn(shellConfig.shell, fromStdin ? shellConfig.args : [...shellConfig.args, command], {
        cwd,
        detached: process.platform !== "win32",
        env: markedEnv(env ?? pi.getShellEnv(), marker),
        stdio: [fromStdin ? "pipe" : "ignore", "pipe", "pipe"],
        windowsHide: true,
      });
      if (fromStdin) {
        child.stdin?.on("error", () => {});
        child.stdin?.end(command);
      }
      // The process number comes with the start (from the pool thread's spawn helper, a message later):
      // the tree's group and the first number to read must be known before anything can end it.
      const failed = await started(child);
      if (failed !== undefined) {
        // A spawn helper that died may have started the shell without saying so: whatever carries the marker ends.
        await endProcessTree({ marker, isWholeMarker: true }, 0);
        throw failed;
      }
      let ending: Promise<number> | undefined;
      // At the deadline, SIGTERM first and SIGKILL after the grace; on an abort (as pi does) and for
      // what is left once the shell has exited, SIGKILL at once.
      const endTree = (graceMs: number) =>
        (ending ??= endProcessTree({ group: child.pid, marker, isWholeMarker: true, fromPid: child.pid }, graceMs));
      let isTimedOut = false;
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              isTimedOut = true;
              void endTree(options.graceMs);
            }, timeoutMs);
      const onAbort = () => void endTree(0);
      try {
        child.stdout?.on("data", onData);
        child.stderr?.on("data", onData);
        if (signal) {
          if (signal.aborted) onAbort();
          else signal.addEventListener("abort", onAbort, { once: true });
        }
        const exitCode = await pi.waitForChildProcess(child);
        // The shell is gone: its result stands, whatever the clock says now.
        if (timer !== undefined) clearTimeout(timer);
        // Whatever the tree still holds (background processes, unless kept) ends before the call does.
        if (ending !== undefined || !options.keepBackground) await endTree(0);
        if (signal?.aborted) throw new Error("aborted");
        if (isTimedOut) throw new Error(`timeout:${timeout}`);
        const signalCode = child.signalCode;
        return { exitCode: exitCode ?? (signalCode ? 128 + (osConstants.signals[signalCode] ?? 0) : 1) };
      } finally {
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      }
    },
  };
}

const maxTimeoutMs = 2_147_483_647;

/** pi's rule for a `timeout` in seconds, with pi's messages. */
function timeoutMsOf(timeout: number): number {
  if (!Number.isFinite(timeout) || timeout <= 0) throw new Error("Invalid timeout: must be a finite number of seconds");
  const ms = timeout * 1000;
  if (ms > maxTimeoutMs) throw new Error(`Invalid timeout: maximum is ${maxTimeoutMs / 1000} seconds`);
  return ms;
}

/** `env` with the call's marker, after the markers of the calls this process itself runs in, if any. */
function markedEnv(env: NodeJS.ProcessEnv, marker: string): NodeJS.ProcessEnv {
  return { ...env, [callMarkerName]: chainedMarker(marker, env[callMarkerName]) };
}

/** Resolves once `child` started (undefined), or with the error that kept it from starting. */
function started(child: ChildProcess): Promise<Error | undefined> {
  if (child.pid !== undefined) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const onSpawn = () => {
      child.off("error", onError);
      resolve(undefined);
    };
    const onError = (error: Error) => {
      child.off("spawn", onSpawn);
      resolve(error);
    };
    child.once("spawn", onSpawn);
    child.once("error", onError);
  });
}
