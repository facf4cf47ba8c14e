/**
 * What the Piscina host knows of each worker thread, one record per thread:
 * whether Piscina marked it ready (and in which Piscina instance), whether it
 * has started (its boot message or a reply came), and the watch on its exit
 * once the host terminated it.
 *
 * @module
 */

/** One worker thread, as the host sees it. */
interface ThreadRecord {
  readonly threadId: number;
  /** The Piscina instance that marked it ready (its `workerCreate` event); only such threads take calls. */
  readyIn: object | undefined;
  /** It has started: its boot message or a reply arrived. */
  isBooted: boolean;
  /** Set while the pool terminates it: the timer that watches for its exit. */
  exitWatch: unknown;
}

export class ThreadRecords {
  readonly #records = new Map<number, ThreadRecord>();

  /** The record of `threadId`, created on first sight. */
  of(threadId: number): ThreadRecord {
    let record = this.#records.get(threadId);
    if (record === undefined) {
      record = { threadId, readyIn: undefined, isBooted: false, exitWatch: undefined };
      this.#records.set(threadId, record);
    }
    return record;
  }

  get(threadId: number): ThreadRecord | undefined {
    return this.#records.get(threadId);
  }

  /** The threads that `instance` marked ready. */
  *readyIn(instance: object): Generator<ThreadRecord> {
    for (const record of this.#records.values()) if (record.readyIn === instance) yield record;
  }

  /** Marks `record` as being terminated, with the timer that watches for its exit. */
  watchExit(record: ThreadRecord, timer: unknown): void {
    record.exitWatch = timer;
  }

  /** Ends the exit watch of `record`; returns its timer, if it had one. */
  endExitWatch(record: ThreadRecord): unknown {
    const timer = record.exitWatch;
    record.exitWatch = undefined;
    return timer;
  }

  /** Every exit watch's timer, ending the watches. */
  endExitWatches(): unknown[] {
    const timers: unknown[] = [];
    for (const record of this.#records.values()) if (record.exitWatch !== undefined) timers.push(this.endExitWatch(record));
    return timers;
  }

  /** Forgets a thread that is gone. */
  delete(threadId: number): void {
    const record = this.#records.get(threadId);
    if (record === undefined) return;
    this.endExitWatch(record);
    this.#records.delete(threadId);
  }
}
