/**
 * The pool's lifecycle events: a call `queued`, `started` on a thread,
 * `ended` with its outcome, each with the batch and session it belongs to;
 * and a thread `ready` or `exited`.
 * Things that want to know what the pool does (the server's live view,
 * metrics) subscribe to these instead of polling a diagnostic snapshot.
 *
 * **Nothing is paid when nobody listens.** A pool asks
 * {@link PoolEventSource.isObserved} (a size check) before it makes an event
 * object; with no listener none is ever made.
 *
 * @module
 */
import type { ErrorCode } from "../errors.js";
import type { CallTiming } from "./call-timing.js";
import type { WorkerCallOutcome } from "./pool-contract.js";

/** What every pool event says of its call. */
export interface PoolCallEventBase {
  /**
   * The pool that holds the call: `"shared"`, a named pool `"pool:<name>"`,
   * the tool name of a tool with its own pool (its `resourceLimits`), or
   * `"fleet"` for a call run by a fleet's node.
   * Set by the runtime, which knows its pools by these names.
   */
  pool: string;
  /** The call's number in its pool: `pool` and `seq` together name one call from `queued` to `ended`. */
  seq: number;
  /** The batch the call belongs to; absent for a call from `agentTools()` (no batch). */
  batchId: string | undefined;
  /** The batch's `sessionKey`, if it had one. */
  sessionKey: string | undefined;
  toolCallId: string;
  tool: string;
  /** When it happened, on the runtime's clock (milliseconds). */
  at: number;
}

/**
 * What every event of call `seq` says of it, from its request; the runtime
 * names the pool (`pool` is left empty here). For the pools that emit them.
 */
export function callEventBase(
  seq: number,
  request: { readonly batchId?: string; readonly sessionKey?: string; readonly toolCallId: string; readonly tool: { readonly name: string } },
  at: number,
): PoolCallEventBase {
  return { pool: "", seq, batchId: request.batchId, sessionKey: request.sessionKey, toolCallId: request.toolCallId, tool: request.tool.name, at };
}

/** An `ended` event's `outcome` and `code`, from the call's outcome: an error with a code is a fault. */
export function endedOutcomeOf(outcome: WorkerCallOutcome): Pick<PoolCallEndedEvent, "outcome" | "code"> {
  if (outcome.kind === "ok") return { outcome: "ok", code: undefined };
  return { outcome: outcome.code === undefined ? "error" : "fault", code: outcome.code };
}

/** The call was handed to the pool and waits for a thread (it may start in the same turn). */
export interface PoolCallQueuedEvent extends PoolCallEventBase {
  type: "queued";
}

/**
 * The call was posted to thread `threadId`: its time limit starts now. A
 * fleet's call started on node `node`, which ran it on a thread of its own
 * (`threadId` absent); its `queueWaitMs` then holds the trips to and from
 * Redis as well.
 */
export interface PoolCallStartedEvent extends PoolCallEventBase {
  type: "started";
  /** The thread; absent for a fleet's call (see `node`). */
  threadId: number | undefined;
  /** The fleet node that started it; absent for a local pool's call. */
  node?: string;
  /** Milliseconds it waited for a thread. */
  queueWaitMs: number;
}

/**
 * The call's outcome is known. `outcome` is `"ok"`, `"error"` (the tool's
 * own error result) or `"fault"` (what pi cannot have: a crash, a timeout,
 * an abort that ended the thread, the pool closed; `code` says which).
 */
export interface PoolCallEndedEvent extends PoolCallEventBase {
  type: "ended";
  outcome: "ok" | "error" | "fault";
  code: ErrorCode | undefined;
  /** The thread that ran it; absent for a call that ended before it started, and for a fleet's call. */
  threadId: number | undefined;
  /** The fleet node that ran it; absent for a local pool's call, and for a fleet's call that never started. */
  node?: string;
  timing: CallTiming;
}

/** One of the pool's lifecycle events. */
export type PoolCallEvent = PoolCallQueuedEvent | PoolCallStartedEvent | PoolCallEndedEvent;

/** Receives pool events. It must not throw: a throw is reported as a warning and the pool goes on. */
export type PoolCallListener = (event: PoolCallEvent) => void;

