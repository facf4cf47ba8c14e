// toolpool's OpenTelemetry spans, printed as a tree.
//
// The application registers a tracer provider and a context manager (here the
// SDK with an in-memory exporter; in production an OTLP exporter); toolpool
// finds `@opentelemetry/api` and emits a `toolpool.batch` span per batch with
// an `execute_tool {name}` child per call. One thread and two hash calls of a
// large text: the second call waits for the first, which the queue-wait and
// run-time attributes tell apart.
//
//   npm run build && node examples/tracing.mjs
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

function printTree(spans) {
  const children = new Map();
  for (const span of spans) {
    const parent = span.parentSpanContext?.spanId ?? "root";
    children.set(parent, [...(children.get(parent) ?? []), span]);
  }
  const ms = (time) => time[0] * 1e3 + time[1] / 1e6;
  const print = (parent, depth) => {
    const sorted = (children.get(parent) ?? []).sort((a, b) => ms(a.startTime) - ms(b.startTime));
    for (const span of sorted) {
      const indent = "  ".repeat(depth);
      const status = span.status.code === 2 ? `  ERROR: ${span.status.message.split("\n")[0]}` : "";
      console.log(`${indent}${span.name}  [${span.spanContext().spanId}] ${(ms(span.endTime) - ms(span.startTime)).toFixed(1)} ms${status}`);
      for (const [key, value] of Object.entries(span.attributes)) {
        const shown = typeof value === "number" && !Number.isInteger(value) ? value.toFixed(3) : JSON.stringify(value);
        console.log(`${indent}    ${key} = ${shown}`);
      }
      print(span.spanContext().spanId, depth + 1);
    }
  };
  const ids = new Set(spans.map((span) => span.spanContext().spanId));
  for (const span of spans) if (!ids.has(span.parentSpanContext?.spanId)) children.set("root", [...new Set([...(children.get("root") ?? []), span])]);
  print("root", 0);
}
