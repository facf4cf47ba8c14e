import { Piscina, type TaskQueue } from "piscina";

/** A task as Piscina queues it; the call rides under Piscina's queue-options symbol. */
type QueuedTask = Parameters<TaskQueue["push"]>[0];

/** Piscina's task record: `done` settles the task's promise (part of its public `TaskInfo` type). */
interface SettleableTask {
  done(error: Error | null, result?: unknown): void;
}

/** What the queue needs to know of a waiting call. */
export interface QueuedCall {
  readonly seq: number;
  /** Calls with the same session take turns together; any value usable as a Map key. */
  readonly session: unknown;
  /** Turns of its session's share the call uses (a tool's `cost`), at least 1. */
  readonly cost: number;
  /** When the call entered the queue, by the pool's clock. */
  readonly enqueuedAt: number;
}

/** The turn-taking policy's view of the pool. */
interface CallQueueOptions {
  /** The pool's clock, for the longest wait. */
  now: () => number;
}

/** One session's waiting calls, FIFO, with its deficit-round-robin state. */
interface SessionLine {
  session: unknown;
  /** The waiting tasks are `tasks[head]` to `tasks[tail - 1]`; the array is compacted now and then, and kept when the line is reused. */
  tasks: QueuedTask[];
  head: number;
  tail: number;
  /** Turns credited and not yet used. */
  deficit: number;
  /** Whether the line has already been credited for the turn it is on. */
  hasTurn: boolean;
}

/**
 * The state the last shift changed, so that Piscina's "could not place it"
 * can undo it exactly. One record per queue, rewritten by every shift: only
 * the last shift can be undone.
 */
interface ShiftRecord {
  /** Whether the record describes the last shift; cleared once it can no longer be undone. */
  isValid: boolean;
  task: QueuedTask | undefined;
  line: SessionLine | undefined;
  /** Whose turn it was when the shift began. */
  turn: number;
  /** Every line the shift credited or passed over, and their state before it: the first `touchedCount` entries of three parallel lists, which only grow. */
  touchedCount: number;
  readonly touched: SessionLine[];
  readonly deficits: number[];
  readonly hadTurn: boolean[];
  /** Where the served line stood in the rotation if the shift emptied it, else -1. */
  removedAt: number;
}

/** Emptied lines kept for reuse: a session with one call at a time would otherwise cost a line and its array per call. */
const maxSpareLines = 64;

/**
 * The queue of calls waiting for a thread, plugged into Piscina as its
 * `taskQueue`: the pool's only queue, and where the scheduling policy lives.
 *
 * **Sessions take turns** (deficit round-robin): each session with calls
 * waiting has a FIFO line; when a thread frees up, the line whose turn it is
 * gets one turn's credit and starts its first call if that call's `cost` is
 * covered, else the turn passes on. A call of cost 3 thus uses three turns
 * of its session's share. Work-conserving (a free thread always gets a call
 * while any may start) and starvation-free (every line is credited once per
 * round). Within a session, calls start in arrival order.
 *
 * Piscina hands a task it could not place back through `unshift`; the queue
 * then undoes that shift exactly, so the refusal costs no session its turn.
 * Owning the queue also lets the pool find a waiting call again: to move it
 * to a fresh Piscina instance, or to end it before it runs.
 */
