/**
 * The runtime's events on their way to its listeners: a throwing listener is
 * reported (`listener_error`, or a process warning), never propagated into
 * the batch that published the event.
 *
 * @module
 */
import type { EventEmitter } from "eventemitter3";

import { describeValue } from "../errors.js";
import type { EventMeta, RuntimeEvents } from "../events.js";
import type { CallDurations } from "../tracing/call-durations.js";

/** The events a batch's pipeline publishes, for {@link EventBus.hasBatchListeners}. */
const batchEventTypes = ["tool_execution_start", "tool_execution_update", "tool_execution_end", "message_start", "message_end"] as const;

/** Publishes to the listeners of one emitter (the runtime itself). */
export class EventBus {
  readonly #emitter: EventEmitter<RuntimeEvents>;

  constructor(emitter: EventEmitter<RuntimeEvents>) {
    this.#emitter = emitter;
  }

  /**
   * Whether the emitter has no listener of any event: a runtime nobody
   * listens to, the common case, asked several times a call. eventemitter3
   * counts the event names that have listeners (`_eventsCount`, kept by
   * every way of adding and removing one); where it has no such count, the
   * answer is no and each type is looked up.
   */
  #hasNone(): boolean {
    return (this.#emitter as unknown as { _eventsCount?: unknown })._eventsCount === 0;
  }

  /** Whether anyone listens to `type`: an event nobody hears is not made. */
  hasListeners(type: keyof RuntimeEvents): boolean {
    return !this.#hasNone() && this.#emitter.listenerCount(type) > 0;
  }

  /** Whether anyone listens to the events of a batch's calls and messages. */
  hasBatchListeners(): boolean {
    return !this.#hasNone() && batchEventTypes.some((type) => this.#emitter.listenerCount(type) > 0);
  }

  /** Emits to the listeners of `type`; a throwing listener is reported, never propagated. */
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

/** The `meta` of a batch's events: its id, its session key if it has one, and a call's durations on its end event. */
export function batchMeta(batchId: string, sessionKey: string | undefined, durations?: CallDurations): EventMeta {
  const meta: EventMeta = durations === undefined ? { batchId } : { batchId, ...durations };
  if (sessionKey !== undefined) meta.sessionKey = sessionKey;
  return meta;
}
