/**
 * The table behind `withPathLock`: one Int32 slot per hash of a file's path,
 * in shared memory, holding the thread id of the thread that holds that
 * path's lock (0: free). One table per process, created on the main thread
 * and handed to every worker thread of every pool at start-up (in its boot
 * data), so that edits and writes of one file are serialized across every
 * thread and every session of every runtime in the process. Two paths that
 * share a slot only wait for each other.
 *
 * Both threads use this module: the main thread creates the table and frees
 * the slots of a thread that ended while it held them (a terminated or
 * crashed worker never releases its own); a worker takes and releases slots.
 *
 * @module
 */

/** Slots of the table; a power of two. */
const pathLockSlots = 4_096;

/**
 * Where the process keeps its table: on the main thread's global object, not
 * in this module, so that two copies of the module in one process (the
 * package's bundled entry beside tsc's files, loaded by the CLI or the MCP
 * entry) still share one table and one set of locks.
 */
const tableKey = Symbol.for("toolpool.pathLockTable");
const holder = globalThis as { [tableKey]?: Int32Array };

/** The process's table (main thread), created on first use. */
export function pathLockTable(): Int32Array {
  holder[tableKey] ??= new Int32Array(new SharedArrayBuffer(pathLockSlots * Int32Array.BYTES_PER_ELEMENT));
  return holder[tableKey];
}

/** The slot of `key` (FNV-1a of its UTF-16 code units). */
export function pathLockSlot(key: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < key.length; index++) {
    hash ^= key.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) & (pathLockSlots - 1);
}

/**
 * Frees every slot that thread `threadId` holds and wakes their waiters: for
 * a thread that ended (terminated, crashed) while it held a lock. Main
 * thread; a no-op before any table exists. Called once the thread has
 * exited (its `exit` event): a thread being terminated may still have a
 * write of the file in flight, which Node lets finish before the thread
 * exits, so freeing its slot earlier would let another edit read a file
 * still being written.
 */
export function releasePathLocksOf(threadId: number): void {
  const table = holder[tableKey];
  if (table === undefined || threadId <= 0) return;
  for (let slot = 0; slot < pathLockSlots; slot++) {
    if (Atomics.compareExchange(table, slot, threadId, 0) === threadId) Atomics.notify(table, slot);
  }
}
