import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { describe, expect } from "vitest";

import { workerTool, type AssistantMessage, type Runtime, type RuntimeOptions, type ToolResultMessage, type WorkerToolOptions } from "toolpool";

import { GateController } from "./support/gates.js";
import { codeOf, textOf } from "./support/helpers.js";
import { open as openRuntime, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest({ force: true });

const faults = new URL("./fixtures/tools/faults.mjs", import.meta.url);
const scripted = new URL("./fixtures/tools/scripted.mjs", import.meta.url);
const anyArgs = { type: "object" };

const faultTool = (extra: Partial<WorkerToolOptions> = {}) =>
  workerTool({ name: "fault", description: "commits a fault", parameters: anyArgs, module: faults, ...extra });
const okTool = workerTool({ name: "ok", description: "healthy", parameters: anyArgs, module: faults });

/** A healthy call on each side of the faulty one. */
const sandwich = (args: Record<string, unknown>, tool = "fault"): AssistantMessage => ({
  role: "assistant",
  content: [
    { type: "toolCall", id: "before", name: "ok", arguments: { value: 1 } },
    { type: "toolCall", id: "faulty", name: tool, arguments: args },
    { type: "toolCall", id: "after", name: "ok", arguments: { value: 2 } },
  ],
});

const open = (options: RuntimeOptions): Runtime => openRuntime({ ...options, pool: { maxThreads: 2, ...options.pool } });

/**
 * Runs a faulty call between two healthy ones and checks what every fault
 * must give: one end event and one message per call, in call order; healthy
 * neighbours succeed; the pool serves the next batch at once.
 */
async function expectContained(runtime: Runtime, args: Record<string, unknown>, tool = "fault"): Promise<ToolResultMessage> {
  const ends: string[] = [];
  const { messages } = await runtime.executeToolCalls(sandwich(args, tool), {
    emit: (event) => {
      if (event.type === "tool_execution_end") ends.push(event.toolCallId);
    },
  });
  expect(messages.map((message) => message.toolCallId)).toEqual(["before", "faulty", "after"]);
  expect(ends.sort()).toEqual(["after", "before", "faulty"]);
  expect(messages.map((message) => message.isError)).toEqual([false, true, false]);
  expect(messages.map((message) => textOf(message))).toEqual(["ok before", textOf(messages[1]!), "ok after"]);
  const next = await runtime.executeToolCalls(sandwich({ value: 3 }, "ok"));
  expect(next.messages.map((message) => message.isError)).toEqual([false, false, false]);
  return messages[1]!;
}

describe("faults become error results", () => {
  it.each([0, 1, 7])("process.exit(%i) → TP_ERR_WORKER_EXIT naming the code", async (code) => {
    const runtime = open({ tools: [faultTool(), okTool] });
    const message = await expectContained(runtime, { fault: "exit", code });
    expect(codeOf(message)).toBe("TP_ERR_WORKER_EXIT");
    expect(textOf(message)).toBe(`Tool "fault" ended its worker with exit code ${code}`);
  });

  it("an uncaught exception → TP_ERR_WORKER_CRASH with its message", async () => {
    const runtime = open({ tools: [faultTool(), okTool] });
    const message = await expectContained(runtime, { fault: "crash" });
    expect(codeOf(message)).toBe("TP_ERR_WORKER_CRASH");
    expect(textOf(message)).toBe('Tool "fault" crashed its worker: kaboom in faulty');
  });

  it("an unhandled rejection → TP_ERR_WORKER_CRASH", async () => {
    const runtime = open({ tools: [faultTool(), okTool] });
    const message = await expectContained(runtime, { fault: "rejection" });
    expect(codeOf(message)).toBe("TP_ERR_WORKER_CRASH");
    expect(textOf(message)).toContain("unhandled in faulty");
  });

  it("an exception thrown after the tool returned is charged to that call", async () => {
    const runtime = open({ tools: [faultTool(), okTool], pool: { leftoverGraceMs: 5_000 } });
    const message = await expectContained(runtime, { fault: "late-crash", afterMs: 1 });
    expect(codeOf(message)).toBe("TP_ERR_WORKER_CRASH");
    expect(textOf(message)).toContain("late kaboom from faulty");
  });

  it("retires a worker whose call left work behind, so it never fails an unrelated call", async () => {
    const channel = `leftover-${process.pid}`;
    // One thread: the next call would run on the very worker the leftover lives in.
    const runtime = open({ tools: [faultTool()], pool: { maxThreads: 1, leftoverGraceMs: 0 } });
    const first = await runtime.executeToolCalls({
      role: "assistant",
      content: [{ type: "toolCall", id: "leaver", name: "fault", arguments: { fault: "leftover-listener", channel } }],
    });
    expect(first.messages[0]!.isError).toBe(false);
    // The innocent call sets the leftover off from its own thread and ends only
    // after every listener there has had the message (see faults.mjs): had its
    // worker been reused, the leftover would throw while it runs, and it would
    // fail with TP_ERR_WORKER_CRASH ("detonated by leftover of leaver").
    const { messages } = await runtime.executeToolCalls({
      role: "assistant",
      content: [{ type: "toolCall", id: "innocent", name: "fault", arguments: { fault: "detonate", channel } }],
    });
    expect(messages[0]!.isError).toBe(false);
    expect(textOf(messages[0]!)).toBe("ok innocent");
  });

  it("a heap overrun under the pool's resourceLimits → TP_ERR_OUT_OF_MEMORY", async () => {
    const runtime = open({ tools: [faultTool(), okTool], pool: { resourceLimits: { maxOldGenerationSizeMb: 24, maxYoungGenerationSizeMb: 4 } } });
    const message = await expectContained(runtime, { fault: "oom" });
    expect(codeOf(message)).toBe("TP_ERR_OUT_OF_MEMORY");
    expect(textOf(message)).toContain("ran out of memory");
  });

  it("a heap overrun under a tool's own resourceLimits → TP_ERR_OUT_OF_MEMORY, on a pool of its own", async () => {
    const runtime = open({ tools: [faultTool({ resourceLimits: { maxOldGenerationSizeMb: 24, maxYoungGenerationSizeMb: 4 } }), okTool] });
    // The pool each call started on: the thread count alone would pass on the shared pool of any 2-core machine.
    const startedOn = new Map<string, string>();
    runtime.poolEvents.on((event) => {
      if (event.type === "started" && !startedOn.has(event.toolCallId)) startedOn.set(event.toolCallId, event.pool);
    });
    const message = await expectContained(runtime, { fault: "oom" });
    expect(codeOf(message)).toBe("TP_ERR_OUT_OF_MEMORY");
    expect(runtime.poolStats!.threads).toBeGreaterThanOrEqual(2);
    expect(Object.fromEntries(startedOn)).toEqual({ before: "shared", faulty: "fault", after: "shared" });
  });

  it("serves a call queued behind a worker that was lost, on a tool's own pool", async () => {
    // One thread: the second call waits in the queue while the first one
    // takes its worker down; a replacement must come for it.
    const runtime = open({
      tools: [faultTool({ resourceLimits: { maxOldGenerationSizeMb: 24, maxYoungGenerationSizeMb: 4 } }), okTool],
      pool: { maxThreads: 1 },
    });
    const { messages } = await runtime.executeToolCalls({
      role: "assistant",
      content: [
        { type: "toolCall", id: "hog", name: "fault", arguments: { fault: "oom" } },
        { type: "toolCall", id: "queued", name: "fault", arguments: { value: 7 } },
      ],
    });
    expect(messages.map((message) => [message.isError, codeOf(message)])).toEqual([
      [true, "TP_ERR_OUT_OF_MEMORY"],
      [false, undefined],
    ]);
  });

  it("a busy loop past timeoutMs → TP_ERR_TIMEOUT", async () => {
    const runtime = open({ tools: [faultTool({ timeoutMs: 100 }), okTool] });
    const message = await expectContained(runtime, { fault: "spin" });
    expect(codeOf(message)).toBe("TP_ERR_TIMEOUT");
  });

  it.each([
    ["function-result", "a function at result.details.callback"],
    ["symbol-result", "a symbol at result.details.tag"],
  ])("a %s → TP_ERR_RESULT_NOT_CLONEABLE, and the worker survives", async (fault, where) => {
    const runtime = open({ tools: [faultTool(), okTool], pool: { maxThreads: 1 } });
    const threadsBefore = runtime.poolStats!.completed;
    const message = await expectContained(runtime, { fault });
    expect(codeOf(message)).toBe("TP_ERR_RESULT_NOT_CLONEABLE");
    expect(textOf(message)).toBe(`Tool "fault" returned a result that cannot be cloned across threads: ${where}`);
    // Every call completed normally in Piscina's eyes: no worker was lost.
    expect(runtime.poolStats!.completed - threadsBefore).toBe(6);
  });

  it.each([
    ["throw-object", "[object Object]"],
    ["throw-null-proto", "[object Object]"],
  ])("a thrown non-Error value (%s) becomes pi's error text", async (fault, text) => {
    const runtime = open({ tools: [faultTool(), okTool] });
    const message = await expectContained(runtime, { fault });
    expect(textOf(message)).toBe(text);
    expect(message.details).toEqual({});
  });

  it("a result over maxResultBytes → TP_ERR_RESULT_TOO_LARGE", async () => {
    const runtime = open({ tools: [faultTool({ maxResultBytes: 1_000 }), okTool] });
    const message = await expectContained(runtime, { fault: "large-text", bytes: 1_001 });
    expect(codeOf(message)).toBe("TP_ERR_RESULT_TOO_LARGE");
    // Every string counts: 1,001 of text plus the part's type, "text".
    expect(textOf(message)).toBe('Tool "fault" returned 1005 bytes, more than maxResultBytes (1000)');
  });

  it("moves a large binary result to the host intact", async () => {
    const runtime = open({ tools: [faultTool(), okTool], pool: { maxResultBytes: 4 << 20 } });
    const { messages } = await runtime.executeToolCalls(sandwich({ fault: "binary", bytes: 2 << 20 }));
    const data = (messages[1]!.details as { data: Uint8Array }).data;
    expect(data).toBeInstanceOf(Uint8Array);
    expect(data.byteLength).toBe(2 << 20);
    expect(data.every((byte) => byte === 7)).toBe(true);
  });

  it.each([
    ["a module that throws while loading", "broken-module.mjs", "this module is broken"],
    // createRuntime refuses a module that does not exist; one removed after it started fails its calls.
    ["a module removed after the runtime started", "removed", "Cannot find module"],
  ])("%s → TP_ERR_TOOL_LOAD for every call, promptly", async (_, fixture, cause) => {
    const folder = mkdtempSync(join(tmpdir(), "toolpool-faults-"));
    const module = fixture === "removed" ? join(folder, "removed.mjs") : fileURLToPath(new URL(`./fixtures/tools/${fixture}`, import.meta.url));
    if (fixture === "removed") writeFileSync(module, "export async function execute() { return { content: [] }; }\n");
    const broken = workerTool({ name: "broken", description: "broken", parameters: anyArgs, module });
    const runtime = open({ tools: [broken, okTool] });
    rmSync(folder, { recursive: true, force: true });
    for (let round = 0; round < 3; round++) {
      const message = await expectContained(runtime, {}, "broken");
      expect(codeOf(message)).toBe("TP_ERR_TOOL_LOAD");
      expect(textOf(message)).toContain(cause);
    }
  });

  it("gives workers the environment of pool.env, not the host's", async () => {
    process.env.TOOLPOOL_TEST_SECRET = "hunter2";
    try {
      const shared = open({ tools: [faultTool(), okTool] });
      const isolated = open({ tools: [faultTool(), okTool], pool: { env: { VISIBLE: "yes" } } });
      const [inherited, given] = await Promise.all([shared, isolated].map((runtime) => runtime.executeToolCalls(sandwich({ fault: "env" }))));
      expect(JSON.parse(textOf(inherited!.messages[1]!))).toEqual({ secret: "hunter2", visible: null });
      expect(JSON.parse(textOf(given!.messages[1]!))).toEqual({ secret: null, visible: "yes" });
    } finally {
      delete process.env.TOOLPOOL_TEST_SECRET;
    }
  });
});

describe("Runtime.close", () => {
  it("drains: running calls finish, new batches are refused", async () => {
    const gates = new GateController();
    try {
      const gated = workerTool({ name: "work", description: "gated", parameters: anyArgs, module: scripted });
      const runtime = open({ tools: [gated] });
      const running = runtime.executeToolCalls({
        role: "assistant",
        content: [{ type: "toolCall", id: "a", name: "work", arguments: { gate: "drain:a" } }],
      });
      await gates.whenWaiting("drain:a");
      const closed = runtime.close();
      await expect(runtime.executeToolCalls(sandwich({}, "ok"))).rejects.toMatchObject({ code: "TP_ERR_CLOSED" });
      gates.open("drain:a");
      const { messages } = await running;
      await closed;
      expect(messages[0]!.isError).toBe(false);
    } finally {
      gates.close();
    }
  });

  it("with force, ends running worker and inline calls with TP_ERR_CLOSED results, each delivered once", async () => {
    const hanging = {
      name: "hang",
      label: "hang",
      description: "never settles",
      parameters: anyArgs,
      execute: () => new Promise<never>(() => {}),
    };
    const runtime = open({ tools: [faultTool(), okTool, hanging] });
    const ends: string[] = [];
    let started = 0;
    const running = runtime.executeToolCalls(
      {
        role: "assistant",
        content: [
          { type: "toolCall", id: "fine", name: "ok", arguments: {} },
          { type: "toolCall", id: "spinner", name: "fault", arguments: { fault: "spin" } },
          { type: "toolCall", id: "inline", name: "hang", arguments: {} },
        ],
      },
      {
        emit: (event) => {
          if (event.type === "tool_execution_start") started += 1;
          if (event.type === "tool_execution_end") ends.push(event.toolCallId);
        },
      },
    );
    await new Promise<void>((resolve) => {
      const check = () => (started === 3 && ends.includes("fine") ? resolve() : setImmediate(check));
      check();
    });
    await runtime.close({ force: true });
    const { messages } = await running;
    expect(messages.map((message) => [message.toolCallId, message.isError, codeOf(message)])).toEqual([
      ["fine", false, undefined],
      ["spinner", true, "TP_ERR_CLOSED"],
      ["inline", true, "TP_ERR_CLOSED"],
    ]);
    expect(ends.sort()).toEqual(["fine", "inline", "spinner"]);
  });
});
