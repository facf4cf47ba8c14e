import { Piscina, type TaskQueue } from "piscina";

/** A task as Piscina queues it; the call's sequence number rides under Piscina's queue-options symbol. */
type QueuedTask = Parameters<TaskQueue["push"]>[0];

/** Piscina's task record: `done` settles the task's promise (part of its public `TaskInfo` type). */
interface SettleableTask {
  done(error: Error | null, result?: unknown): void;
}

/**
 * The queue of calls waiting for a thread, plugged into Piscina as its
 * `taskQueue`, so the pool's own queue is the only one: there is no second
 * queue in front of Piscina to keep in step with it.
 *
 * Owning the queue lets the pool find a waiting call by its sequence number,
 * take it back out (to move it to a fresh Piscina instance after a worker
 * loss Piscina will not repair, or to end it at once), and keep its order:
 * Piscina hands a task it could not place back through `unshift`, which puts
 * it in front again rather than behind later arrivals.
 */
export class CallQueue implements TaskQueue {
  /** Waiting tasks by sequence number, in arrival order (a Map keeps insertion order). */
  readonly #tasks = new Map<number, QueuedTask>();
  /** Tasks handed back by Piscina after a shift; they go out first, last returned first. */
  readonly #returned: QueuedTask[] = [];

  get size(): number {
    return this.#tasks.size + this.#returned.length;
  }

  push(task: QueuedTask): void {
    this.#tasks.set(seqOf(task), task);
  }

  /** Piscina's "could not place it": back to the front, so order is kept. */
  unshift(task: QueuedTask): void {
    this.#returned.push(task);
  }

  shift(): QueuedTask | null {
    const returned = this.#returned.pop();
    if (returned !== undefined) return returned;
    for (const [seq, task] of this.#tasks) {
      this.#tasks.delete(seq);
      return task;
    }
    return null;
  }

  remove(task: QueuedTask): void {
    if (!this.#tasks.delete(seqOf(task))) {
      const index = this.#returned.indexOf(task);
      if (index !== -1) this.#returned.splice(index, 1);
    }
  }

  /** Takes one waiting call's task out and settles its Piscina promise with `reason`, so it never runs. */
  take(seq: number, reason: Error): void {
    let task = this.#tasks.get(seq);
    if (task !== undefined) this.#tasks.delete(seq);
    else {
      const index = this.#returned.findIndex((candidate) => seqOf(candidate) === seq);
      if (index === -1) return;
      task = this.#returned.splice(index, 1)[0]!;
    }
    (task as unknown as SettleableTask).done(reason);
  }

  /** The sequence numbers of every waiting call, front first. */
  seqs(): number[] {
    return [...this.#returned].reverse().map(seqOf).concat([...this.#tasks.keys()]);
  }

  /**
   * Takes every waiting task out and settles its Piscina promise with
   * `reason`; the pool has already re-homed or ended the calls behind them.
   */
  drain(reason: Error): void {
    const tasks = [...this.#returned, ...this.#tasks.values()];
    this.#returned.length = 0;
    this.#tasks.clear();
    for (const task of tasks) (task as unknown as SettleableTask).done(reason);
  }
}

/** The call's sequence number, which the pool put under Piscina's queue-options symbol. */
export function seqOf(task: QueuedTask): number {
  return (task as unknown as Record<symbol, number>)[Piscina.queueOptionsSymbol]!;
}
