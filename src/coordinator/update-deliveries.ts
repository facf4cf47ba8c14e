/**
 * A call's partial results on their way to the batch's sink, bounded per call
 * however fast the tool sends them and however slow the sink is.
 *
 * @module
 */
import type { AgentToolResult } from "../types.js";

/**
 * Update events of one call that may wait in the batch's mailbox (posted, not
 * yet delivered) before the next partials are held back, latest wins: a slow
 * event sink then holds at most this many of a call's partials, however many
 * the tool sends. Large enough that a sink keeping up never sees it.
 */
const maxQueuedUpdates = 16;

/**
 * The partial results of one call: each is handed to `deliver` as it comes
 * (an update event posted to the mailbox, or a caller's own `onUpdate`); the
 * call's execution ends only once every delivery made so far has settled.
 * While {@link maxQueuedUpdates} deliveries are still waiting, a new partial
 * is held instead, replacing any held before it, and goes out when one of
 * them is done.
 */
/** How a call's partials are handed on. */
export interface UpdateDeliveryOptions {
  /** What a partial held back is kept as (a copy, where the sender may change the object). @default the partial itself */
  hold?: (partialResult: AgentToolResult<unknown>) => AgentToolResult<unknown>;
  /**
   * Whether a delivery that throws at once throws into the sender's
   * `onUpdate`, as pi's event sink throws into an inline tool's; otherwise
   * (a worker's partial, which no tool awaits here) it fails the call's
   * deliveries, as a delivery that rejects does. @default false
   */
  throwsToSender?: boolean;
}

const ignoreFailure = (): void => {};

export class UpdateDeliveries {
  readonly #deliver: (partialResult: AgentToolResult<unknown>) => unknown;
  /** What a held partial is kept as: it goes out later, and must go out as it was sent. */
  readonly #hold: (partialResult: AgentToolResult<unknown>) => AgentToolResult<unknown>;
  /** Deliveries made so far; undefined while there are none. */
  pending: Promise<unknown>[] | undefined;
  /** Set once the tool settled, where the batch's rules drop later partials. */
  #isClosed = false;
  /** Deliveries posted and not yet settled. */
  #waiting = 0;
  #held: AgentToolResult<unknown> | undefined;
  #isHolding = false;

  /** Whether a delivery that throws at once throws into `onUpdate`'s caller (an inline tool, as pi's does). */
  readonly #throwsToSender: boolean;

  constructor(deliver: (partialResult: AgentToolResult<unknown>) => unknown, options: UpdateDeliveryOptions = {}) {
    this.#deliver = deliver;
    this.#hold = options.hold ?? ((partialResult) => partialResult);
    this.#throwsToSender = options.throwsToSender ?? false;
  }

  readonly onUpdate = (partialResult: AgentToolResult<unknown>): void => {
    if (this.#isClosed) return;
    if (this.#waiting >= maxQueuedUpdates) {
      this.#held = this.#hold(partialResult);
      this.#isHolding = true;
      return;
    }
    let delivery: Promise<unknown> | undefined;
    if (this.#throwsToSender) delivery = this.#send(partialResult);
    else {
      try {
        delivery = this.#send(partialResult);
      } catch (error) {
        delivery = Promise.reject(error);
      }
    }
    if (delivery === undefined) return;
    // A failed delivery fails the call's execution once it is awaited
    // (`settled`), not the process meanwhile as an unhandled rejection.
    delivery.catch(ignoreFailure);
    (this.pending ??= []).push(delivery);
  };

  /** Hands one partial on; the promise settles once it and any partial held meanwhile are delivered. */
  #send(partialResult: AgentToolResult<unknown>): Promise<unknown> | undefined {
    const delivery = this.#deliver(partialResult);
    if (delivery === undefined) return undefined;
    this.#waiting += 1;
    return Promise.resolve(delivery).then(this.#onDelivered, this.#onFailed);
  }

  /** A delivery that failed (an event sink that threw) still frees its place; the failure goes on as before. */
  readonly #onFailed = (error: unknown): Promise<never> => {
    const next = this.#onDelivered();
    return next === undefined ? Promise.reject(error) : next.then(() => Promise.reject(error));
  };

  readonly #onDelivered = (): Promise<unknown> | undefined => {
    this.#waiting -= 1;
    if (!this.#isHolding) return undefined;
    // Sent by the tool before it settled, so delivered even once closed.
    const held = this.#held!;
    this.#held = undefined;
    this.#isHolding = false;
    return this.#send(held);
  };

  /** Partials sent from now on are dropped. */
  close(): void {
    this.#isClosed = true;
  }

  settled(): Promise<unknown> {
    return Promise.all(this.pending ?? []);
  }
}
