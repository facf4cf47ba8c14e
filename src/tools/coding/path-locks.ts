/**
 * `withPathLock`: edits and writes of one file, one at a time across every
 * worker thread of the process (see `path-lock-table.ts`). pi's own
 * mutation queue serializes them within one thread only; on a pool, two
 * sessions' edits of one file run on two threads at once, and without this
 * both could apply against the same old content, one update lost.
 *
 * A lock is waited for without blocking the thread (`Atomics.waitAsync`),
 * re-checked every 50 ms in case a wake-up was missed, and given up with
 * pi's "Operation aborted" when the call is aborted meanwhile.
 *
 * @module
 */
import { realpath } from "node:fs/promises";
import { resolve } from "node:path";
import { threadId, workerData } from "node:worker_threads";

import { pathLockSlot } from "./path-lock-table.js";

/** The table, as the worker entry received it in its boot data; absent outside a pool's thread. */
const table = (workerData as { pathLocks?: Int32Array } | null)?.pathLocks;

/** How often a waiter looks again without a wake-up. */
const recheckMs = 50;

/** `Atomics.waitAsync` (every Node toolpool runs on has it; TypeScript's ES2022 library does not declare it). */
const waitAsync = (
  Atomics as unknown as { waitAsync: (array: Int32Array, index: number, value: number, timeout: number) => { async: boolean; value: unknown } }
).waitAsync;

/** pi's key for a path: its real path, or the resolved path of a file not there yet. */
export async function pathLockKey(path: string): Promise<string> {
  const resolved = resolve(path);
  try {
    return await realpath(resolved);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return resolved;
    throw error;
  }
}

/**
 * Runs `fn` holding the lock of `path` (see {@link pathLockKey}), across
 * every thread of the process. Rejects with pi's "Operation aborted" if
 * `signal` aborts while it waits.
 */
export async function withPathLock<T>(path: string, signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
  if (table === undefined) return fn();
  const slot = pathLockSlot(await pathLockKey(path));
  for (;;) {
    const holder = Atomics.compareExchange(table, slot, 0, threadId);
    if (holder === 0) break;
    if (signal?.aborted) throw new Error("Operation aborted");
    const waiting = waitAsync(table, slot, holder, recheckMs);
    if (waiting.async) await waiting.value;
  }
  try {
    return await fn();
  } finally {
    Atomics.store(table, slot, 0);
    Atomics.notify(table, slot);
  }
}
