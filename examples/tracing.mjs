// toolpool's OpenTelemetry spans, printed as a tree.
//
// The application registers a tracer provider and a context manager (here the
// SDK with an in-memory exporter; in production an OTLP exporter); toolpool
// finds `@opentelemetry/api` and emits a `toolpool.batch` span per batch with
// an `execute_tool {name}` child per call. One thread and two hash calls of a
// large text: the second call waits for the first, which the queue-wait and
// run-time attributes tell apart.
//
//   npm run build && node examples/tracing.mjs [--attributes]
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

import { builtinTools, createRuntime } from "toolpool";

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

const runtime = createRuntime({ tools: builtinTools(["hash", "grep"]), pool: { maxThreads: 1 } });
const text = "toolpool ".repeat(2_000_000);
const agentTurn = trace.getTracer("example-agent").startSpan("agent turn");
await context.with(trace.setSpan(context.active(), agentTurn), () =>
  runtime.executeToolCalls(
    {
      role: "assistant",
      content: [
        { type: "toolCall", id: "call_1", name: "hash", arguments: { text } },
        { type: "toolCall", id: "call_2", name: "hash", arguments: { text, algorithm: "md5" } },
        { type: "toolCall", id: "call_3", name: "grep", arguments: { pattern: "x", path: "no/such/dir" } },
        { type: "toolCall", id: "call_4", name: "hash", arguments: { text: "a", algorithm: "crc32" } },
      ],
    },
    { sessionKey: "demo-session" },
  ),
);
agentTurn.end();
await runtime.close();

printTree(exporter.getFinishedSpans());

/**
 * The spans as a tree, one line each: a call's id, where its time went
 * (queue wait and run on the thread, or `execution=none` for a call that
 * never ran) and its thread or error type. `--attributes` adds every
 * attribute of every span below its line.
 */
function printTree(spans) {
  const withAttributes = process.argv.includes("--attributes");
  const ids = new Set(spans.map((span) => span.spanContext().spanId));
  const children = new Map();
  for (const span of spans) {
    const parent = ids.has(span.parentSpanContext?.spanId) ? span.parentSpanContext.spanId : "root";
    children.set(parent, [...(children.get(parent) ?? []), span]);
  }
  const ms = (time) => time[0] * 1e3 + time[1] / 1e6;
  const print = (parent, depth) => {
    const sorted = (children.get(parent) ?? []).sort((a, b) => ms(a.startTime) - ms(b.startTime));
    for (const span of sorted) {
      console.log(lineOf(span, "  ".repeat(depth)));
      if (withAttributes) {
        for (const [key, value] of Object.entries(span.attributes)) console.log(`${"  ".repeat(depth)}    ${key} = ${JSON.stringify(value)}`);
      }
      print(span.spanContext().spanId, depth + 1);
    }
  };
  print("root", 0);
}

function lineOf(span, indent) {
  const attributes = span.attributes;
  if (span.name === "toolpool.batch") {
    return `${`${indent}${span.name}`.padEnd(39)}toolpool.batch.tool_calls=${attributes["toolpool.batch.tool_calls"]} toolpool.batch.errors=${attributes["toolpool.batch.errors"] ?? 0}`;
  }
  if (!span.name.startsWith("execute_tool")) return `${indent}${span.name}`;
  const timing =
    attributes["toolpool.execution"] === "none"
      ? "execution=none".padEnd(34)
      : `queue_wait_ms=${attributes["toolpool.queue_wait_ms"]?.toFixed(1)} `.padEnd(20) + `run_ms=${attributes["toolpool.run_ms"]?.toFixed(1)} `.padEnd(14);
  const tail = [
    attributes["toolpool.thread.id"] === undefined ? "" : `thread.id=${attributes["toolpool.thread.id"]}`,
    attributes["error.type"] === undefined ? "" : `error.type=${attributes["error.type"]}`,
  ];
  return `${`${indent}${span.name}`.padEnd(24)}${String(attributes["gen_ai.tool.call.id"]).padEnd(15)}${timing}${tail.filter(Boolean).join(" ")}`.trimEnd();
}
