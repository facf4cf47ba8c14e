import { EventEmitter } from "eventemitter3";
import { describe, expect, it } from "vitest";

import type { RuntimeEvents } from "toolpool";

import { EventBus } from "./support/internals.js";

describe("EventBus", () => {
  it("knows whether anyone listens, through every way of adding and removing a listener", () => {
    const emitter = new EventEmitter<RuntimeEvents>();
    const bus = new EventBus(emitter);
    const listener = () => {};
    expect(bus.hasBatchListeners()).toBe(false);
    expect(bus.hasListeners("batch_end")).toBe(false);

    // A listener of another event: the runtime has listeners, but none of a batch's events.
    emitter.on("batch_end", listener);
    expect(bus.hasListeners("batch_end")).toBe(true);
    expect(bus.hasBatchListeners()).toBe(false);
    emitter.on("tool_execution_end", listener);
    expect(bus.hasBatchListeners()).toBe(true);
    emitter.off("tool_execution_end", listener);
    expect(bus.hasBatchListeners()).toBe(false);
    emitter.off("batch_end", listener);
    expect(bus.hasListeners("batch_end")).toBe(false);

    // once: gone after it fired.
    emitter.once("message_end", listener);
    expect(bus.hasBatchListeners()).toBe(true);
    bus.publish("message_end", {});
    expect(bus.hasBatchListeners()).toBe(false);

    // removeAllListeners, of one event and of all.
    emitter.on("tool_execution_start", listener);
    emitter.on("tool_execution_update", listener);
    emitter.removeAllListeners("tool_execution_start");
    expect(bus.hasBatchListeners()).toBe(true);
    emitter.removeAllListeners();
    expect(bus.hasBatchListeners()).toBe(false);
    expect(bus.hasListeners("tool_execution_update")).toBe(false);
  });

  it("publishes to the listeners of a type only", () => {
    const emitter = new EventEmitter<RuntimeEvents>();
    const bus = new EventBus(emitter);
    const heard: string[] = [];
    emitter.on("batch_start", () => heard.push("batch_start"));
    bus.publish("batch_end", {});
    bus.publish("batch_start", {});
    expect(heard).toEqual(["batch_start"]);
  });
});
