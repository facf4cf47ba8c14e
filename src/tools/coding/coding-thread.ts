/**
 * Once per coding thread: its priority, its spawn helper, and the patches to
 * Node's modules pi's tools need where pi offers no hook.
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import childProcess from "node:child_process";
import { readlinkSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { getPriority, setPriority } from "node:os";
import workerThreads from "node:worker_threads";

import type { CodingToolName } from "./coding-settings.js";
import { routedSpawn } from "./remote-spawn.js";
import { type CallSandbox, findExecutable, sandboxedCommand, sandboxedEnv } from "./sandbox.js";
import { rememberingProbes } from "./tool-probes.js";

type Spawn = typeof childProcess.spawn;

interface CodingThread {
  readonly nativeSpawn: Spawn;
  spawn?: Spawn;
  readonly changed: Set<"spawn" | "probes" | "worker">;
}

const threadKey = Symbol.for("toolpool.codingThread");

const threadNiceness = 5;

function codingThread(): CodingThread {
  const holder = globalThis as { [threadKey]?: CodingThread };
  if (holder[threadKey] === undefined) {
    holder[threadKey] = { nativeSpawn: childProcess.spawn, changed: new Set() };
    lowerThreadPriority();
  }
  return holder[threadKey];
}

/** The thread's one spawn helper's `spawn` (`spawn-helper.ts` says why), unless turned off. */
export function threadSpawn(): Spawn {
  const thread = codingThread();
  thread.spawn ??= process.platform === "win32" || process.env.TOOLPOOL_SPAWN_HELPER === "0" ? thread.nativeSpawn : routedSpawn(thread.nativeSpawn);
  return thread.spawn;
}

/** Makes the changes `tool`'s pi code needs, each once per thread. */
export function prepareThreadFor(tool: CodingToolName): void {
  const thread = codingThread();
  const changes: ("spawn" | "probes" | "worker")[] = tool === "grep" || tool === "find" ? ["spawn", "probes"] : tool === "read" ? ["worker"] : [];
  const due = changes.filter((change) => !thread.changed.has(change));
  if (due.length === 0) return;
  for (const change of due) {
    thread.changed.add(change);
    // pi's grep and find spawn rg and fd with Node's `spawn`: no hook of pi's reaches it.
    if (change === "spawn") childProcess.spawn = sandboxingSpawn(threadSpawn());
    // pi probes `rg --version` before each search with `spawnSync`, no hook either.
    else if (change === "probes") childProcess.spawnSync = rememberingProbes(childProcess.spawnSync, () => performance.now());
    // pi's read resizes images on a worker of its own, which pi offers no hook for.
    else workerThreads.Worker = resizingInPlaceWorker(workerThreads.Worker);
  }
  // pi imports them by name: the bindings follow the module objects once synced.
  syncBuiltinESMExports();
}

/**
 * The call's sandbox follows the call's own async work, not the thread's
 * current call: pi's find settles an aborted call at once and may still
 * start fd after, when the thread runs another call or none.
 */
const callSandboxes = new AsyncLocalStorage<CallSandbox | undefined>();

/** Runs `run` with what pi spawns in it, then or later (grep's rg, find's fd), in `sandbox`. */
export function withCallSandbox<T>(sandbox: CallSandbox | undefined, run: () => Promise<T>): Promise<T> {
  return callSandboxes.run(sandbox, run);
}

/**
 * `spawn`, in the call's sandbox when it has one: the program pi chose (by
 * name, found on the host's PATH) runs there, its working folder the one
 * pi gave or the workspace.
 */
export function sandboxingSpawn(spawn: Spawn): Spawn {
  const sandboxing = (...call: unknown[]): unknown => {
    const scope = callSandboxes.getStore();
    if (scope === undefined) return (spawn as (...rest: unknown[]) => unknown)(...call);
    const [file, second, third] = call;
    const args = Array.isArray(second) ? (second as string[]) : [];
    const options = ((Array.isArray(second) ? third : second) ?? {}) as childProcess.SpawnOptions;
    // Fails closed: nothing is spawned unsandboxed in a sandboxed call.
    if (typeof file !== "string" || typeof options !== "object") throw new Error(`A sandboxed call cannot spawn ${String(file)}`);
    const env = options.env ?? process.env;
    const program = file.includes("/") ? file : (findExecutable(file, env.PATH ?? "") ?? file);
    const cwd = typeof options.cwd === "string" ? options.cwd : scope.place.workspace;
    const run = sandboxedCommand(scope.sandbox, { ...scope.place, cwd }, program, args);
    return spawn(run.file, run.args, { ...options, env: sandboxedEnv(scope.sandbox, env) });
  };
  return sandboxing as Spawn;
}

/** pi then resizes in process, its own fallback: a thread start per image costs more than the resize (docs/benchmarks.md). */
function resizingInPlaceWorker(Worker: typeof workerThreads.Worker): typeof workerThreads.Worker {
  return class CodingThreadWorker extends Worker {
    constructor(filename: string | URL, options?: workerThreads.WorkerOptions) {
      if (/\/utils\/image-resize-worker\.[jt]s$/.test(String(filename))) throw new Error("pi's image resizes run on the coding thread itself");
      super(filename, options);
    }
  };
}

/** Busy coding threads (and their processes) still leave the coordinator its turns. Linux; a failure changes nothing. */
function lowerThreadPriority(): void {
  if (process.platform !== "linux") return;
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, Math.min(19, getPriority(tid) + threadNiceness));
  } catch {}
}
