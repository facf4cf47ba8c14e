import { Agent, runToolCall as piRunToolCall } from "@earendil-works/pi-agent-core";
import {
  createRuntime,
  supportsPi16,
  ToolpoolError,
  type AfterToolCallContext,
  type AgentToolResult,
  type BeforeToolCallContext,
  type Runtime,
  type ToolCall,
} from "toolpool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { scriptedTools, type Flavor } from "./support/differential.js";
import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/run-tool-call.test.ts");

const call = (id: string, name: string, args: Record<string, unknown> = {}, extra: Partial<ToolCall> = {}): ToolCall => ({
  type: "toolCall",
  id,
  name,
  arguments: args,
  ...extra,
});
const assistantMessage = { role: "assistant" as const, content: [call("c0", "work")], stopReason: "toolUse", timestamp: 1 };
const context = { systemPrompt: "You are a test.", messages: [] };

/** Hooks both sides share: block `blocked`, override `overridden`, throw for `throws-after`. */
const beforeToolCall = async ({ toolCall }: BeforeToolCallContext) =>
  toolCall.id === "blocked" ? { block: true, reason: "not here", terminate: true } : undefined;
const afterToolCall = async ({ toolCall, result }: AfterToolCallContext) => {
  if (toolCall.id === "overridden") return { content: [{ type: "text" as const, text: "overridden" }], usage: undefined, isError: true };
  if (toolCall.id === "throws-after") throw new Error("after hook exploded");
  return toolCall.id === "kept" ? { details: { seen: (result as AgentToolResult).details } } : undefined;
};

/** The observable outcome, `durationMs` by presence. */
function normalize(outcome: { toolCall: unknown; result: unknown; isError: boolean; durationMs?: number }, updates: unknown[]) {
  const { durationMs, ...rest } = outcome;
  return { ...JSON.parse(JSON.stringify(rest)), hasDuration: typeof durationMs === "number" && Number.isInteger(durationMs), updates };
}

const cases: { name: string; toolCall: ToolCall; aborted?: boolean }[] = [
  { name: "a valid call", toolCall: call("ok", "work", { text: "hello", updates: ["a", "b"] }) },
  { name: "coerced arguments", toolCall: call("coerced", "work", { count: "5", updates: "one" }) },
  { name: "invalid arguments", toolCall: call("invalid", "work", { count: "x" }) },
  { name: "arguments that could not be parsed", toolCall: call("unparsed", "work", {}, { argumentsError: "Unexpected token" }) },
  { name: "an unknown tool", toolCall: call("unknown", "nope") },
  { name: "a blocked call", toolCall: call("blocked", "work") },
  { name: "a tool that throws", toolCall: call("fails", "work", { fail: "disk on fire" }) },
  { name: "a result that reports an error", toolCall: call("reports", "work", { reportError: true, usage: { input: 1 } }) },
  { name: "an afterToolCall override", toolCall: call("overridden", "work", { structured: { a: 1 } }) },
  { name: "an afterToolCall that keeps fields", toolCall: call("kept", "work", { structured: { a: 1 } }) },
  { name: "a throwing afterToolCall", toolCall: call("throws-after", "work") },
  { name: "prepareArguments", toolCall: call("legacy", "legacy", { q: "old" }) },
  { name: "prepareArguments that throws", toolCall: call("legacy-throws", "legacy", { explode: "old shape" }) },
  { name: "execute returning a plain value", toolCall: call("sync", "work", { sync: true, text: "at once", updates: ["a"] }) },
  { name: "execute returning null", toolCall: call("null", "work", { returns: "null" }) },
  { name: "execute returning undefined at once", toolCall: call("undefined", "work", { sync: true, returns: "undefined" }) },
  { name: "execute returning a string", toolCall: call("string", "work", { returns: "string" }) },
  { name: "an aborted signal, checked first", toolCall: call("aborted", "work"), aborted: true },
];

describe.skipIf(!supportsPi16())("runtime.runToolCall against pi 1.6.0's runToolCall", () => {
  const runtimes = new Map<Flavor, Runtime>();
  beforeAll(() => {
    for (const flavor of ["inline", "worker"] satisfies Flavor[]) {
      runtimes.set(flavor, createRuntime({ pi: "1.6", tools: scriptedTools(flavor), beforeToolCall, afterToolCall, pool: { maxThreads: 2 } }));
    }
  });
  afterAll(async () => {
    await Promise.all([...runtimes.values()].map((runtime) => runtime.close()));
  });

  for (const flavor of ["inline", "worker"] satisfies Flavor[]) {
    for (const { name, toolCall, aborted } of cases) {
      it(`${flavor} tools: ${name}`, async () => {
        const signal = aborted ? AbortSignal.abort() : new AbortController().signal;
        const piUpdates: unknown[] = [];
        const pi = await piRunToolCall(toolCall as never, {
          tools: scriptedTools("inline") as never,
          context: { ...context, tools: scriptedTools("inline") } as never,
          assistantMessage: assistantMessage as never,
          signal,
          onUpdate: (partial: unknown) => {
            piUpdates.push(partial);
          },
          beforeToolCall: beforeToolCall as never,
          afterToolCall: afterToolCall as never,
        });
        const updates: unknown[] = [];
        const events: unknown[] = [];
        const runtime = runtimes.get(flavor)!;
        const listener = (event: unknown) => events.push(event);
        runtime.on("tool_execution_end", listener);
        try {
          const toolpool = await runtime.runToolCall(toolCall, { assistantMessage, context, signal, onUpdate: (partial) => updates.push(partial) });
          expect(normalize(toolpool, updates)).toEqual(normalize(pi as never, piUpdates));
        } finally {
          runtime.off("tool_execution_end", listener);
        }
        // No events: runToolCall adds nothing to any transcript.
        expect(events).toEqual([]);
      });
    }
  }
});

