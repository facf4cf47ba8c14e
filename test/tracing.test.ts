import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { context, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, afterEach, beforeAll, describe, expect } from "vitest";

import { workerTool, type AgentTool, type EventMeta, type Runtime, type RuntimeOptions, type WorkerToolOptions } from "toolpool";

import { GateController } from "./support/gates.js";
import { batch } from "./support/helpers.js";
import { open as openRuntime, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest({ force: true });

const faults = new URL("./fixtures/tools/faults.mjs", import.meta.url);
const scripted = new URL("./fixtures/tools/scripted.mjs", import.meta.url);
const traced = new URL("./fixtures/tools/traced.mjs", import.meta.url);
const anyArgs = { type: "object" };

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});

const open = (options: RuntimeOptions): Runtime => openRuntime({ ...options, pool: { maxThreads: 2, ...options.pool } });
afterEach(async () => {
  exporter.reset();
});

const tool = (name: string, module: URL, extra: Partial<WorkerToolOptions> = {}) =>
  workerTool({ name, description: `the ${name} tool`, parameters: anyArgs, module, ...extra });

/** An inline tool that starts a span of its own under whatever context is active while it runs. */
const inlineTraced: AgentTool = {
  name: "inline",
  label: "inline",
  description: "the inline tool",
  parameters: anyArgs,
  execute: async () => {
    await trace.getTracer("inline-tool").startActiveSpan("inline work", async (span) => {
      await new Promise((resolve) => setImmediate(resolve));
      span.end();
    });
    return { content: [{ type: "text", text: "inline done" }], details: {} };
  },
};

const spansNamed = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((span) => span.name === name);
const onlySpan = (name: string): ReadableSpan => {
  const spans = spansNamed(name);
  expect(spans, `spans named ${name}`).toHaveLength(1);
  return spans[0]!;
};
const callSpan = (callId: string): ReadableSpan => {
  const spans = exporter.getFinishedSpans().filter((span) => span.attributes["gen_ai.tool.call.id"] === callId);
  expect(spans, `call spans of ${callId}`).toHaveLength(1);
  return spans[0]!;
};
const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;

