/**
 * The messages between a pool thread and its spawn helper (`spawn-helper.ts`,
 * `remote-spawn.ts`), over the helper's IPC channel with Node's "advanced"
 * serialization (output crosses as bytes). Each child process is named by
 * the id the thread gave it.
 *
 * @module
 */
import type { ChildProcess, spawn as nodeSpawn } from "node:child_process";

/** What a child's stdio entries may be through the helper: the rest stays with Node's own `spawn`. */
export type HelperStdio = "pipe" | "ignore";

/** Thread → helper. */
export type HelperRequest =
  | {
      kind: "spawn";
      id: number;
      file: string;
      args: string[];
      cwd: string;
      env: NodeJS.ProcessEnv;
      detached: boolean;
      stdio: [HelperStdio, HelperStdio, HelperStdio];
    }
  | { kind: "stdin"; id: number; data: Uint8Array }
  | { kind: "stdin-end"; id: number }
  /** A signal for the child, sent by the helper, which holds the child's handle (no process number reused meanwhile). */
  | { kind: "kill"; id: number; signal: NodeJS.Signals | number }
  /** The thread's reader of one of the child's outputs is full: the helper stops reading that pipe until `resume`. */
  | { kind: "pause"; id: number; stream: OutputName }
  | { kind: "resume"; id: number; stream: OutputName }
  /** The thread no longer reads one of the child's outputs: the helper stops reading it too. */
  | { kind: "release"; id: number; stream: OutputName };

/** A child's outputs. */
export type OutputName = "stdout" | "stderr";

/** The fields of a spawn error that Node sets (`spawn rg ENOENT`). */
export interface SpawnErrorFields {
  message: string;
  errno?: number;
  code?: string;
  syscall?: string;
  path?: string;
  spawnargs?: string[];
}

/** Helper → thread, in the order the helper saw them. */
export type HelperReport =
  /** The helper's first report, before it reads any request: a helper that never sent it started nothing. */
  | { kind: "ready"; id: 0; pid: number }
  | { kind: "spawned"; id: number; pid: number }
  | { kind: "error"; id: number; error: SpawnErrorFields }
  | { kind: "data"; id: number; stream: OutputName; data: Uint8Array }
  | { kind: "end"; id: number; stream: OutputName }
  | { kind: "exit"; id: number; code: number | null; signal: NodeJS.Signals | null }
  | { kind: "close"; id: number; code: number | null; signal: NodeJS.Signals | null };

/** The fields of `error` that cross to the thread. */
export function errorFields(
  error: Error & { errno?: number; code?: string; syscall?: string; path?: string; spawnargs?: string[] },
): SpawnErrorFields {
  return {
    message: error.message,
    ...(error.errno === undefined ? {} : { errno: error.errno }),
    ...(error.code === undefined ? {} : { code: error.code }),
    ...(error.syscall === undefined ? {} : { syscall: error.syscall }),
    ...(error.path === undefined ? {} : { path: error.path }),
    ...(error.spawnargs === undefined ? {} : { spawnargs: error.spawnargs }),
  };
}

/** A request to start a child. */
export type SpawnRequest = Extract<HelperRequest, { kind: "spawn" }>;

/**
 * Starts `request`'s child with `spawn` and reports what it does, in the
 * order Node's `ChildProcess` tells it (`bytes`: the size of an output's
 * chunk). When `spawn` throws (an argument list too long for the system,
 * say), an error and a close are reported and nothing is returned. The
 * helper reports to its thread this way, and a thread whose helper failed
 * to its own `RemoteChild`.
 */
export function startReported(
  spawn: typeof nodeSpawn,
  request: SpawnRequest,
  report: (message: HelperReport, bytes?: number) => void,
): ChildProcess | undefined {
  const { id } = request;
  let child: ChildProcess;
  try {
    child = spawn(request.file, request.args, {
      cwd: request.cwd,
      env: request.env,
      detached: request.detached,
      stdio: request.stdio,
      windowsHide: true,
    });
  } catch (error) {
    const fields = errorFields(error as Error);
    report({ kind: "error", id, error: fields });
    report({ kind: "close", id, code: fields.errno ?? null, signal: null });
    return undefined;
  }
  child.stdin?.on("error", () => {});
  child.on("error", (error) => report({ kind: "error", id, error: errorFields(error) }));
  child.on("spawn", () => {
    if (child.pid !== undefined) report({ kind: "spawned", id, pid: child.pid });
  });
  for (const [stream, name] of [
    [child.stdout, "stdout"],
    [child.stderr, "stderr"],
  ] as const) {
    stream?.on("data", (data: Buffer) => report({ kind: "data", id, stream: name, data }, data.length));
    stream?.on("end", () => report({ kind: "end", id, stream: name }));
    stream?.on("error", () => {});
  }
  child.on("exit", (code, signal) => report({ kind: "exit", id, code, signal }));
  child.on("close", (code, signal) => report({ kind: "close", id, code, signal }));
  return child;
}
