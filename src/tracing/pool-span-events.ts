/** Pool `queued`/`started` events become events of the call's span; listens only while a recorded batch is in flight. */
import type { PoolCallEvent, PoolEventSource } from "../contracts/pool-events.js";
import { ATTR_NODE, ATTR_QUEUE_WAIT_MS, ATTR_THREAD_ID } from "./tool-span-attributes.js";

export const ATTR_POOL = "toolpool.pool";

export interface PoolEventSpan {
  /** A spread call's parts (other tools, same call id) are not the call's own events. */
  readonly toolName: string;
  addEvent(name: string, attributes: Record<string, string | number>): void;
}

export class PoolSpanEvents {
  readonly #source: PoolEventSource;
  readonly #batches = new Map<string, Map<string, PoolEventSpan>>();

  readonly #onPoolEvent = (event: PoolCallEvent): void => {
    if (event.type === "ended" || event.batchId === undefined) return;
    const span = this.#batches.get(event.batchId)?.get(event.toolCallId);
    if (span === undefined || span.toolName !== event.tool) return;
    if (event.type === "queued") {
      span.addEvent("queued", { [ATTR_POOL]: event.pool });
      return;
    }
    const attributes: Record<string, string | number> = { [ATTR_POOL]: event.pool, [ATTR_QUEUE_WAIT_MS]: event.queueWaitMs };
    if (event.threadId !== undefined) attributes[ATTR_THREAD_ID] = event.threadId;
    if (event.node !== undefined) attributes[ATTR_NODE] = event.node;
    span.addEvent("started", attributes);
  };

  constructor(source: PoolEventSource) {
    this.#source = source;
  }

  /** Filled as its calls start; listened to until {@link unwatch}. */
  watch(batchId: string): Map<string, PoolEventSpan> {
    const spans = new Map<string, PoolEventSpan>();
    this.#batches.set(batchId, spans);
    if (this.#batches.size === 1) this.#source.on(this.#onPoolEvent);
    return spans;
  }

  unwatch(batchId: string): void {
    if (this.#batches.delete(batchId) && this.#batches.size === 0) this.#source.off(this.#onPoolEvent);
  }
}
