/** Runtime events to their listeners: a throwing listener is reported, never propagated into the batch. */
import type { EventEmitter } from "eventemitter3";

import { describeValue } from "../errors.js";
import type { EventMeta, RuntimeEvents } from "../events.js";
import type { CallDurations } from "../tracing/call-durations.js";

const batchEventTypes = ["tool_execution_start", "tool_execution_update", "tool_execution_end", "message_start", "message_end"] as const;

export class EventBus {
  readonly #emitter: EventEmitter<RuntimeEvents>;

  constructor(emitter: EventEmitter<RuntimeEvents>) {
    this.#emitter = emitter;
  }

  /** The common case, asked several times a call: eventemitter3's `_eventsCount`; where absent, each type is looked up. */
  #hasNone(): boolean {
    return (this.#emitter as unknown as { _eventsCount?: unknown })._eventsCount === 0;
  }

  /** An event nobody hears is not made. */
  hasListeners(type: keyof RuntimeEvents): boolean {
    return !this.#hasNone() && this.#emitter.listenerCount(type) > 0;
  }

  hasBatchListeners(): boolean {
    return !this.#hasNone() && batchEventTypes.some((type) => this.#emitter.listenerCount(type) > 0);
  }

  publish(type: keyof RuntimeEvents, ...args: unknown[]): void {
    if (this.#emitter.listenerCount(type) === 0) return;
    try {
      (this.#emitter.emit as (type: string, ...args: unknown[]) => boolean).call(this.#emitter, type, ...args);
    } catch (error) {
      if (type === "listener_error" || this.#emitter.listenerCount("listener_error") === 0) {
        process.emitWarning(`A toolpool "${type}" listener threw: ${describeValue(error)}`, "ToolpoolWarning");
        return;
      }
      this.publish("listener_error", error, type);
    }
  }
}

export function batchMeta(batchId: string, sessionKey: string | undefined, durations?: CallDurations): EventMeta {
  const meta: EventMeta = durations === undefined ? { batchId } : { batchId, ...durations };
  if (sessionKey !== undefined) meta.sessionKey = sessionKey;
  return meta;
}
