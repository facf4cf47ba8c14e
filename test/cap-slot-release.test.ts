import { createRuntime, type AgentTool, type BatchEvent, type Runtime } from "toolpool";
import { afterEach, describe, expect, it } from "vitest";

import { scriptedTools } from "./support/differential.js";
import { batch } from "./support/helpers.js";
import { runPiBatch } from "./support/pi-oracle.js";

let runtime: Runtime | undefined;
afterEach(async () => {
  // Bounded: a leaked cap slot also keeps close() waiting for the batch stuck behind it.
  await within(runtime?.close({ force: true }) ?? Promise.resolve(), 2_000);
  runtime = undefined;
});

/** An inline tool that sends one partial, then returns. */
const chatty: AgentTool = {
  name: "chatty",
  label: "chatty",
  description: "sends one partial",
  parameters: { type: "object", properties: {} },
  execute: async (_id, _args, _signal, onUpdate) => {
    onUpdate?.({ content: [{ type: "text", text: "partial" }], details: {} });
    return { content: [{ type: "text", text: "done" }], details: {} };
  },
};

function within<T>(promise: Promise<T>, ms: number): Promise<T | "timed out"> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timed out">((resolve) => (timer = setTimeout(() => resolve("timed out"), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The sink's delivery of an update fails asynchronously. */
const rejectingUpdates = (event: BatchEvent): Promise<void> | undefined =>
  event.type === "tool_execution_update" ? Promise.reject(new Error("sink down")) : undefined;

describe("a capped call whose update delivery fails", () => {
  it("rejects the batch as pi's loop does, and gives its cap slot back", async () => {
    // pi's own loop: the rejected delivery rejects the batch.
    const pi = runPiBatch({
      tools: [chatty],
      assistantMessage: { ...batch(["c1", "chatty"]), stopReason: "toolUse", timestamp: 2 } as never,
      toolExecution: "parallel",
      systemPrompt: "test",
      history: [{ role: "user", content: "go", timestamp: 1 }],
      emit: rejectingUpdates,
      pi: "0.73",
    });
    await expect(pi).rejects.toThrow("sink down");

    runtime = createRuntime({ tools: [chatty], maxConcurrency: { chatty: 1 } });
    await expect(runtime.executeToolCalls(batch(["c1", "chatty"]), { emit: rejectingUpdates })).rejects.toThrow("sink down");
    // The next batch's call of the same capped tool must get the slot.
    const next = await within(runtime.executeToolCalls(batch(["c2", "chatty"])), 5_000);
    expect(next).not.toBe("timed out");
  });

  it("gives its cap slot back when runToolCall's onUpdate rejects", async () => {
    runtime = createRuntime({ tools: [chatty], maxConcurrency: { chatty: 1 } });
    const onUpdate = () => Promise.reject(new Error("listener down"));
    await runtime.runToolCall({ type: "toolCall", id: "r1", name: "chatty", arguments: {} }, { onUpdate: onUpdate as never }).catch(() => undefined);
    const next = await within(runtime.runToolCall({ type: "toolCall", id: "r2", name: "chatty", arguments: {} }), 5_000);
    expect(next).not.toBe("timed out");
  });

  it("lets close({ force: true }) settle a batch waiting behind the slot", async () => {
    runtime = createRuntime({ tools: [chatty], maxConcurrency: { chatty: 1 } });
    await expect(runtime.executeToolCalls(batch(["c1", "chatty"]), { emit: rejectingUpdates })).rejects.toThrow("sink down");
    const waiting = runtime.executeToolCalls(batch(["c2", "chatty"])).catch((error: unknown) => error);
    const closed = await within(runtime.close({ force: true }), 5_000);
    runtime = undefined;
    expect(closed).not.toBe("timed out");
    expect(await within(waiting, 1_000)).not.toBe("timed out");
  });

  it("gives its cap slot back when the sink rejects a worker tool's update", async () => {
    runtime = createRuntime({ tools: scriptedTools("worker"), maxConcurrency: { work: 1 }, pool: { maxThreads: 1 } });
    await expect(runtime.executeToolCalls(batch(["w1", "work", { updates: ["a"] }]), { emit: rejectingUpdates })).rejects.toThrow("sink down");
    const next = await within(runtime.executeToolCalls(batch(["w2", "work", {}])), 10_000);
    expect(next).not.toBe("timed out");
  });
});
