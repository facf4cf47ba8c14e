import { describe, expect } from "vitest";

import { workerTool, type AssistantMessage, type PoolCallEvent, type PoolThreadEvent } from "toolpool";
import { open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest();

// Real threads, the built package: the events a runtime's pools emit for
// batches of several calls, a timeout and a crash among them.

const behaviours = new URL("./fixtures/tools/behaviours.mjs", import.meta.url);
const faults = new URL("./fixtures/tools/faults.mjs", import.meta.url);
const anyArgs = { type: "object" };
const quick = workerTool({ name: "quick", description: "quick", parameters: anyArgs, module: behaviours, exportName: "quick" });
const spin = workerTool({ name: "spin", description: "spin", parameters: anyArgs, module: behaviours, exportName: "spinForever", timeoutMs: 300 });
const fault = workerTool({ name: "fault", description: "fault", parameters: anyArgs, module: faults });

const batch = (...calls: [id: string, name: string, args?: Record<string, unknown>][]): AssistantMessage => ({
  role: "assistant",
  content: calls.map(([id, name, args = {}]) => ({ type: "toolCall", id, name, arguments: args })),
});

describe("runtime.poolEvents", () => {
  it("emits queued, started and ended for every call, in order, with its batch, session, thread and outcome", async () => {
    const runtime = open({ tools: [quick, spin, fault], pool: { maxThreads: 2 } });
    const events: PoolCallEvent[] = [];
    runtime.poolEvents.on((event) => events.push(event));
    const batchIds = new Map<string, string>();
    runtime.on("batch_start", (_event, meta) => batchIds.set(meta.sessionKey ?? "", meta.batchId));
    // Two batches at once, with the same call ids: only their batch tells them apart.
    await Promise.all([
      runtime.executeToolCalls(batch(["a", "quick"], ["b", "spin"], ["c", "fault", { fault: "exit", code: 3 }], ["d", "quick"]), {
        sessionKey: "s1",
      }),
      runtime.executeToolCalls(batch(["a", "quick"], ["d", "quick"]), { sessionKey: "s2" }),
    ]);
    expect(batchIds.size).toBe(2);
    const calls = new Map<string, PoolCallEvent[]>();
    for (const event of events) {
      const key = `${event.pool}#${event.seq}`;
      calls.set(key, [...(calls.get(key) ?? []), event]);
    }
    expect(calls.size).toBe(6);
    const ended = new Map<string, PoolCallEvent & { type: "ended" }>();
    for (const sequence of calls.values()) {
      expect(sequence.map((event) => event.type)).toEqual(["queued", "started", "ended"]);
      const [queued, started, end] = sequence as [PoolCallEvent, PoolCallEvent & { type: "started" }, PoolCallEvent & { type: "ended" }];
      expect(new Set(sequence.map((event) => `${event.pool} ${event.batchId} ${event.sessionKey} ${event.toolCallId} ${event.tool}`)).size).toBe(1);
      expect(queued.pool).toBe("shared");
      expect(queued.batchId).toBe(batchIds.get(queued.sessionKey!));
      expect(end.threadId).toBe(started.threadId);
      expect(end.timing.startedAt).toBe(started.at);
      expect(started.at).toBeGreaterThanOrEqual(queued.at);
      ended.set(`${end.sessionKey} ${end.toolCallId}`, end);
    }
    expect([...ended.keys()].sort()).toEqual(["s1 a", "s1 b", "s1 c", "s1 d", "s2 a", "s2 d"]);
    expect(ended.get("s1 a")).toMatchObject({ outcome: "ok", code: undefined, tool: "quick" });
    expect(ended.get("s1 b")).toMatchObject({ outcome: "fault", code: "TP_ERR_TIMEOUT", tool: "spin" });
    expect(ended.get("s1 c")).toMatchObject({ outcome: "fault", code: "TP_ERR_WORKER_EXIT", tool: "fault" });
    expect(ended.get("s2 d")).toMatchObject({ outcome: "ok", tool: "quick" });
  });

  it("stops listening to the pools once its last listener goes", async () => {
    const runtime = open({ tools: [quick], pool: { maxThreads: 1 } });
    const events: PoolCallEvent[] = [];
    const listener = (event: PoolCallEvent) => events.push(event);
    runtime.poolEvents.on(listener);
    expect(runtime.poolEvents.listenerCount).toBe(1);
    await runtime.executeToolCalls(batch(["a", "quick"]));
    expect(events.map((event) => event.type)).toEqual(["queued", "started", "ended"]);
    runtime.poolEvents.off(listener);
    expect(runtime.poolEvents.isObserved).toBe(false);
    await runtime.executeToolCalls(batch(["b", "quick"]));
    expect(events).toHaveLength(3);
  });

  it("emits a thread's ready and exited events with its pool's name, and lists the threads a late listener has missed", async () => {
    const runtime = open({ tools: [quick, fault], pool: { maxThreads: 1 } });
    const threads: PoolThreadEvent[] = [];
    const calls: PoolCallEvent[] = [];
    runtime.poolEvents.onThread((event) => threads.push(event));
    runtime.poolEvents.on((event) => calls.push(event));
    await runtime.executeToolCalls(batch(["a", "fault", { fault: "exit", code: 3 }]));
    await runtime.executeToolCalls(batch(["b", "quick"]));
    const [first, second] = calls.filter((event) => event.type === "started") as (PoolCallEvent & { type: "started" })[];
    // The thread that ran "a" came, then went with it; "b" ran on the next one.
    expect(threads.slice(0, 3).map((event) => `${event.change} ${event.threadId}`)).toEqual([
      `ready ${first!.threadId}`,
      `exited ${first!.threadId}`,
      `ready ${second!.threadId}`,
    ]);
    expect(new Set(threads.map((event) => `${event.type} ${event.pool}`))).toEqual(new Set(["thread shared"]));
    const listed = runtime.poolEvents.threads();
    expect(listed).toEqual([{ pool: "shared", threadId: second!.threadId }]);
  });
});
