/**
 * `CallBook`: the bookkeeping every pool keeps of its calls the same way,
 * wherever they run (a local thread, a fleet node).
 *
 * @module
 */
import type { CallTiming } from "../contracts/call-timing.js";
import type { WorkerCallOutcome, WorkerCallRequest } from "../contracts/pool-contract.js";
import { callEventBase, endedOutcomeOf, PoolEventSource, type PoolThreadEntry } from "../contracts/pool-events.js";
import { createDeferred, type Deferred } from "../deferred.js";
import { AbortGroups } from "./abort-groups.js";
import { CallTable } from "./call-table.js";

/** What the book reads of a call. */
export interface BookedCall {
  /** Its number in the pool: no two calls in the book share one. */
  readonly seq: number;
  readonly request: WorkerCallRequest;
  /** When the pool took it, on the pool's clock. */
  readonly enqueuedAt: number;
  /** When it started; set by {@link CallBook.start}. */
  startedAt: number | undefined;
}

/** How a pool's book reaches back into the pool. */
export interface CallBookSettings<Call> {
  /** The pool's clock. */
  now: () => number;
  /** A call of an aborted signal (told at once when the signal has aborted already). */
  onAbort: (call: Call) => void;
  /** Once per aborted signal, after `onAbort` for each of its calls: the id {@link CallBook.add} returned for them. */
  onGroupAbort?: (groupId: number, calls: readonly Call[]) => void;
  /** The threads that may take calls now, for a late listener of the events (a local pool's). */
  listThreads?: () => PoolThreadEntry[];
}

/**
 * The calls a pool has taken and not yet ended, by number, with what goes
 * with them: the signals that abort a batch's calls together, the counts
 * (queued, running, completed), the pool's call events (`queued`,
 * `started`, `ended`, made only while someone listens), and the wait for
 * the last call to end when the pool closes.
 *
 * The pool keeps the rest (threads, queue, timers; Redis jobs) and tells
 * the book when a call is taken, starts and ends; it resolves the call's
 * promise itself.
 *
 * @example
 * ```ts
 * const book = new CallBook<MyCall>({ now: () => clock.now(), onAbort: (call) => stop(call) });
 * book.add(call); // `queued`
 * book.start(call, threadId); // `started`
 * book.end(call, outcome, book.timing(call)); // `ended`
 * await book.drained();
 * ```
 */
export class CallBook<Call extends BookedCall> {
  /** The pool's call events; thread events are the pool's own to emit here. */
  readonly events: PoolEventSource;
  readonly #calls = new CallTable<Call>();
  readonly #groups: AbortGroups<Call>;
  readonly #now: () => number;
  /** Calls in the book not yet started. */
  #queued = 0;
  #completed = 0;
  /** Pending while someone waits for the book to empty. */
  #drained: Deferred<void> | undefined;

  constructor(settings: CallBookSettings<Call>) {
    this.#now = settings.now;
    this.#groups = new AbortGroups<Call>(settings.onAbort, settings.onGroupAbort);
    this.events = new PoolEventSource(undefined, settings.listThreads);
  }

  /** Calls taken and not yet ended. */
  get size(): number {
    return this.#calls.size;
  }

  /** Calls taken and not yet started. */
  get queued(): number {
    return this.#queued;
  }

  /** Calls started and not yet ended. */
  get running(): number {
    return this.#calls.size - this.#queued;
  }

  /** Calls ended since the pool began. */
  get completed(): number {
    return this.#completed;
  }

  /** Signals listened to now. */
  get abortGroups(): number {
    return this.#groups.size;
  }

  get(seq: number): Call | undefined {
    return this.#calls.get(seq);
  }

  /** Every call in the book, in no particular order. */
  values(): IterableIterator<Call> {
    return this.#calls.values();
  }

  /** Every call in the book, in the order they were taken. */
  inOrder(): Call[] {
    return this.#calls.inOrder();
  }

  /**
   * Takes `call`, not yet started: it listens to its request's signal, and
   * is `queued`. Returns the id of its abort group (0 without a signal, or
   * with one aborted already: then `onAbort` has been told of it).
   */
  add(call: Call): number {
    this.#calls.add(call);
    this.#queued += 1;
    const { signal } = call.request;
    const groupId = signal === undefined ? 0 : this.#groups.add(signal, call);
    if (this.events.isObserved) this.events.emit({ type: "queued", ...callEventBase(call.seq, call.request, call.enqueuedAt) });
    return groupId;
  }

  /** `call` started now, on thread `threadId` or on fleet node `node`: it is `started`. Once per call. */
  start(call: Call, threadId: number | undefined, node?: string): void {
    if (call.startedAt !== undefined) return;
    const startedAt = this.#now();
    call.startedAt = startedAt;
    this.#queued -= 1;
    if (!this.events.isObserved) return;
    const queueWaitMs = startedAt - call.enqueuedAt;
    const base = callEventBase(call.seq, call.request, startedAt);
    this.events.emit(
      node === undefined ? { type: "started", ...base, threadId, queueWaitMs } : { type: "started", ...base, threadId, node, queueWaitMs },
    );
  }

  /** When `call` waited and ran, ended now: the pool adds where it ran. */
  timing(call: Call): CallTiming {
    const timing: CallTiming = { submittedAt: call.enqueuedAt, endedAt: this.#now() };
    if (call.startedAt !== undefined) timing.startedAt = call.startedAt;
    return timing;
  }

  /**
   * `call` ended with `outcome`, timed by `timing` (from {@link timing}):
   * out of the book and its signal's group, and `ended`. Returns false,
   * doing nothing, for a call not in the book (ended already).
   */
  end(call: Call, outcome: WorkerCallOutcome, timing: CallTiming): boolean {
    if (this.#calls.get(call.seq) !== call) return false;
    this.#calls.delete(call.seq);
    if (call.startedAt === undefined) this.#queued -= 1;
    this.#completed += 1;
    const { signal } = call.request;
    if (signal !== undefined) this.#groups.delete(signal, call);
    if (this.#calls.size === 0 && this.#drained !== undefined) {
      this.#drained.resolve();
      this.#drained = undefined;
    }
    if (this.events.isObserved) {
      const base = callEventBase(call.seq, call.request, timing.endedAt);
      const { threadId, node } = timing;
      this.events.emit(
        node === undefined
          ? { type: "ended", ...base, ...endedOutcomeOf(outcome), threadId, timing }
          : { type: "ended", ...base, ...endedOutcomeOf(outcome), threadId, node, timing },
      );
    }
    return true;
  }

  /** Resolves once the book is empty: at once if it is. */
  drained(): Promise<void> {
    if (this.#calls.size === 0) return Promise.resolve();
    return (this.#drained ??= createDeferred()).promise;
  }
}
