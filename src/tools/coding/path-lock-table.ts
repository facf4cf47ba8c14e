/**
 * The shared table behind `withPathLock`: per path-hash slot, the holder's
 * thread id (0: free). Main thread creates it and frees dead threads' slots.
 * @module
 */

/** A power of two. */
const pathLockSlots = 4_096;

// On globalThis, so two copies of this module in one process share one table.
const tableKey = Symbol.for("toolpool.pathLockTable");
const holder = globalThis as { [tableKey]?: Int32Array };

export function pathLockTable(): Int32Array {
  holder[tableKey] ??= new Int32Array(new SharedArrayBuffer(pathLockSlots * Int32Array.BYTES_PER_ELEMENT));
  return holder[tableKey];
}

/** FNV-1a of the UTF-16 code units. */
export function pathLockSlot(key: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < key.length; index++) {
    hash ^= key.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) & (pathLockSlots - 1);
}

/** Frees a dead thread's slots; only after its `exit`, as a write may still finish. */
export function releasePathLocksOf(threadId: number): void {
  const table = holder[tableKey];
  if (table === undefined || threadId <= 0) return;
  for (let slot = 0; slot < pathLockSlots; slot++) {
    if (Atomics.compareExchange(table, slot, threadId, 0) === threadId) Atomics.notify(table, slot);
  }
}
