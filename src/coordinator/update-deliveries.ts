/**
 * A call's partial results on their way to the sink, bounded per call however
 * fast the tool sends and however slow the sink is.
 *
 * @module
 */
import type { AgentToolResult } from "../types.js";

/** Deliveries of one call that may wait before the next partial is held back (latest wins); a sink keeping up never meets it. */
const maxQueuedUpdates = 16;

/** How a call's partials are handed on. */
export interface UpdateDeliveryOptions {
  /** What a held partial is kept as (a copy, where the sender may change it). @default the partial itself */
  hold?: (partialResult: AgentToolResult<unknown>) => AgentToolResult<unknown>;
  /** Whether a delivery's throw goes to the sender's `onUpdate` (pi's inline tools), else fails the deliveries. @default false */
  throwsToSender?: boolean;
}

const ignoreFailure = (): void => {};

/** The partials of one call; its execution ends once every delivery made so far has settled. */
export class UpdateDeliveries {
  readonly #deliver: (partialResult: AgentToolResult<unknown>) => unknown;
  readonly #hold: (partialResult: AgentToolResult<unknown>) => AgentToolResult<unknown>;
  /** Deliveries made so far; undefined while none. */
  pending: Promise<unknown>[] | undefined;
  #isClosed = false;
  #waiting = 0;
  #held: AgentToolResult<unknown> | undefined;
  #isHolding = false;

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
    // It fails the call once awaited (`settled`), never as an unhandled rejection.
    delivery.catch(ignoreFailure);
    (this.pending ??= []).push(delivery);
  };

  /** Settles once the partial and any held meanwhile are delivered. */
  #send(partialResult: AgentToolResult<unknown>): Promise<unknown> | undefined {
    const delivery = this.#deliver(partialResult);
    if (delivery === undefined) return undefined;
    this.#waiting += 1;
    return Promise.resolve(delivery).then(this.#onDelivered, this.#onFailed);
  }

  readonly #onFailed = (error: unknown): Promise<never> => {
    const next = this.#onDelivered();
    return next === undefined ? Promise.reject(error) : next.then(() => Promise.reject(error));
  };

  readonly #onDelivered = (): Promise<unknown> | undefined => {
    this.#waiting -= 1;
    if (!this.#isHolding) return undefined;
    // Sent before the tool settled: delivered even once closed.
    const held = this.#held!;
    this.#held = undefined;
    this.#isHolding = false;
    return this.#send(held);
  };

  close(): void {
    this.#isClosed = true;
  }

  settled(): Promise<unknown> {
    return Promise.all(this.pending ?? []);
  }
}
