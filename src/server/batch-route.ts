/** `POST /v1/batches`: runs one batch, answering with its events as SSE or with its outcome as one JSON body. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

import { ToolpoolError } from "../errors.js";
import type { BatchEvent } from "../events.js";
import type { Runtime } from "../runtime.js";
import { batchRequestSchema, chooseResponseMode, readSessionKey, sessionHeader, type BatchRequestBody } from "./batch-request.js";
import { sendError } from "../http/http-errors.js";
import type { InFlightBatches } from "./in-flight-batches.js";
import { toJsonText } from "../http/json-text.js";
import type { ResolvedServerOptions } from "./server-options.js";
import { SseStream } from "./sse-stream.js";

interface BatchRouteContext {
  readonly runtime: Runtime;
  readonly options: ResolvedServerOptions;
  readonly batches: InFlightBatches;
  /** True once the server is shutting down: no batch may start then. */
  isDraining(): boolean;
}

/** Adds `POST /v1/batches` to `app`. */
export function addBatchRoute(app: FastifyInstance, context: BatchRouteContext): void {
  app.post<{ Body: BatchRequestBody }>("/v1/batches", { schema: { body: batchRequestSchema } }, (request, reply) =>
    runBatch(request, reply, context),
  );
}

async function runBatch(
  request: FastifyRequest<{ Body: BatchRequestBody }>,
  reply: FastifyReply,
  { runtime, options, batches, isDraining }: BatchRouteContext,
): Promise<FastifyReply | undefined> {
  const { assistantMessage, context, toolExecution, maxConcurrency } = request.body;
  if (toolExecution !== undefined && toolExecution !== runtime.options.toolExecution) {
    return sendError(
      reply,
      400,
      "TP_ERR_INVALID_BATCH",
      `This server runs every batch in "${runtime.options.toolExecution}" mode (its runtime's toolExecution); ` +
        `got toolExecution "${toolExecution}". Leave it out, or use a server started in that mode.`,
    );
  }
  const sessionKey = readSessionKey(request.body, request.headers[sessionHeader]);
  if (typeof sessionKey === "object") return sendError(reply, 400, "TP_ERR_INVALID_BATCH", sessionKey.error);
  const toolNames = assistantMessage.content.flatMap((block) => (block.type === "toolCall" ? [block.name] : []));
  const calls = toolNames.length;
  if (calls > options.maxCallsPerBatch) {
    return sendError(
      reply,
      400,
      "TP_ERR_INVALID_BATCH",
      `The batch holds ${calls} tool calls, more than this server's maxCallsPerBatch (${options.maxCallsPerBatch}); split it`,
    );
  }
  // Checked again: a shutdown may have begun while the body arrived. This check and `track` run in
  // one synchronous step, so no batch slips past a shutdown's wait.
  if (isDraining()) return sendDraining(reply);
  const refusedTool = firstQueueFullTool(runtime, toolNames);
  if (refusedTool !== undefined) {
    reply.header("retry-after", String(options.retryAfterSeconds));
    return sendError(
      reply,
      429,
      "TP_ERR_QUEUE_FULL",
      `The pool of tool "${refusedTool}" is full (pool.maxQueue, or fleet.maxOutstanding for a fleet's tool): it would refuse a new call; retry later`,
    );
  }
  const batch = batches.track(reply.raw);
  const mode = chooseResponseMode(request.headers.accept);
  const stream = mode === "sse" ? new SseStream(reply) : undefined;
  try {
    const outcome = await runtime.executeToolCalls(assistantMessage, {
      ...(context === undefined ? {} : { context }),
      signal: batch.signal,
      ...(sessionKey === undefined ? {} : { sessionKey }),
      ...(maxConcurrency === undefined ? {} : { maxConcurrency }),
      ...(stream === undefined ? {} : { emit: (event: BatchEvent) => stream.send(event.type, framedEvent(event, options)) }),
    });
    batch.settle();
    if (stream === undefined) {
      return reply.type("application/json; charset=utf-8").send(toJsonText(outcome));
    }
    await stream.send("batch_end", { type: "batch_end", messages: outcome.messages, terminate: outcome.terminate });
    await stream.end();
    return reply;
  } catch (error) {
    batch.settle();
    // Before the stream opened, Fastify's error handler answers (400, 503, …).
    if (stream === undefined || !stream.isOpen) throw error;
    // Afterwards only a frame can say so. The runtime rejects only for misuse
    // or a throwing `emit`, and this `emit` never throws, so this is a bug.
    request.log.error({ err: error }, "toolpool server: batch failed after its stream opened");
    const code = error instanceof ToolpoolError ? error.code : undefined;
    await stream.send("error", { type: "error", ...(code === undefined ? {} : { code }), message: "The batch failed" });
    // Every stream ends with batch_end, so that a client's loop always ends.
    await stream.send("batch_end", { type: "batch_end", messages: [], terminate: false });
    await stream.end();
    return reply;
  }
}

/** With `updateArgs: false`, a `tool_execution_update` leaves out `args` (its `tool_execution_start` carried them). */
function framedEvent(event: BatchEvent, options: ResolvedServerOptions): object {
  if (event.type !== "tool_execution_update" || options.updateArgs) return event;
  const { args: _args, ...withoutArgs } = event;
  return withoutArgs;
}

/** 503 with `Connection: close`, so that clients go to another instance. */
export function sendDraining(reply: FastifyReply): FastifyReply {
  reply.header("connection", "close");
  return sendError(reply, 503, "TP_ERR_CLOSED", "The server is shutting down");
}

/**
 * Only the pools this batch's calls go to count, so one full pool does not turn away batches for the
 * other tools. Calls refused later, in a race, become `TP_ERR_QUEUE_FULL` error results.
 */
function firstQueueFullTool(runtime: Runtime, toolNames: readonly string[]): string | undefined {
  const asked = new Set<string>();
  for (const name of toolNames) {
    if (asked.has(name)) continue;
    asked.add(name);
    if (runtime.isQueueFull(name)) return name;
  }
  return undefined;
}
