// Embedding toolpool's runtime in an existing Fastify app.
//
// Your app keeps its own routes, hooks and logger; the runtime is one more
// resource it owns. Tools burn CPU on worker threads, so the app's event loop
// keeps answering other requests while a batch runs. (For a ready-made
// server with auth, limits, metrics and graceful shutdown, use
// `createServer(runtime, options)` or `toolpool serve` instead.)
//
//   npm run build && node examples/fastify-app.mjs
//   curl -s localhost:3000/agent/tool-calls -H 'content-type: application/json' \
//     -d '{"assistantMessage":{"role":"assistant","content":[{"type":"toolCall","id":"1","name":"hash","arguments":{"text":"hi"}}]}}'
import { fastify } from "fastify";

import { builtinTools, createRuntime, ToolpoolError } from "toolpool";

const runtime = createRuntime({ tools: builtinTools(), pool: { maxThreads: 4, maxQueue: 64 } });
const app = fastify({ logger: true });

// An existing route of the app: it stays responsive while tools run.
app.get("/", async () => ({ hello: "world" }));

// The runtime's events from every batch, with `meta.batchId`: here, for the app's log.
runtime.on("tool_execution_end", (event, { batchId }) => {
  app.log.info({ batchId, tool: event.toolName, isError: event.isError }, "tool call ended");
});

/** An AbortSignal that fires when the client goes away before the answer is complete. */
function abortOnDisconnect(reply) {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

// One batch per request, answered as JSON: `{ messages, terminate }`.
app.post("/agent/tool-calls", async (request, reply) => {
  const { assistantMessage, context } = request.body ?? {};
  return runtime.executeToolCalls(assistantMessage, { context, signal: abortOnDisconnect(reply) });
});

// The same, streaming pi's events as Server-Sent Events while the calls run.
app.post("/agent/tool-calls/stream", async (request, reply) => {
  const { assistantMessage, context } = request.body ?? {};
  const signal = abortOnDisconnect(reply);
  reply.hijack();
  reply.raw.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const send = async (type, data) => {
    // The runtime awaits `emit`: waiting for `drain` makes a slow client slow its own batch down.
    if (!reply.raw.destroyed && !reply.raw.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`)) {
      await new Promise((resolve) => {
        reply.raw.once("drain", resolve);
        reply.raw.once("close", resolve);
      });
    }
  };
  try {
    const outcome = await runtime.executeToolCalls(assistantMessage, { context, signal, emit: (event) => send(event.type, event) });
    await send("batch_end", { type: "batch_end", ...outcome });
  } catch (error) {
    await send("error", { message: error.message, code: error.code });
  }
  reply.raw.end();
});

// A body that is not an assistant message is the client's mistake, not a 500.
app.setErrorHandler((error, request, reply) => {
  if (error instanceof ToolpoolError && error.code === "TP_ERR_INVALID_BATCH") {
    return reply.code(400).send({ code: error.code, message: error.message });
  }
  return reply.send(error);
});

// The pool closes with the app: running batches finish first.
app.addHook("onClose", () => runtime.close());
for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => void app.close());

await app.listen({ host: "127.0.0.1", port: Number(process.env.PORT ?? 3000) });