describe("tracing", () => {
  it("emits a batch span, an execute_tool span per call under it, and a worker's own span under its call's", async () => {
    const runtime = open({ tools: [tool("traced", traced), inlineTraced] });
    const outer = trace.getTracer("test").startSpan("agent turn");
    const { messages } = await context.with(trace.setSpan(context.active(), outer), () =>
      runtime.executeToolCalls(batch(["w1", "traced"], ["i1", "inline"])),
    );
    outer.end();
    expect(messages.map((message) => message.isError)).toEqual([false, false]);

    const batchSpan = onlySpan("toolpool.batch");
    expect(parentOf(batchSpan)).toBe(outer.spanContext().spanId);
    expect(batchSpan.attributes).toMatchObject({
      "toolpool.batch.id": "b1",
      "toolpool.batch.tool_calls": 2,
      "toolpool.tool_execution": "parallel",
      "toolpool.batch.errors": 0,
    });
    const workerCall = onlySpan("execute_tool traced");
    const inlineCall = onlySpan("execute_tool inline");
    expect(parentOf(workerCall)).toBe(batchSpan.spanContext().spanId);
    expect(parentOf(inlineCall)).toBe(batchSpan.spanContext().spanId);
    for (const span of [batchSpan, workerCall, inlineCall]) expect(span.spanContext().traceId).toBe(outer.spanContext().traceId);

    // The span the tool started in its worker thread, exported there, is a child of its call's span.
    const details = messages[0]!.details as { spanName: string; traceId: string; parentSpanId: string; traceparent: string };
    expect(details.spanName).toBe("traced work");
    expect(details.traceId).toBe(workerCall.spanContext().traceId);
    expect(details.parentSpanId).toBe(workerCall.spanContext().spanId);
    expect(details.traceparent).toBe(`00-${workerCall.spanContext().traceId}-${workerCall.spanContext().spanId}-01`);
    // An inline tool's span is a child of its call's span too.
    expect(parentOf(onlySpan("inline work"))).toBe(inlineCall.spanContext().spanId);
  });

  it("puts the GenAI attributes and toolpool's own on a successful call's span", async () => {
    const runtime = open({ tools: [tool("ok", faults)] });
    await runtime.executeToolCalls(batch(["c1", "ok", { value: 1 }]));
    const span = onlySpan("execute_tool ok");
    expect(span.kind).toBe(0); // INTERNAL
    expect(span.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "ok",
      "gen_ai.tool.call.id": "c1",
      "gen_ai.tool.type": "function",
      "gen_ai.tool.description": "the ok tool",
      "toolpool.execution": "worker",
    });
    expect(span.attributes["toolpool.queue_wait_ms"]).toBeTypeOf("number");
    expect(span.attributes["toolpool.run_ms"]).toBeTypeOf("number");
    expect(span.attributes["toolpool.thread.id"]).toBeTypeOf("number");
    expect(span.attributes["error.type"]).toBeUndefined();
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
  });

  it("marks error results with error.type tool_error: a throwing tool, an unknown tool, invalid arguments, a blocked call", async () => {
    const strict = workerTool({
      name: "strict",
      description: "needs n",
      parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
      module: faults,
    });
    const runtime = open({
      tools: [tool("work", scripted), strict],
      beforeToolCall: ({ toolCall }) => (toolCall.id === "blocked" ? { block: true, reason: "not today" } : undefined),
    });
    const { messages } = await runtime.executeToolCalls(
      batch(["thrown", "work", { fail: "it broke" }], ["unknown", "nope"], ["invalid", "strict", { n: "x" }], ["blocked", "work"]),
    );
    expect(messages.map((message) => message.isError)).toEqual([true, true, true, true]);
    const thrown = callSpan("thrown");
    expect(thrown.attributes).toMatchObject({ "error.type": "tool_error", "toolpool.execution": "worker" });
    expect(thrown.status).toEqual({ code: SpanStatusCode.ERROR, message: "it broke" });
    for (const id of ["unknown", "invalid", "blocked"]) {
      const span = callSpan(id);
      expect(span.attributes).toMatchObject({ "error.type": "tool_error", "toolpool.execution": "none" });
      expect(span.attributes["toolpool.queue_wait_ms"]).toBeUndefined();
      expect(span.status.code).toBe(SpanStatusCode.ERROR);
    }
    expect(callSpan("blocked").status.message).toBe("not today");
    expect(onlySpan("toolpool.batch").attributes["toolpool.batch.errors"]).toBe(4);
  });

  it.each([
    ["TP_ERR_WORKER_CRASH", { fault: "crash" }, {}],
    ["TP_ERR_WORKER_EXIT", { fault: "exit", code: 3 }, {}],
    ["TP_ERR_TIMEOUT", { fault: "spin" }, { tool: { timeoutMs: 200 } }],
    ["TP_ERR_OUT_OF_MEMORY", { fault: "oom" }, { tool: { resourceLimits: { maxOldGenerationSizeMb: 24, maxYoungGenerationSizeMb: 4 } } }],
    ["TP_ERR_RESULT_NOT_CLONEABLE", { fault: "function-result" }, {}],
    ["TP_ERR_RESULT_TOO_LARGE", { fault: "large-text", bytes: 2_000 }, { tool: { maxResultBytes: 1_000 } }],
    ["TP_ERR_TOOL_LOAD", {}, { module: new URL("./fixtures/tools/broken-module.mjs", import.meta.url) }],
  ] as const)("sets error.type %s for that fault", async (code, args, setup) => {
    const setupOptions = setup as { tool?: Partial<WorkerToolOptions>; module?: URL };
    const runtime = open({ tools: [tool("fault", setupOptions.module ?? faults, setupOptions.tool)] });
    const { messages } = await runtime.executeToolCalls(batch(["f1", "fault", args]));
    expect((messages[0]!.details as { code?: string }).code).toBe(code);
    const span = callSpan("f1");
    expect(span.attributes["error.type"]).toBe(code);
    expect(span.attributes["toolpool.execution"]).toBe("worker");
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
  });

  it("sets error.type TP_ERR_ABORTED for a call that ignored the batch's abort", async () => {
    const runtime = open({ tools: [tool("fault", faults)], pool: { abortGraceMs: 50 } });
    const controller = new AbortController();
    const running = runtime.executeToolCalls(batch(["a1", "fault", { fault: "stubborn" }]), {
      signal: controller.signal,
      emit: (event) => {
        if (event.type === "tool_execution_update") controller.abort();
      },
    });
    const { messages } = await running;
    expect((messages[0]!.details as { code?: string }).code).toBe("TP_ERR_ABORTED");
    expect(callSpan("a1").attributes["error.type"]).toBe("TP_ERR_ABORTED");
  });

  it("sets error.type TP_ERR_QUEUE_FULL and TP_ERR_CLOSED for calls the pool refused or a forced close ended", async () => {
    const gates = new GateController();
    try {
      const runtime = open({ tools: [tool("work", scripted)], pool: { maxThreads: 1, maxQueue: 0 } });
      const running = runtime.executeToolCalls(batch(["held", "work", { gate: "trace:held" }], ["refused", "work"]));
      await gates.whenWaiting("trace:held");
      await runtime.close({ force: true });
      const { messages } = await running;
      expect(messages.map((message) => (message.details as { code?: string }).code)).toEqual(["TP_ERR_CLOSED", "TP_ERR_QUEUE_FULL"]);
      expect(callSpan("held").attributes["error.type"]).toBe("TP_ERR_CLOSED");
      expect(callSpan("refused").attributes["error.type"]).toBe("TP_ERR_QUEUE_FULL");
    } finally {
      gates.close();
    }
  });

  it("tells queue wait from run time: a call behind a gate-blocked one waited, and listeners get the same figures in meta", async () => {
    const gates = new GateController();
    try {
      const runtime = open({ tools: [tool("work", scripted)], pool: { maxThreads: 1 } });
      // The one thread is started and idle before the batch: the first call is dispatched at once.
      await runtime.executeToolCalls(batch(["warm", "work"]));
      exporter.reset();
      const metas = new Map<string, EventMeta>();
      runtime.on("tool_execution_end", (event, meta) => metas.set(event.toolCallId, meta));
      const running = runtime.executeToolCalls(batch(["first", "work", { gate: "trace:first" }], ["second", "work"]));
      await gates.whenWaiting("trace:first");
      // "second" is queued now: the only thread is busy with "first". The
      // gate stays shut a while longer, so both figures must hold that stretch.
      expect(runtime.poolStats?.queued).toBe(1);
      const shutFrom = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 20));
      const shutMs = performance.now() - shutFrom;
      gates.open("trace:first");
      await running;

      const first = callSpan("first");
      const second = callSpan("second");
      const firstWait = first.attributes["toolpool.queue_wait_ms"] as number;
      const secondWait = second.attributes["toolpool.queue_wait_ms"] as number;
      const firstRun = first.attributes["toolpool.run_ms"] as number;
      // "second" was queued before the stretch and could be handed to the
      // thread only once "first" had replied, after it; "first" ran across
      // it. Both hold by causality, however slow the machine (a comparison
      // with first's own wait did not: a loaded machine stretched that one).
      expect(secondWait).toBeGreaterThanOrEqual(shutMs);
      expect(firstRun).toBeGreaterThanOrEqual(shutMs);
      expect(second.attributes["toolpool.thread.id"]).toBe(first.attributes["toolpool.thread.id"]);
      expect(metas.get("first")).toMatchObject({ batchId: "b2", queueWaitMs: firstWait, runMs: firstRun });
      expect(metas.get("second")).toMatchObject({ queueWaitMs: secondWait, runMs: second.attributes["toolpool.run_ms"] });
      expect(metas.get("second")?.threadId).toBe(second.attributes["toolpool.thread.id"]);
    } finally {
      gates.close();
    }
  });

  it("puts the pool's queued and started events on each worker call's span, with pool, thread and queue wait, and listens to the pools only while a traced batch runs", async () => {
    const runtime = open({ tools: [tool("work", scripted), inlineTraced], pool: { maxThreads: 1 } });
    expect(runtime.poolEvents.isObserved).toBe(false);
    const running = runtime.executeToolCalls(batch(["one", "work"], ["two", "work"], ["three", "inline"]));
    expect(runtime.poolEvents.isObserved).toBe(true);
    await running;
    expect(runtime.poolEvents.isObserved).toBe(false);
    for (const id of ["one", "two"]) {
      const span = callSpan(id);
      expect(span.events.map((event) => event.name)).toEqual(["queued", "started"]);
      const [queued, started] = span.events as [(typeof span.events)[number], (typeof span.events)[number]];
      expect(queued.attributes).toEqual({ "toolpool.pool": "shared" });
      expect(started.attributes).toEqual({
        "toolpool.pool": "shared",
        "toolpool.thread.id": span.attributes["toolpool.thread.id"],
        "toolpool.queue_wait_ms": span.attributes["toolpool.queue_wait_ms"],
      });
    }
    // An inline call has no pool, so no pool events.
    expect(callSpan("three").events).toEqual([]);
  });

  it("names the session of a batch that has one", async () => {
    const runtime = open({ tools: [tool("ok", faults)] });
    await runtime.executeToolCalls(batch(["s1", "ok"]), { sessionKey: "user-42" } as Parameters<Runtime["executeToolCalls"]>[1]);
    expect(onlySpan("toolpool.batch").attributes["toolpool.session"]).toBe("user-42");
    expect(callSpan("s1").attributes["toolpool.session"]).toBe("user-42");
  });

  it("emits nothing with tracing: false, and hands no traceparent to the tool", async () => {
    const runtime = open({ tools: [tool("traced", traced)], tracing: false });
    const { messages } = await runtime.executeToolCalls(batch(["n1", "traced"]));
    expect(exporter.getFinishedSpans().filter((span) => span.instrumentationScope.name === "toolpool")).toEqual([]);
    expect((messages[0]!.details as { traceparent: unknown; parentSpanId: unknown }).traceparent).toBeNull();
    expect((messages[0]!.details as { parentSpanId: unknown }).parentSpanId).toBeNull();
  });

  it("loads @opentelemetry/api only with the first batch after the application registered a tracer provider, never on import", async () => {
    const script = `
      import { createRequire } from "node:module";
      const require = createRequire(import.meta.url);
      const loaded = () => Object.keys(require.cache).some((path) => path.includes("@opentelemetry"));
      const { createRuntime } = await import("toolpool");
      const afterImport = loaded();
      const execute = async () => ({ content: [{ type: "text", text: "ok" }], details: {} });
      const tools = [{ name: "echo", label: "echo", description: "", parameters: { type: "object" }, execute }];
      const message = { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "echo", arguments: {} }] };
      const runtime = createRuntime({ tools });
      await runtime.executeToolCalls(message);
      const afterUnregisteredBatch = loaded();
      const { trace } = await import("@opentelemetry/api");
      const started = [];
      const spanContext = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1 };
      trace.setGlobalTracerProvider({ getTracer: () => ({ startSpan: (name) => (started.push(name), trace.wrapSpanContext(spanContext)) }) });
      await runtime.executeToolCalls(message);
      await runtime.close();
      console.log(JSON.stringify({ afterImport, afterUnregisteredBatch, spansAfterRegistering: started }));
    `;
    const cwd = fileURLToPath(new URL("..", import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], { cwd });
    expect(JSON.parse(stdout)).toEqual({ afterImport: false, afterUnregisteredBatch: false, spansAfterRegistering: ["toolpool.batch"] });
  });
});
