import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { createRuntime, type AssistantMessage, type Runtime, type ToolResultMessage } from "toolpool";

import faultTools from "./fixtures/fleet/fault-tools.mjs";
import { startNode, steadyCoordinator, stopNodes, type TestNode } from "./support/fleet.js";
import { hasRedisServer, startRedis, type TestRedis } from "./support/redis.js";

const toolsModule = new URL("./fixtures/fleet/fault-tools.mjs", import.meta.url);

/** A healthy call on each side of the faulty one, as in faults.test.ts. */
const sandwich = (tool: string, args: Record<string, unknown>): AssistantMessage => ({
  role: "assistant",
  content: [
    { type: "toolCall", id: "before", name: "ok", arguments: { value: 1 } },
    { type: "toolCall", id: "faulty", name: tool, arguments: args },
    { type: "toolCall", id: "after", name: "ok", arguments: { value: 2 } },
  ],
});

const summary = (message: ToolResultMessage) => ({
  isError: message.isError,
  code: (message.details as { code?: string } | undefined)?.code ?? null,
  text: (message.content[0] as { text: string }).text,
});

/** Each row of the fault table in docs/errors.md ("Faults and limits"), as a call: the same code and text remotely as locally. */
const faultRows: [string, string, Record<string, unknown>, string | null][] = [
  ["process.exit(0)", "fault", { fault: "exit", code: 0 }, "TP_ERR_WORKER_EXIT"],
  ["process.exit(7)", "fault", { fault: "exit", code: 7 }, "TP_ERR_WORKER_EXIT"],
  ["an uncaught exception", "fault", { fault: "crash" }, "TP_ERR_WORKER_CRASH"],
  ["an unhandled rejection", "fault", { fault: "rejection" }, "TP_ERR_WORKER_CRASH"],
  ["a late exception", "fault", { fault: "late-crash", afterMs: 1 }, "TP_ERR_WORKER_CRASH"],
  ["a heap overrun under the tool's resourceLimits", "hog", { fault: "oom" }, "TP_ERR_OUT_OF_MEMORY"],
  ["a call past its timeoutMs", "slow", { fault: "spin" }, "TP_ERR_TIMEOUT"],
  ["an uncloneable result", "fault", { fault: "function-result" }, "TP_ERR_RESULT_NOT_CLONEABLE"],
  ["a thrown non-Error", "fault", { fault: "throw-object" }, null],
  ["a result over maxResultBytes", "tiny", { fault: "large-text", bytes: 5_000 }, "TP_ERR_RESULT_TOO_LARGE"],
  ["a module that fails to load", "broken", {}, "TP_ERR_TOOL_LOAD"],
];

describe.runIf(hasRedisServer())("fleet: the fault table on a node", () => {
  let redis: TestRedis;
  let nodes: TestNode[] = [];
  let local: Runtime;
  let remote: Runtime;

  beforeAll(async () => {
    redis = await startRedis();
    nodes = await Promise.all([1, 2].map((index) => startNode({ redis: redis.url, tools: toolsModule, name: `f${index}` })));
    // The same pool settings on both sides: 1 thread a node, 2 nodes; 2 threads locally.
    local = createRuntime({ tools: faultTools, pool: { maxThreads: 2 } });
    remote = createRuntime({ tools: faultTools, fleet: { redis: redis.url, ...steadyCoordinator } });
  });
  afterAll(async () => {
    await Promise.all([local?.close({ force: true }), remote?.close({ force: true })]);
    await stopNodes(nodes);
    await redis?.dispose();
  });

  it.each(faultRows)("%s: the same result remotely as locally", async (_name, tool, args, code) => {
    const [here, there] = await Promise.all([local.executeToolCalls(sandwich(tool, args)), remote.executeToolCalls(sandwich(tool, args))]);
    expect(there.messages.map((message) => message.toolCallId)).toEqual(["before", "faulty", "after"]);
    expect(there.messages.map(summary)).toEqual(here.messages.map(summary));
    expect(summary(there.messages[1]!).code).toBe(code);
    // The node serves the next batch at once.
    const next = await remote.executeToolCalls(sandwich("ok", { value: 3 }));
    expect(next.messages.map((message) => message.isError)).toEqual([false, false, false]);
  });
});
