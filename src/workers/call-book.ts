/**
 * `CallBook`: what every pool, local or fleet, keeps of its calls alike.
 * @module
 */
import type { CallTiming } from "../contracts/call-timing.js";
import type { WorkerCallOutcome, WorkerCallRequest } from "../contracts/pool-contract.js";
import { callEventBase, endedOutcomeOf, PoolEventSource, type PoolThreadEntry } from "../contracts/pool-events.js";
import { createDeferred, type Deferred } from "../deferred.js";
import { AbortGroups } from "./abort-groups.js";
import { CallTable } from "./call-table.js";

/** What the book reads of a call; `seq` is unique among the calls in the book. */
export interface BookedCall {
  readonly seq: number;
  readonly request: WorkerCallRequest;
  readonly enqueuedAt: number;
  startedAt: number | undefined;
}

export interface CallBookSettings<Call> {
  now: () => number;
  /** A call of an aborted signal; at once for a signal aborted already. */
  onAbort: (call: Call) => void;
  /** Once per aborted signal, after `onAbort` for each of its calls, with the id {@link CallBook.add} returned. */
  onGroupAbort?: (groupId: number, calls: readonly Call[]) => void;
  /** For a late listener of the events: see {@link PoolEventSource.threads}. */
  listThreads?: () => PoolThreadEntry[];
}

/** The pool tells the book when a call is taken, starts and ends; it resolves the call itself. */
export class CallBook<Call extends BookedCall> {
  /** The book emits the calls' events, the pool its threads'. */
  readonly events: PoolEventSource;
  readonly #calls = new CallTable<Call>();
  readonly #groups: AbortGroups<Call>;
  readonly #now: () => number;
  #queued = 0;
  #completed = 0;
  /** Pending only while the book holds calls. */
  #drained: Deferred<void> | undefined;

  constructor(settings: CallBookSettings<Call>) {
    this.#now = settings.now;
    this.#groups = new AbortGroups<Call>(settings.onAbort, settings.onGroupAbort);
    this.events = new PoolEventSource(undefined, settings.listThreads);
  }

  get size(): number {
    return this.#calls.size;
  }

  get queued(): number {
    return this.#queued;
  }

  get running(): number {
    return this.#calls.size - this.#queued;
  }

  get completed(): number {
    return this.#completed;
  }

  get abortGroups(): number {
    return this.#groups.size;
  }

  get(seq: number): Call | undefined {
    return this.#calls.get(seq);
  }

  /** In no particular order. */
  values(): IterableIterator<Call> {
    return this.#calls.values();
  }

  /** In the order they were taken. */
  inOrder(): Call[] {
    return this.#calls.inOrder();
  }

  /** Takes `call`, `queued`; the id of its abort group, 0 with no signal or one aborted already. */
  add(call: Call): number {
    this.#calls.add(call);
    this.#queued += 1;
    const { signal } = call.request;
    const groupId = signal === undefined ? 0 : this.#groups.add(signal, call);
    if (this.events.isObserved) this.events.emit({ type: "queued", ...callEventBase(call.seq, call.request, call.enqueuedAt) });
    return groupId;
  }

  /** `call` is `started` now, on thread `threadId` or fleet node `node`; once per call. */
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

  /** `call`'s timing, ended now, for the pool to add where it ran. */
  timing(call: Call): CallTiming {
    const timing: CallTiming = { submittedAt: call.enqueuedAt, endedAt: this.#now() };
    if (call.startedAt !== undefined) timing.startedAt = call.startedAt;
    return timing;
  }

  /** `call` is `ended`, out of the book and its group; false for a call not in the book. */
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

  /** Resolves once the book is empty. */
  drained(): Promise<void> {
    if (this.#calls.size === 0) return Promise.resolve();
    return (this.#drained ??= createDeferred()).promise;
  }
}
