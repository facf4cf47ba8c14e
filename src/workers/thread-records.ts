/**
 * What the pool knows of each worker thread, one record per thread: whether
 * Piscina marked it ready (and in which Piscina instance), whether it has
 * started (its boot message or a reply came), the tools it knows, and the
 * watch on its exit once the pool terminated it.
 *
 * @module
 */

/** One worker thread, as the pool sees it. */
interface ThreadRecord {
  readonly threadId: number;
  /** The Piscina instance that marked it ready (its `workerCreate` event); only such threads take calls. */
  readyIn: object | undefined;
  /** It has started: its boot message or a reply arrived. */
  isBooted: boolean;
  /** The tools it has answered a call of: its later calls of them go without the definition. */
  knownTools: Set<number> | undefined;
  /** Set while the pool terminates it: the timer that watches for its exit. */
  exitWatch: unknown;
}

export class ThreadRecords {
  readonly #records = new Map<number, ThreadRecord>();
  #terminating = 0;

  /** The record of `threadId`, created on first sight. */
  of(threadId: number): ThreadRecord {
    let record = this.#records.get(threadId);
    if (record === undefined) {
      record = { threadId, readyIn: undefined, isBooted: false, knownTools: undefined, exitWatch: undefined };
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

  /** Whether `threadId` knows tool `toolId`. */
  knows(threadId: number, toolId: number): boolean {
    return this.#records.get(threadId)?.knownTools?.has(toolId) === true;
  }

  /** `threadId` answered a call of tool `toolId`. */
  learned(threadId: number, toolId: number): void {
    const record = this.of(threadId);
    (record.knownTools ??= new Set()).add(toolId);
  }

  /** Threads being terminated whose exit has not been seen. */
  get terminating(): number {
    return this.#terminating;
  }

  isTerminating(threadId: number): boolean {
    return this.#records.get(threadId)?.exitWatch !== undefined;
  }

  /** Marks `record` as being terminated, with the timer that watches for its exit. */
  watchExit(record: ThreadRecord, timer: unknown): void {
    if (record.exitWatch === undefined) this.#terminating += 1;
    record.exitWatch = timer;
  }

  /** Ends the exit watch of `record`; returns its timer, if it had one. */
  endExitWatch(record: ThreadRecord): unknown {
    const timer = record.exitWatch;
    if (timer !== undefined) {
      this.#terminating -= 1;
      record.exitWatch = undefined;
    }
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
