import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

import { describe, expect } from "vitest";

import { createRuntime, type AfterToolCallHook, type BeforeToolCallHook } from "toolpool";

import { runPiBatch } from "./support/pi-oracle.js";
import { assistantMessageOf, scriptedTools, type Flavor } from "./support/differential.js";
import { open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest();

/** A hook that takes several event-loop turns and counts how many hooks run at once. */
function overlapProbe() {
  let active = 0;
  let maxActive = 0;
  const enter = async () => {
    active += 1;
    maxActive = Math.max(maxActive, active);
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    active -= 1;
    return undefined;
  };
  return {
    beforeToolCall: enter as BeforeToolCallHook,
    afterToolCall: enter as AfterToolCallHook,
    get maxActive() {
      return maxActive;
    },
  };
}

const calls = ["c1", "c2", "c3", "c4"].map((id) => ({ id, name: "work", arguments: { text: id } }));

describe("BatchCoordinator", () => {
  it("lets pi run afterToolCall hooks of a parallel batch at once (the baseline)", async () => {
    const probe = overlapProbe();
    await runPiBatch({
      tools: scriptedTools("inline") as never,
      assistantMessage: assistantMessageOf(calls),
      toolExecution: "parallel",
      beforeToolCall: probe.beforeToolCall as never,
      afterToolCall: probe.afterToolCall as never,
      systemPrompt: "",
      history: [{ role: "user", content: "go", timestamp: 1 }],
      emit: () => {},
    });
    expect(probe.maxActive).toBe(calls.length);
  });

  for (const flavor of ["inline", "worker"] satisfies Flavor[]) {
    it(`never runs two hooks of a parallel batch at once (${flavor} tools)`, async () => {
      const probe = overlapProbe();
      const runtime = open({
        tools: scriptedTools(flavor),
        beforeToolCall: probe.beforeToolCall,
        afterToolCall: probe.afterToolCall,
        pool: { maxThreads: 2 },
      });
      const { messages } = await runtime.executeToolCalls(assistantMessageOf(calls));
      expect(messages.map((message) => message.isError)).toEqual([false, false, false, false]);
      expect(probe.maxActive).toBe(1);
    });
  }

  it("keeps slow async emits of one batch from overlapping", async () => {
    let active = 0;
    let maxActive = 0;
    const runtime = open({ tools: scriptedTools("inline") });
    const types: string[] = [];
    await runtime.executeToolCalls(assistantMessageOf(calls), {
      emit: async (event) => {
        active += 1;
        maxActive = Math.max(maxActive, active);
        types.push(event.type);
        await new Promise((resolve) => setImmediate(resolve));
        active -= 1;
      },
    });
    expect(maxActive).toBe(1);
    expect(types.filter((type) => type === "tool_execution_end")).toHaveLength(calls.length);
  });

  it("publishes every event on the runtime with meta.batchId, and survives a throwing listener", async () => {
    const runtime = open({ tools: scriptedTools("worker"), pool: { maxThreads: 2 } });
    const seen: string[] = [];
    const listenerErrors: unknown[] = [];
    runtime.on("tool_execution_end", () => {
      throw new Error("listener bug");
    });
    runtime.on("tool_execution_end", (event, meta) => seen.push(`${meta.batchId}:${event.toolCallId}`));
    runtime.on("listener_error", (error) => listenerErrors.push(error));
    runtime.on("batch_end", (event, meta) => seen.push(`${meta.batchId}:end:${event.messages.length}`));
    await runtime.executeToolCalls(assistantMessageOf(calls.slice(0, 1)));
    await runtime.executeToolCalls(assistantMessageOf(calls.slice(1, 2)));
    // eventemitter3 stops at the throwing listener; the batch goes on.
    expect(seen).toEqual(["b1:end:1", "b2:end:1"]);
    expect(listenerErrors).toHaveLength(2);
  });

  it("hands pi AgentTools from agentTools(): pi's own loop drives the pool to the same results", async () => {
    const runtime = open({ tools: scriptedTools("worker"), pool: { maxThreads: 2 } });
    const message = assistantMessageOf([
      { id: "a", name: "work", arguments: { count: "3" } },
      { id: "b", name: "work", arguments: { fail: "tool failure" } },
      { id: "c", name: "legacy", arguments: { q: "shim" } },
    ]);
    const viaPi = await runPiBatch({
      tools: runtime.agentTools(),
      assistantMessage: message,
      toolExecution: "parallel",
      systemPrompt: "",
      history: [{ role: "user", content: "go", timestamp: 1 }],
      emit: () => {},
    });
    const viaToolpool = await runtime.executeToolCalls(message);
    const strip = (messages: typeof viaPi.messages) => messages.map(({ timestamp: _, ...rest }) => rest);
    expect(strip(viaPi.messages)).toEqual(strip(viaToolpool.messages));
    expect(viaToolpool.messages.map((m) => m.isError)).toEqual([false, true, false]);
  });

  it("rejects a batch after close() with TP_ERR_CLOSED, and bad input with TP_ERR_INVALID_BATCH", async () => {
    const runtime = createRuntime({ tools: scriptedTools("inline") });
    await expect(runtime.executeToolCalls({ role: "assistant" } as never)).rejects.toMatchObject({
      code: "TP_ERR_INVALID_BATCH",
      message: expect.stringContaining("content"),
    });
    await expect(runtime.executeToolCalls(assistantMessageOf(calls), { emit: "nope" as never })).rejects.toMatchObject({
      code: "TP_ERR_INVALID_BATCH",
      message: expect.stringContaining("`emit`"),
    });
    await runtime.close();
    await expect(runtime.executeToolCalls(assistantMessageOf(calls))).rejects.toMatchObject({ code: "TP_ERR_CLOSED" });
  });

  it("holds no memory per finished batch (50,000 inline calls)", async () => {
    setFlagsFromString("--expose-gc");
    const collectGarbage = runInNewContext("gc") as () => void;
    const runtime = open({ tools: scriptedTools("inline") });
    const message = assistantMessageOf([{ id: "c", name: "work", arguments: {} }]);
    const heapAfter = async (batches: number) => {
      for (let i = 0; i < batches; i++) await runtime.executeToolCalls(message);
      collectGarbage();
      return process.memoryUsage().heapUsed;
    };
    const before = await heapAfter(5_000);
    const after = await heapAfter(50_000);
    // A leak of even 200 bytes a call would show as 10 MB here.
    expect(after - before).toBeLessThan(5 * 1024 * 1024);
  });

  it("lets running batches finish when closed", async () => {
    const runtime = createRuntime({ tools: scriptedTools("worker"), pool: { maxThreads: 2 } });
    const running = runtime.executeToolCalls(assistantMessageOf(calls));
    const closed = runtime.close();
    const { messages } = await running;
    await closed;
    expect(messages.map((m) => m.isError)).toEqual([false, false, false, false]);
    expect(runtime.isClosed).toBe(true);
  });
});