describe("runtime.runToolCall", () => {
  it("follows the runtime's pi: 0.73.1's rules by default, with no durationMs", async () => {
    const runtime = createRuntime({ tools: scriptedTools("inline") });
    try {
      const outcome = await runtime.runToolCall(call("c1", "work", { count: "5", text: "hi" }));
      expect(outcome).toEqual({
        toolCall: call("c1", "work", { count: "5", text: "hi" }),
        result: { content: [{ type: "text", text: "hi" }], details: { toolCallId: "c1", args: { count: 5, text: "hi" } } },
        isError: false,
      });
      const invalid = await runtime.runToolCall(call("c2", "work", { count: "x" }));
      expect(invalid.isError).toBe(true);
      expect((invalid.result.content[0] as { text: string }).text).toMatch(/^Validation failed for tool "work":/);
    } finally {
      await runtime.close();
    }
  });

  it("rejects after close() and for a malformed call or options", async () => {
    const runtime = createRuntime({ tools: scriptedTools("inline") });
    await expect(runtime.runToolCall({ type: "toolCall", id: 7, name: "work", arguments: {} } as never)).rejects.toMatchObject({
      code: "TP_ERR_INVALID_BATCH",
    });
    await expect(runtime.runToolCall(call("c1", "work"), { onUpdate: "no" } as never)).rejects.toMatchObject({
      code: "TP_ERR_INVALID_BATCH",
      message: expect.stringContaining("onUpdate"),
    });
    await runtime.close();
    await expect(runtime.runToolCall(call("c1", "work"))).rejects.toBeInstanceOf(ToolpoolError);
    await expect(runtime.runToolCall(call("c1", "work"))).rejects.toMatchObject({ code: "TP_ERR_CLOSED" });
  });
});

describe.skipIf(!supportsPi16())("a pi 1.6 Agent on toolpool's pool", () => {
  it("runs a scripted model's tool calls on worker threads through agentTools()", async () => {
    const runtime = createRuntime({ pi: "1.6", tools: scriptedTools("worker"), pool: { maxThreads: 2 } });
    try {
      const turns = [
        {
          role: "assistant",
          content: [
            call("t1", "work", { text: "first", updates: ["half"] }),
            call("t2", "work", { fail: "broken" }),
            call("t3", "legacy", { q: "old" }),
          ],
          stopReason: "toolUse",
        },
        { role: "assistant", content: [{ type: "text", text: "done" }], stopReason: "stop" },
      ];
      let modelCalls = 0;
      const streamFn = () => {
        const message = {
          ...turns[Math.min(modelCalls++, turns.length - 1)]!,
          api: "scripted",
          provider: "scripted",
          model: "scripted",
          usage: undefined,
          timestamp: Date.now(),
        };
        return {
          async *[Symbol.asyncIterator]() {
            yield { type: "done", reason: message.stopReason, message };
          },
          result: async () => message,
        };
      };
      const agent = new Agent({
        streamFn: streamFn as never,
        initialState: { tools: runtime.agentTools(), model: { id: "scripted", name: "scripted", api: "scripted", provider: "scripted" } as never },
      });
      const updates: unknown[] = [];
      agent.subscribe((event) => {
        if (event.type === "tool_execution_update") updates.push((event as { partialResult: unknown }).partialResult);
      });
      await agent.prompt("go");
      const results = agent.state.messages.filter((message) => message.role === "toolResult") as unknown as {
        toolCallId: string;
        isError: boolean;
        content: { text: string }[];
        durationMs?: number;
      }[];
      expect(results.map(({ toolCallId, isError, content }) => ({ toolCallId, isError, text: content[0]?.text }))).toEqual([
        { toolCallId: "t1", isError: false, text: "first" },
        { toolCallId: "t2", isError: true, text: "broken" },
        { toolCallId: "t3", isError: false, text: "legacy old" },
      ]);
      expect(results.every((result) => typeof result.durationMs === "number")).toBe(true);
      expect(updates).toEqual([{ content: [{ type: "text", text: "half" }], details: { update: "half" } }]);
      expect(modelCalls).toBe(2);
      // The calls ran on the pool.
      expect(runtime.poolStats?.completed).toBe(3);
    } finally {
      await runtime.close();
    }
  });
});
