/**
 * `withPathLock`: edits and writes of one file, one at a time across every
 * worker thread of the process (see `path-lock-table.ts`). pi's own
 * mutation queue serializes them within one thread only; on a pool, two
 * sessions' edits of one file run on two threads at once, and without this
 * both could apply against the same old content, one update lost.
 *
 * A lock is taken by `Atomics.compareExchange` of the slot from 0 to this
 * thread's id, and waited for without blocking the thread's event loop
 * (`Atomics.waitAsync` on the holder's id: the release, or the main
 * thread freeing the slots of a thread that ended, stores 0 and wakes every
 * waiter, which then race for it; no order among waiters is promised). A
 * wait is given up with pi's "Operation aborted" as soon as the call is
 * aborted. Uncontended, a lock costs pi's own key (a `realpath`) and two
 * atomic operations; nothing is sent to another thread.
 *
 * @module
 */
import { realpath } from "node:fs/promises";
import { resolve } from "node:path";
import { threadId, workerData } from "node:worker_threads";

import { pathLockSlot } from "./path-lock-table.js";

/** The table, as the worker entry received it in its boot data; absent outside a pool's thread. */
const table = (workerData as { pathLocks?: Int32Array } | null)?.pathLocks;

/**
 * Longest single wait before the slot is looked at again. Waking needs no
 * timeout (a release always notifies, and `waitAsync` checks the value and
 * enqueues atomically); this only bounds how long a wait parked on a slot
 * could outlive a wake-up that never came.
 */
const recheckMs = 1_000;

/** `Atomics.waitAsync` (every Node toolpool runs on has it; TypeScript's ES2022 library does not declare it). */
const waitAsync = (
  Atomics as unknown as {
    waitAsync: (array: Int32Array, index: number, value: number, timeout: number) => { async: boolean; value: unknown };
  }
).waitAsync;

/** Settles once the slot's holder may have changed, or at once when `signal` aborts (a throw). */
async function waitForRelease(table: Int32Array, slot: number, holder: number, signal: AbortSignal | undefined): Promise<void> {
  const waiting = waitAsync(table, slot, holder, recheckMs);
  if (!waiting.async) return;
  if (signal === undefined) {
    await waiting.value;
    return;
  }
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Error("Operation aborted"));
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    await Promise.race([waiting.value, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort!);
  }
}

/**
 * pi's key for a path: its real path, or the resolved path of a file not
 * there yet. Never throws: where pi's own key fails (a loop of links), the
 * lock is taken on the resolved path, and pi answers the call (its input's
 * check comes first, then its own key's error), as it does without a pool.
 */
export async function pathLockKey(path: string): Promise<string> {
  const resolved = resolve(path);
  try {
    return await realpath(resolved);
  } catch {
    return resolved;
  }
}

/**
 * Runs `fn` holding the lock of `path` (see {@link pathLockKey}), across
 * every thread of the process; outside a pool's thread (no table in its
 * boot data) it runs `fn` at once. Rejects with pi's "Operation aborted",
 * without running `fn`, if `signal` aborts while it waits. A thread runs one
 * call at a time, so it never waits for a lock it holds itself.
 *
 * @example
 * ```ts
 * const result = await withPathLock(absolutePath, signal, () => editTool.execute(id, args, signal));
 * ```
 */
export async function withPathLock<T>(path: string, signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
  if (table === undefined) return fn();
  const slot = pathLockSlot(await pathLockKey(path));
  for (;;) {
    const holder = Atomics.compareExchange(table, slot, 0, threadId);
    if (holder === 0) break;
    if (signal?.aborted) throw new Error("Operation aborted");
    await waitForRelease(table, slot, holder, signal);
  }
  try {
    return await fn();
  } finally {
    Atomics.store(table, slot, 0);
    Atomics.notify(table, slot);
  }
}
