/**
 * What a thread of the coding tools' own pools sets up once, whichever of
 * its tools loads first (each tool of each `codingTools` call is a module
 * instance of its own on the thread): its priority, its spawn helper, and
 * the changes to Node's modules that pi's tools need where pi offers no
 * hook. No other tool runs on these threads, so none meets those changes.
 *
 * @module
 */
import childProcess from "node:child_process";
import { readlinkSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { getPriority, setPriority } from "node:os";
import workerThreads from "node:worker_threads";

import type { CodingToolName } from "./coding-settings.js";
import { routedSpawn } from "./remote-spawn.js";
import { rememberingProbes } from "./tool-probes.js";

type Spawn = typeof childProcess.spawn;

interface CodingThread {
  /** Node's own `spawn`, taken before any change. */
  readonly nativeSpawn: Spawn;
  spawn?: Spawn;
  readonly changed: Set<"spawn" | "probes" | "worker">;
}

const threadKey = Symbol.for("toolpool.codingThread");

/** How much lower than the main thread's a coding thread's priority is (nice levels). */
const threadNiceness = 5;

/** This thread's state, made (and its priority lowered) on first use. */
function codingThread(): CodingThread {
  const holder = globalThis as { [threadKey]?: CodingThread };
  if (holder[threadKey] === undefined) {
    holder[threadKey] = { nativeSpawn: childProcess.spawn, changed: new Set() };
    lowerThreadPriority();
  }
  return holder[threadKey];
}

/**
 * The `spawn` of this thread's child processes: through the thread's one
 * spawn helper (`spawn-helper.ts` says why), or Node's own on Windows and
 * under `TOOLPOOL_SPAWN_HELPER=0`. bash gets it through pi's `operations`.
 */
export function threadSpawn(): Spawn {
  const thread = codingThread();
  thread.spawn ??= process.platform === "win32" || process.env.TOOLPOOL_SPAWN_HELPER === "0" ? thread.nativeSpawn : routedSpawn(thread.nativeSpawn);
  return thread.spawn;
}

/** Sets up this thread for `tool`: the module changes its pi code needs, each made once per thread. */
export function prepareThreadFor(tool: CodingToolName): void {
  const thread = codingThread();
  const changes: ("spawn" | "probes" | "worker")[] = tool === "grep" || tool === "find" ? ["spawn", "probes"] : tool === "read" ? ["worker"] : [];
  const due = changes.filter((change) => !thread.changed.has(change));
  if (due.length === 0) return;
  for (const change of due) {
    thread.changed.add(change);
    // pi's grep and find spawn ripgrep and fd with Node's `spawn`: no operations hook reaches that spawn.
    if (change === "spawn") childProcess.spawn = threadSpawn();
    // pi probes `rg --version` (`fd --version`) before each search with `spawnSync`, which pi offers no hook for.
    else if (change === "probes") childProcess.spawnSync = rememberingProbes(childProcess.spawnSync, () => performance.now());
    // pi's read resizes images on a worker of its own, which pi offers no hook for.
    else workerThreads.Worker = resizingInPlaceWorker(workerThreads.Worker);
  }
  // pi imports { spawn, spawnSync } and { Worker } by name: their bindings follow the module objects once synced.
  syncBuiltinESMExports();
}

/**
 * `Worker` that refuses to start pi's image-resize worker, so that pi takes
 * its own fallback, the same resize in process: a coding thread is off the
 * main thread already, and a thread start and a WebAssembly compile per
 * image cost more than the resize (see docs/benchmarks.md). Any other
 * worker starts as it would.
 */
function resizingInPlaceWorker(Worker: typeof workerThreads.Worker): typeof workerThreads.Worker {
  return class CodingThreadWorker extends Worker {
    constructor(filename: string | URL, options?: workerThreads.WorkerOptions) {
      if (/\/utils\/image-resize-worker\.[jt]s$/.test(String(filename))) throw new Error("pi's image resizes run on the coding thread itself");
      super(filename, options);
    }
  };
}

/**
 * Gives this thread (and the processes it starts, which inherit it) a lower
 * priority than the main thread's, so that cores kept busy by the coding
 * tools still leave the coordinator its turns. The thread runs coding tools
 * only, so no user's tool is slowed by it. Linux only (`/proc/thread-self`
 * names the thread's own id); a failure leaves the priority as it was.
 */
function lowerThreadPriority(): void {
  if (process.platform !== "linux") return;
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, Math.min(19, getPriority(tid) + threadNiceness));
  } catch {}
}
