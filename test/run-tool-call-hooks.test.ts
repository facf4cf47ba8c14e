import { runToolCall as piRunToolCall } from "@earendil-works/pi-agent-core";
import { createRuntime, supportsPi16, type AgentTool, type BeforeToolCallContext, type ToolCall } from "toolpool";
import { describe, expect, it } from "vitest";

import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/run-tool-call-hooks.test.ts");

const echo: AgentTool = {
  name: "echo",
  label: "echo",
  description: "echoes",
  parameters: { type: "object", properties: {} },
  execute: async () => ({ content: [{ type: "text", text: "ran" }], details: {} }),
};
const toolCall: ToolCall = { type: "toolCall", id: "c1", name: "echo", arguments: {} };
const assistantMessage = { role: "assistant" as const, content: [toolCall], stopReason: "toolUse", timestamp: 1 };
const context = { systemPrompt: "test", messages: [] };

/**
 * pi 1.6's runToolCall checks the signal and calls `beforeToolCall` in the
 * very call (its stages run synchronously up to the hook's promise); a caller
 * aborting right after it returned finds the hook already asked.
 */
describe.skipIf(!supportsPi16())("runtime.runToolCall with hooks, aborted by the caller right after the call", () => {
  it("asks beforeToolCall as pi 1.6's runToolCall does", async () => {
    const piAsked: string[] = [];
    const piController = new AbortController();
    const pi = piRunToolCall(toolCall as never, {
      tools: [echo] as never,
      context: { ...context, tools: [echo] } as never,
      assistantMessage: assistantMessage as never,
      signal: piController.signal,
      beforeToolCall: (async ({ toolCall }: BeforeToolCallContext) => {
        piAsked.push(toolCall.id);
        return undefined;
      }) as never,
    });
    piController.abort();
    const piOutcome = await pi;

    const asked: string[] = [];
    const runtime = createRuntime({
      pi: "1.6",
      tools: [echo],
      beforeToolCall: async ({ toolCall }) => {
        asked.push(toolCall.id);
        return undefined;
      },
    });
    try {
      const controller = new AbortController();
      const outcome = runtime.runToolCall(toolCall, { assistantMessage, context, signal: controller.signal });
      controller.abort();
      const { result, isError } = await outcome;
      expect({ result, isError }).toEqual({ result: piOutcome.result, isError: piOutcome.isError });
      expect(piAsked).toEqual(["c1"]);
      expect(asked).toEqual(piAsked);
    } finally {
      await runtime.close();
    }
  });
});
