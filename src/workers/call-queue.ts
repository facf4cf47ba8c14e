/** What the queue needs to know of a waiting call. */
export interface QueuedCall {
  readonly seq: number;
  /** Any Map key; calls of one session share its turns. */
  readonly session: unknown;
  /** Turns of its session's share the call uses, at least 1. */
  readonly cost: number;
  readonly enqueuedAt: number;
}

interface CallQueueOptions {
  now: () => number;
}

/** One session's waiting calls, FIFO, with its deficit-round-robin state. */
interface SessionLine<QueuedTask> {
  session: unknown;
  /** Waiting: `tasks[head]` to `tasks[tail - 1]`. */
  tasks: QueuedTask[];
  head: number;
  tail: number;
  deficit: number;
  /** Credited already for the turn it is on. */
  hasTurn: boolean;
}

/** What the last shift changed, so `unshift` can undo it exactly; only the last shift can be undone. */
interface ShiftRecord<QueuedTask> {
  isValid: boolean;
  task: QueuedTask | undefined;
  line: SessionLine<QueuedTask> | undefined;
  turn: number;
  /** Lines credited or passed over, with their prior state: the first `touchedCount` entries of three parallel lists. */
  touchedCount: number;
  readonly touched: SessionLine<QueuedTask>[];
  readonly deficits: number[];
  readonly hadTurn: boolean[];
  /** The emptied line's place in the rotation, else -1. */
  removedAt: number;
}

/** Emptied lines kept for reuse, so one-call-at-a-time sessions allocate nothing per call. */
const maxSpareLines = 64;

/**
 * The pool's only queue, and where the scheduling policy lives.
 *
 * Sessions take turns (deficit round-robin): on each free thread, the line
 * whose turn it is gets one turn's credit and starts its first call if the
 * call's `cost` is covered, else the turn passes on. Work-conserving and
 * starvation-free (every line is credited once per round); within a session,
 * arrival order.
 *
 * A call the pool could not place comes back through `unshift`, which undoes
 * that shift exactly, so the refusal costs no session its turn.
 */
export class CallQueue<QueuedTask extends QueuedCall = QueuedCall> {
  readonly #options: CallQueueOptions;
  readonly #lines = new Map<unknown, SessionLine<QueuedTask>>();
  /** `#turn` indexes the line whose turn it is. */
  readonly #rotation: SessionLine<QueuedTask>[] = [];
  #turn = 0;
  #count = 0;
  readonly #lastShift: ShiftRecord<QueuedTask> = {
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
  readonly #spareLines: SessionLine<QueuedTask>[] = [];

  constructor(options: CallQueueOptions) {
    this.#options = options;
  }

  get size(): number {
    return this.#count;
  }

  hasSession(session: unknown): boolean {
    return this.#lines.has(session);
  }

  get sessionsWaiting(): number {
    return this.#rotation.length;
  }

  /** 0 when none waits. */
  longestWaitMs(): number {
    let oldest = Infinity;
    for (const line of this.#rotation) oldest = Math.min(oldest, line.tasks[line.head]!.enqueuedAt);
    return oldest === Infinity ? 0 : Math.max(0, this.#options.now() - oldest);
  }

  push(task: QueuedTask): void {
    const { session } = task;
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

  /** Undoes the last shift if `task` is what it returned; anything else is a new arrival. */
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
    // Each pass credits every line once: the loop ends within (largest cost) passes.
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
      const { cost } = task;
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

  /** Forgets the last shift, keeping the line it emptied for reuse. */
  #invalidateShift(): void {
    const record = this.#lastShift;
    if (record.isValid && record.removedAt !== -1 && this.#spareLines.length < maxSpareLines) {
      const line = record.line!;
      // Still emptied and out of the rotation: nothing re-added it since.
      if (line.head === line.tail && this.#lines.get(line.session) !== line) {
        // Its slots were cleared as its tasks left: reuse keeps no task alive.
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
    record.touched.fill(undefined as unknown as SessionLine<QueuedTask>, 0, record.touchedCount);
    record.touchedCount = 0;
  }

  #isTouched(line: SessionLine<QueuedTask>): boolean {
    const record = this.#lastShift;
    for (let index = 0; index < record.touchedCount; index++) if (record.touched[index] === line) return true;
    return false;
  }

  /** Whether it was waiting here. */
  take(call: QueuedCall): boolean {
    return this.#takeOut(call.seq, call.session) !== undefined;
  }

  /** Each session's in arrival order, sessions in turn order. */
  calls(): QueuedTask[] {
    const calls: QueuedTask[] = [];
    for (let index = 0; index < this.#rotation.length; index++) {
      const line = this.#rotation[(this.#turn + index) % this.#rotation.length]!;
      for (let position = line.head; position < line.tail; position++) calls.push(line.tasks[position]!);
    }
    return calls;
  }

  drain(): QueuedTask[] {
    const calls = this.calls();
    this.#rotation.length = 0;
    this.#lines.clear();
    this.#turn = 0;
    this.#count = 0;
    this.#lastShift.isValid = false;
    this.#clearRecord();
    return calls;
  }

  #takeOut(seq: number, session: unknown): QueuedTask | undefined {
    const line = this.#lines.get(session);
    if (line === undefined) return undefined;
    for (let position = line.head; position < line.tail; position++) {
      const task = line.tasks[position]!;
      if (task.seq !== seq) continue;
      line.tasks.splice(position, 1);
      line.tail -= 1;
      this.#count -= 1;
      if (this.#lastShift.task === task) {
        this.#lastShift.isValid = false;
        this.#clearRecord();
      }
      if (line.head === line.tail) this.#removeLine(line, this.#rotation.indexOf(line));
      return task;
    }
    return undefined;
  }

  #removeLine(line: SessionLine<QueuedTask>, index: number): void {
    this.#lines.delete(line.session);
    this.#rotation.splice(index, 1);
    // The line after it moves into its place and so has the turn next.
    if (index < this.#turn) this.#turn -= 1;
    if (this.#turn >= this.#rotation.length) this.#turn = 0;
  }
}
