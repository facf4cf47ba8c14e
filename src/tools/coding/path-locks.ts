/**
 * `withPathLock`: edits and writes of one file, one at a time across every
 * thread of the process (pi's mutation queue serializes within one thread
 * only). Taken by compareExchange 0 → thread id; waited for with
 * `Atomics.waitAsync`, so the event loop stays free; no order among waiters.
 *
 * @module
 */
import { realpath } from "node:fs/promises";
import { resolve } from "node:path";
import { threadId, workerData } from "node:worker_threads";

import { pathLockSlot } from "./path-lock-table.js";

/** Absent outside a pool's thread. */
const table = (workerData as { pathLocks?: Int32Array } | null)?.pathLocks;

/** Only a backstop: a release always notifies. */
const recheckMs = 1_000;

/** TypeScript's ES2022 library does not declare `Atomics.waitAsync`. */
const waitAsync = (
  Atomics as unknown as {
    waitAsync: (array: Int32Array, index: number, value: number, timeout: number) => { async: boolean; value: unknown };
  }
).waitAsync;

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
 * pi's key for a path (its real path, else the resolved one). Never throws:
 * where pi's key fails, pi itself reports the error to the call.
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
 * Runs `fn` holding the process-wide lock of `path`; rejects with pi's
 * "Operation aborted" if `signal` aborts while waiting.
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
