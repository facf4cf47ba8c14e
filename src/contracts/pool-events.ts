/**
 * The pool's lifecycle events: a call `queued`, `started` on a thread,
 * `ended` with its outcome; each with the batch and session it belongs to.
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

/** What every pool event says of its call. */
export interface PoolCallEventBase {
  /**
   * The pool that holds the call: `"shared"`, a named pool `"pool:<name>"`,
   * or the tool name of a tool with its own pool (its `resourceLimits`).
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

/** The call was handed to the pool and waits for a thread (it may start in the same turn). */
export interface PoolCallQueuedEvent extends PoolCallEventBase {
  type: "queued";
}

/** The call was posted to thread `threadId`: its time limit starts now. */
export interface PoolCallStartedEvent extends PoolCallEventBase {
  type: "started";
  threadId: number;
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
  /** The thread that ran it; absent for a call that ended before it started. */
  threadId: number | undefined;
  timing: CallTiming;
}

/** One of the pool's lifecycle events. */
export type PoolCallEvent = PoolCallQueuedEvent | PoolCallStartedEvent | PoolCallEndedEvent;

/** Receives pool events. It must not throw: a throw is reported as a warning and the pool goes on. */
export type PoolCallListener = (event: PoolCallEvent) => void;

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
  readonly #onObserved: ((isObserved: boolean) => void) | undefined;

  /** @param onObserved called when the first listener comes (`true`) and when the last goes (`false`). */
  constructor(onObserved?: (isObserved: boolean) => void) {
    this.#onObserved = onObserved;
  }

  /** Whether anyone listens: check it before making an event. */
  get isObserved(): boolean {
    return this.#listeners.size !== 0;
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }

  on(listener: PoolCallListener): void {
    if (this.#listeners.has(listener)) return;
    this.#listeners.add(listener);
    if (this.#listeners.size === 1) this.#onObserved?.(true);
  }

  off(listener: PoolCallListener): void {
    if (!this.#listeners.delete(listener)) return;
    if (this.#listeners.size === 0) this.#onObserved?.(false);
  }

  /** Hands `event` to every listener; a throwing listener never reaches the pool. */
  emit(event: PoolCallEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (error) {
        process.emitWarning(`A toolpool pool event listener threw: ${error instanceof Error ? error.message : String(error)}`, "ToolpoolWarning");
      }
    }
  }
}