export class CallQueue implements TaskQueue {
  readonly #options: CallQueueOptions;
  /** Lines with calls waiting, by session. */
  readonly #lines = new Map<unknown, SessionLine>();
  /** The rotation of lines; `#turn` indexes the line whose turn it is. */
  readonly #rotation: SessionLine[] = [];
  #turn = 0;
  #count = 0;
  readonly #lastShift: ShiftRecord = {
    isValid: false,
    task: undefined,
    line: undefined,
    turn: 0,
    touchedCount: 0,
    touched: [],
    deficits: [],
    hadTurn: [],
    removedAt: -1,
  };
  readonly #spareLines: SessionLine[] = [];

  constructor(options: CallQueueOptions) {
    this.#options = options;
  }

  /** Waiting calls. */
  get size(): number {
    return this.#count;
  }

  /** Whether `session` has a call waiting here. */
  hasSession(session: unknown): boolean {
    return this.#lines.has(session);
  }

  /** Sessions with at least one call waiting. */
  get sessionsWaiting(): number {
    return this.#rotation.length;
  }

  /** Milliseconds the longest-waiting call has waited; 0 when none waits. */
  longestWaitMs(): number {
    let oldest = Infinity;
    for (const line of this.#rotation) oldest = Math.min(oldest, callOf(line.tasks[line.head]!).enqueuedAt);
    return oldest === Infinity ? 0 : Math.max(0, this.#options.now() - oldest);
  }

  push(task: QueuedTask): void {
    const { session } = callOf(task);
    let line = this.#lines.get(session);
    if (line === undefined) {
      line = this.#spareLines.pop();
      if (line === undefined) line = { session, tasks: [], head: 0, tail: 0, deficit: 0, hasTurn: false };
      else line.session = session;
      this.#lines.set(session, line);
      // A new session joins at the end of the round.
      this.#rotation.push(line);
    }
    line.tasks[line.tail++] = task;
    this.#count += 1;
  }

  /** Piscina's "could not place it": the last shift is undone; anything else is a new arrival. */
  unshift(task: QueuedTask): void {
    const record = this.#lastShift;
    if (!record.isValid || record.task !== task) {
      this.#invalidateShift();
      this.push(task);
      return;
    }
    record.isValid = false;
    const line = record.line!;
    if (record.removedAt !== -1) {
      this.#lines.set(line.session, line);
      this.#rotation.splice(record.removedAt, 0, line);
    }
    if (line.head > 0) line.tasks[--line.head] = task;
    else {
      line.tasks.splice(0, 0, task);
      line.tail += 1;
    }
    for (let index = 0; index < record.touchedCount; index++) {
      const touched = record.touched[index]!;
      touched.deficit = record.deficits[index]!;
      touched.hasTurn = record.hadTurn[index]!;
    }
    this.#clearRecord();
    this.#turn = record.turn;
    this.#count += 1;
  }

  shift(): QueuedTask | null {
    this.#invalidateShift();
    if (this.#count === 0) return null;
    const record = this.#lastShift;
    const { touched } = record;
    record.turn = this.#turn;
    record.touchedCount = 0;
    // Each pass over the rotation credits every line once, so the loop ends
    // within (largest cost) passes.
    for (;;) {
      const turn = this.#turn;
      const line = this.#rotation[turn]!;
      if (record.touchedCount < this.#rotation.length && !this.#isTouched(line)) {
        const index = record.touchedCount++;
        touched[index] = line;
        record.deficits[index] = line.deficit;
        record.hadTurn[index] = line.hasTurn;
      }
      if (!line.hasTurn) {
        line.deficit += 1;
        line.hasTurn = true;
      }
      const task = line.tasks[line.head]!;
      const { cost } = callOf(task);
      if (line.deficit < cost) {
        line.hasTurn = false;
        this.#turn = (turn + 1) % this.#rotation.length;
        continue;
      }
      line.deficit -= cost;
      line.tasks[line.head++] = undefined as unknown as QueuedTask;
      this.#count -= 1;
      let removedAt = -1;
      if (line.head === line.tail) {
        removedAt = turn;
        this.#removeLine(line, turn);
      } else if (line.head >= 1_024 && line.head * 2 >= line.tail) {
        line.tasks = line.tasks.slice(line.head, line.tail);
        line.tail -= line.head;
        line.head = 0;
      }
      record.isValid = true;
      record.task = task;
      record.line = line;
      record.removedAt = removedAt;
      return task;
    }
  }

  /**
   * The last shift can no longer be undone: forget it, and keep the line it
   * emptied (now out of the rotation for good) for a later session.
   */
  #invalidateShift(): void {
    const record = this.#lastShift;
    if (record.isValid && record.removedAt !== -1 && this.#spareLines.length < maxSpareLines) {
      const line = record.line!;
      // Still emptied and out of the rotation: nothing re-added it since.
      if (line.head === line.tail && this.#lines.get(line.session) !== line) {
        // Its slots were emptied as its tasks left: reusing them keeps no task alive.
        line.head = 0;
        line.tail = 0;
        line.deficit = 0;
        line.hasTurn = false;
        line.session = undefined;
        this.#spareLines.push(line);
      }
    }
    record.isValid = false;
    this.#clearRecord();
  }

  #clearRecord(): void {
    const record = this.#lastShift;
    record.task = undefined;
    record.line = undefined;
    record.touched.fill(undefined as unknown as SessionLine, 0, record.touchedCount);
    record.touchedCount = 0;
  }

  #isTouched(line: SessionLine): boolean {
    const record = this.#lastShift;
    for (let index = 0; index < record.touchedCount; index++) if (record.touched[index] === line) return true;
    return false;
  }

  remove(task: QueuedTask): void {
    this.#takeOut(callOf(task).seq, callOf(task).session);
  }

  /** Takes one waiting call's task out and settles its Piscina promise with `reason`, so it never runs. */
  take(call: QueuedCall, reason: Error): void {
    this.#takeOut(call.seq, call.session)?.done(reason);
  }

  /** Every waiting call, each session's in arrival order, sessions in turn order. */
  calls(): QueuedCall[] {
    const calls: QueuedCall[] = [];
    for (let index = 0; index < this.#rotation.length; index++) {
      const line = this.#rotation[(this.#turn + index) % this.#rotation.length]!;
      for (let position = line.head; position < line.tail; position++) calls.push(callOf(line.tasks[position]!));
    }
    return calls;
  }

  /**
   * Takes every waiting task out and settles its Piscina promise with
   * `reason`; the pool has already re-homed or ended the calls behind them.
   */
  drain(reason: Error): void {
    const tasks = this.#rotation.flatMap((line) => line.tasks.slice(line.head, line.tail));
    this.#rotation.length = 0;
    this.#lines.clear();
    this.#turn = 0;
    this.#count = 0;
    this.#lastShift.isValid = false;
    this.#clearRecord();
    for (const task of tasks) (task as unknown as SettleableTask).done(reason);
  }

  #takeOut(seq: number, session: unknown): SettleableTask | undefined {
    const line = this.#lines.get(session);
    if (line === undefined) return undefined;
    for (let position = line.head; position < line.tail; position++) {
      const task = line.tasks[position]!;
      if (callOf(task).seq !== seq) continue;
      line.tasks.splice(position, 1);
      line.tail -= 1;
      this.#count -= 1;
      if (this.#lastShift.task === task) {
        this.#lastShift.isValid = false;
        this.#clearRecord();
      }
      if (line.head === line.tail) this.#removeLine(line, this.#rotation.indexOf(line));
      return task as unknown as SettleableTask;
    }
    return undefined;
  }

  #removeLine(line: SessionLine, index: number): void {
    this.#lines.delete(line.session);
    this.#rotation.splice(index, 1);
    // The line after it moves into its place and so has the turn next.
    if (index < this.#turn) this.#turn -= 1;
    if (this.#turn >= this.#rotation.length) this.#turn = 0;
  }
}

/** The call behind a queued task, which the pool put under Piscina's queue-options symbol. */
export function callOf(task: QueuedTask): QueuedCall {
  return (task as unknown as Record<symbol, QueuedCall>)[Piscina.queueOptionsSymbol]!;
}
