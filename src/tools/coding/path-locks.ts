/**
 * `withPathLock`: one edit or write of a file at a time across the process's
 * threads (pi serializes within a thread only); waits via `Atomics.waitAsync`.
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

/** pi's key (real path, else resolved). Never throws: pi reports its own key's error. */
export async function pathLockKey(path: string): Promise<string> {
  const resolved = resolve(path);
  try {
    return await realpath(resolved);
  } catch {
    return resolved;
  }
}

/** Runs `fn` holding `path`'s lock; pi's "Operation aborted" if `signal` aborts first. */
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
