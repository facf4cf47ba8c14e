/**
 * Messages between a pool thread and its spawn helper, over IPC with
 * "advanced" serialization (output crosses as bytes).
 * @module
 */
import type { ChildProcess, spawn as nodeSpawn } from "node:child_process";

/** The rest stays with Node's own `spawn`. */
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

export type OutputName = "stdout" | "stderr";

/** The fields Node sets on a spawn error (`spawn rg ENOENT`). */
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

export type SpawnRequest = Extract<HelperRequest, { kind: "spawn" }>;

/**
 * Starts `request`'s child and reports what it does in `ChildProcess`'s order
 * (`bytes`: a chunk's size). A throwing `spawn` reports an error and a close.
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
