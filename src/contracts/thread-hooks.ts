/**
 * What a tool set asks of every worker thread of the process, beyond running
 * calls: data each thread starts with, and what to do when a thread is lost
 * or has exited. The pools call the registered hooks and know nothing of
 * what they do (pi's coding tools register their file-lock table, the
 * release of a dead thread's locks and the sweep of its bash processes).
 *
 * @module
 */

/** A tool set's thread lifecycle hooks; each is optional and must not throw. */
export interface ThreadHooks {
  /** Fields added to every thread's `workerData` (read when a pool starts its threads). */
  workerData?(): Readonly<Record<string, unknown>>;
  /**
   * Thread `threadId` was terminated by its pool, or failed while running a
   * call: called at once, and again once it has exited. A pool waits for a
   * returned promise only while it closes.
   */
  threadLost?(threadId: number): Promise<void> | void;
  /** Thread `threadId` has exited, or was terminated and did not exit in time: what it held is to be freed. */
  threadExited?(threadId: number): void;
}

/**
 * Where the process keeps the registered hooks: on the global object, so
 * that two copies of this module (the bundled entry beside tsc's files)
 * share one list.
 */
const hooksKey = Symbol.for("toolpool.threadHooks");
const holder = globalThis as { [hooksKey]?: Set<ThreadHooks> };

/** Registers `hooks` for the threads of every pool started from now on (once per hooks object); returns what unregisters them. */
export function registerThreadHooks(hooks: ThreadHooks): () => void {
  const registered = (holder[hooksKey] ??= new Set());
  registered.add(hooks);
  return () => registered.delete(hooks);
}

/** The hooks registered so far. */
export function registeredThreadHooks(): readonly ThreadHooks[] {
  return [...(holder[hooksKey] ?? [])];
}
