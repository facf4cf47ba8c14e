/**
 * pi's bash `operations` on pi's own shell helpers, with the call's processes
 * marked (`process-tree.ts`) so that its deadline, an abort or its end
 * (unless `keepBackground`) ends its whole process tree, not only its group;
 * with a sandbox, the shell runs in one (`sandbox.ts`).
 * @module
 */
import { type ChildProcess, spawn as nodeSpawn } from "node:child_process";
import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { constants as osConstants } from "node:os";
import { threadId } from "node:worker_threads";

import { callMarkerName, chainedMarker, endProcessTree, threadMarkerPrefix } from "./process-tree.js";
import { type CallSandbox, sandboxedCommand, sandboxedEnv } from "./sandbox.js";

export interface PiShellUtils {
  getShellConfig(shellPath?: string): { shell: string; args: string[]; commandTransport?: "stdin" | "args" };
  getShellEnv(): NodeJS.ProcessEnv;
  waitForChildProcess(child: ChildProcess): Promise<number | null>;
}

interface BashOperations {
  exec(
    command: string,
    cwd: string,
    options: { onData: (data: Buffer) => void; signal?: AbortSignal; timeout?: number; env?: NodeJS.ProcessEnv },
  ): Promise<{ exitCode: number | null }>;
}

let callCount = 0;

/** `spawn`: the coding thread's, which starts the shell through its spawn helper; default Node's. */
export function createBashOperations(
  pi: PiShellUtils,
  options: { shellPath?: string | undefined; graceMs: number; keepBackground: boolean; spawn?: typeof nodeSpawn; sandbox?: CallSandbox | undefined },
): BashOperations {
  const spawn = options.spawn ?? nodeSpawn;
  const { sandbox } = options;
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
      const shellArgs = fromStdin ? shellConfig.args : [...shellConfig.args, command];
      const shellEnv = markedEnv(env ?? pi.getShellEnv(), marker);
      const run =
        sandbox === undefined
          ? { file: shellConfig.shell, args: shellArgs, env: shellEnv }
          : {
              ...sandboxedCommand(sandbox.sandbox, { ...sandbox.place, cwd, keepsBackground: options.keepBackground }, shellConfig.shell, shellArgs),
              env: sandboxedEnv(sandbox.sandbox, shellEnv),
            };
      const child = spawn(run.file, run.args, {
        cwd,
        detached: process.platform !== "win32",
        env: run.env,
        stdio: [fromStdin ? "pipe" : "ignore", "pipe", "pipe"],
        windowsHide: true,
      });
      if (fromStdin) {
        child.stdin?.on("error", () => {});
        child.stdin?.end(command);
      }
      // The tree's group must be known before anything can end it; a helper reports it a message later.
      const failed = await started(child);
      if (failed !== undefined) {
        // A spawn helper that died may have started the shell without saying so: whatever carries the marker ends.
        await endProcessTree({ marker, isWholeMarker: true }, 0);
        throw failed;
      }
      let ending: Promise<number> | undefined;
      // SIGKILL at once on an abort (as pi does) and for what is left once the shell has exited.
      // A sandbox's bwrap gets no SIGTERM: the sandbox would end with it, before the grace.
      const endTree = (graceMs: number) =>
        (ending ??= endProcessTree(
          { group: child.pid, marker, isWholeMarker: true, fromPid: child.pid, ...(sandbox === undefined ? {} : { sparedFromTerm: child.pid }) },
          graceMs,
        ));
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

/** After the markers of the calls this process itself runs in, if any. */
function markedEnv(env: NodeJS.ProcessEnv, marker: string): NodeJS.ProcessEnv {
  return { ...env, [callMarkerName]: chainedMarker(marker, env[callMarkerName]) };
}

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