/**
 * A thread of the pool came or went: `"ready"`, it may take calls (it has
 * just started, or replaced a lost one); `"exited"`, it takes no more (it
 * crashed, exited, was terminated, or is going away). A thread's `exited`
 * may come before the `ended` of the call it ran.
 */
export interface PoolThreadEvent {
  type: "thread";
  change: "ready" | "exited";
  /** The pool, named as in {@link PoolCallEventBase.pool}. */
  pool: string;
  threadId: number;
  /** When it happened, on the runtime's clock (milliseconds). */
  at: number;
}

/** Receives thread events; like {@link PoolCallListener}, it must not throw. */
export type PoolThreadListener = (event: PoolThreadEvent) => void;

/** A thread that may take calls now, as {@link PoolEventSource.threads} lists it. */
export interface PoolThreadEntry {
  pool: string;
  threadId: number;
  /** The call it runs now, as its `started` event said it; absent while it is idle. */
  running?: PoolCallStartedEvent;
}

/**
 * A set of pool-event listeners: a pool's own, and the runtime's aggregate
 * over its pools (`runtime.poolEvents`).
 *
 * @example
 * ```ts
 * const onPool = (event: PoolCallEvent) => {
 *   if (event.type === "ended") console.log(event.batchId, event.toolCallId, event.outcome, event.threadId);
 * };
 * runtime.poolEvents.on(onPool);
 * // …
 * runtime.poolEvents.off(onPool);
 * ```
 */
export class PoolEventSource {
  readonly #listeners = new Set<PoolCallListener>();
  readonly #threadListeners = new Set<PoolThreadListener>();
  readonly #onObserved: ((isObserved: boolean) => void) | undefined;
  readonly #listThreads: (() => PoolThreadEntry[]) | undefined;

  /**
   * @param onObserved called when the first listener of either kind comes (`true`) and when the last goes (`false`).
   * @param listThreads the threads that may take calls now, for {@link threads}.
   */
  constructor(onObserved?: (isObserved: boolean) => void, listThreads?: () => PoolThreadEntry[]) {
    this.#onObserved = onObserved;
    this.#listThreads = listThreads;
  }

  /** Whether anyone listens, to calls or to threads: check it before making an event. */
  get isObserved(): boolean {
    return this.#listeners.size + this.#threadListeners.size !== 0;
  }

  /** Listeners of both kinds. */
  get listenerCount(): number {
    return this.#listeners.size + this.#threadListeners.size;
  }

  /**
   * The threads that may take calls now (those `ready` and not `exited`):
   * what a listener that comes late needs to know besides the events that
   * follow. Read it right after `onThread`, in the same turn.
   */
  threads(): PoolThreadEntry[] {
    return this.#listThreads?.() ?? [];
  }

  on(listener: PoolCallListener): void {
    if (this.#listeners.has(listener)) return;
    this.#listeners.add(listener);
    this.#observed(1);
  }

  off(listener: PoolCallListener): void {
    if (this.#listeners.delete(listener)) this.#observed(-1);
  }

  /** Listens to thread events (`ready`, `exited`). */
  onThread(listener: PoolThreadListener): void {
    if (this.#threadListeners.has(listener)) return;
    this.#threadListeners.add(listener);
    this.#observed(1);
  }

  offThread(listener: PoolThreadListener): void {
    if (this.#threadListeners.delete(listener)) this.#observed(-1);
  }

  /** Hands `event` to every listener; a throwing listener never reaches the pool. */
  emit(event: PoolCallEvent): void {
    for (const listener of this.#listeners) deliver(listener, event);
  }

  /** Hands `event` to every thread listener; a throwing listener never reaches the pool. */
  emitThread(event: PoolThreadEvent): void {
    for (const listener of this.#threadListeners) deliver(listener, event);
  }

  /** Tells `onObserved` when the count of listeners went from 0 to 1 or from 1 to 0. */
  #observed(change: 1 | -1): void {
    const count = this.listenerCount;
    if (change === 1 ? count === 1 : count === 0) this.#onObserved?.(change === 1);
  }
}

function deliver<E>(listener: (event: E) => void, event: E): void {
  try {
    listener(event);
  } catch (error) {
    process.emitWarning(`A toolpool pool event listener threw: ${error instanceof Error ? error.message : String(error)}`, "ToolpoolWarning");
  }
}
