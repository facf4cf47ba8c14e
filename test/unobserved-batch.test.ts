import { afterEach, describe, expect, it } from "vitest";

import { createRuntime, type AgentTool, type Runtime, type ToolExecutionMode } from "toolpool";

import { deferred } from "./support/gates.js";
import { batch } from "./support/helpers.js";

let runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.map((runtime) => runtime.close()));
  runtimes = [];
});

/** A tool whose call `i` returns once its gate opens, after sending one partial. */
function gatedTool(gates: readonly { promise: Promise<void> }[]): AgentTool {
  return {
    name: "wait",
    label: "wait",
    description: "Waits for its gate",
    parameters: { type: "object", properties: { i: { type: "number" } }, required: ["i"] },
    execute: async (_id, args, _signal, onUpdate) => {
      const { i } = args as { i: number };
      await gates[i]!.promise;
      onUpdate?.({ content: [{ type: "text", text: `partial ${i}` }], details: {} });
      return { content: [{ type: "text", text: `done ${i}` }], details: {} };
    },
  };
}

describe("a batch nobody observes as it starts", () => {
  const cases: [ToolExecutionMode, string[]][] = [
    // Both calls already execute when the listener comes: their partials go nowhere, their ends and messages reach it.
    ["parallel", ["tool_execution_end:c0", "tool_execution_end:c1", "message_end:c0", "message_end:c1"]],
    // The second call starts once the listener is there: it hears all of it.
    [
      "sequential",
      ["tool_execution_end:c0", "message_end:c0", "tool_execution_start:c1", "tool_execution_update:c1", "tool_execution_end:c1", "message_end:c1"],
    ],
  ];
  for (const [toolExecution, expected] of cases) {
    it(`gives a listener that subscribes while it runs the rest of its events (${toolExecution})`, async () => {
      const gates = [deferred(), deferred()];
      const runtime = createRuntime({ tools: [gatedTool(gates)], toolExecution });
      runtimes.push(runtime);
      const outcome = runtime.executeToolCalls(batch(["c0", "wait", { i: 0 }], ["c1", "wait", { i: 1 }]));
      await new Promise((resolve) => setImmediate(resolve));
      const heard: string[] = [];
      runtime.on("tool_execution_start", (event) => heard.push(`tool_execution_start:${event.toolCallId}`));
      runtime.on("tool_execution_update", (event) => heard.push(`tool_execution_update:${event.toolCallId}`));
      runtime.on("tool_execution_end", (event) => heard.push(`tool_execution_end:${event.toolCallId}`));
      runtime.on("message_end", (event) => heard.push(`message_end:${(event.message as { toolCallId: string }).toolCallId}`));
      gates[0]!.resolve();
      gates[1]!.resolve();
      const { messages } = await outcome;
      expect(messages.map((message) => message.toolCallId)).toEqual(["c0", "c1"]);
      expect(heard).toEqual(expected);
    });
  }
});
