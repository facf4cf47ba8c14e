/** A batch's span and one `execute_tool {name}` child span per call, per OpenTelemetry's GenAI conventions. */
import { errorCodes } from "../errors.js";
import type { AgentToolResult, BatchOutcome, ToolCall, ToolExecutionMode } from "../types.js";
import type { CallDurations } from "./call-durations.js";
import { SPAN_KIND_INTERNAL, SPAN_STATUS_ERROR, type OtelApi, type OtelContext, type OtelSpan, type OtelTracer } from "./otel-api.js";
import {
  ATTR_BATCH_ERRORS,
  ATTR_BATCH_ID,
  ATTR_BATCH_TOOL_CALLS,
  ATTR_ERROR_TYPE,
  ATTR_EXECUTION,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_DESCRIPTION,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  ATTR_NODE,
  ATTR_QUEUE_WAIT_MS,
  ATTR_RUN_MS,
  ATTR_SESSION,
  ATTR_THREAD_ID,
  ATTR_TOOL_EXECUTION,
  TOOL_ERROR_TYPE,
} from "./tool-span-attributes.js";
import { formatTraceparent } from "./traceparent.js";
import type { PoolEventSpan, PoolSpanEvents } from "./pool-span-events.js";

const BATCH_SPAN_NAME = "toolpool.batch";

const batchSpanOptions = Object.freeze({ kind: SPAN_KIND_INTERNAL });

const maxStatusMessageLength = 512;

interface BatchTraceInfo {
  batchId: string;
  toolCallCount: number;
  toolExecution: ToolExecutionMode;
  sessionKey?: string | undefined;
}

export type CallExecution = "worker" | "inline" | "none";

/** Made only when the batch span records; the call spans follow its sampling decision. */
export class BatchTrace {
  readonly #api: OtelApi;
  readonly #tracer: OtelTracer;
  readonly #span: OtelSpan;
  readonly #context: OtelContext;
  readonly #sessionKey: string | undefined;
  readonly #batchId: string;
  readonly #poolSpans: PoolSpanEvents | undefined;
  /** Absent without {@link PoolSpanEvents}. */
  readonly #callSpans: Map<string, PoolEventSpan> | undefined;
  #errors = 0;

  constructor(api: OtelApi, tracer: OtelTracer, span: OtelSpan, info: BatchTraceInfo, poolSpans?: PoolSpanEvents) {
    this.#api = api;
    this.#tracer = tracer;
    this.#span = span;
    this.#sessionKey = info.sessionKey;
    this.#batchId = info.batchId;
    this.#poolSpans = poolSpans;
    this.#callSpans = poolSpans?.watch(info.batchId);
    // From the caller's active context: an application's agent-turn span becomes the batch's parent.
    this.#context = api.trace.setSpan(api.context.active(), span);
  }

  /** `undefined` when not recording (no provider, or not sampled), so an untraced batch pays for nothing more. */
  static start(api: OtelApi, tracer: OtelTracer, describe: () => BatchTraceInfo, poolSpans?: PoolSpanEvents): BatchTrace | undefined {
    const span = tracer.startSpan(BATCH_SPAN_NAME, batchSpanOptions, api.context.active());
    if (!span.isRecording()) {
      span.end();
      return undefined;
    }
    const info = describe();
    span.setAttribute(ATTR_BATCH_ID, info.batchId);
    span.setAttribute(ATTR_BATCH_TOOL_CALLS, info.toolCallCount);
    span.setAttribute(ATTR_TOOL_EXECUTION, info.toolExecution);
    if (info.sessionKey !== undefined) span.setAttribute(ATTR_SESSION, info.sessionKey);
    return new BatchTrace(api, tracer, span, info, poolSpans);
  }

  startCall(toolCall: ToolCall, description: string | undefined): CallTrace {
    const attributes: Record<string, string> = {
      [ATTR_GEN_AI_OPERATION_NAME]: "execute_tool",
      [ATTR_GEN_AI_TOOL_NAME]: toolCall.name,
      [ATTR_GEN_AI_TOOL_CALL_ID]: toolCall.id,
      [ATTR_GEN_AI_TOOL_TYPE]: "function",
    };
    if (description !== undefined) attributes[ATTR_GEN_AI_TOOL_DESCRIPTION] = description;
    if (this.#sessionKey !== undefined) attributes[ATTR_SESSION] = this.#sessionKey;
    const span = this.#tracer.startSpan(`execute_tool ${toolCall.name}`, { kind: SPAN_KIND_INTERNAL, attributes }, this.#context);
    this.#callSpans?.set(toolCall.id, { toolName: toolCall.name, addEvent: (name, eventAttributes) => span.addEvent(name, eventAttributes) });
    return new CallTrace(this.#api, span, this.#context, () => (this.#errors += 1));
  }

  end(outcome: { kind: "ok"; value: BatchOutcome } | { kind: "error"; error: unknown }): void {
    this.#poolSpans?.unwatch(this.#batchId);
    this.#span.setAttribute(ATTR_BATCH_ERRORS, this.#errors);
    if (outcome.kind === "error") {
      this.#span.recordException(outcome.error instanceof Error ? outcome.error : String(outcome.error));
      this.#span.setStatus({ code: SPAN_STATUS_ERROR, message: outcome.error instanceof Error ? outcome.error.message : String(outcome.error) });
    }
    this.#span.end();
  }
}

/** Ending it twice ends it once. */
export class CallTrace {
  readonly #api: OtelApi;
  readonly #span: OtelSpan;
  readonly #context: OtelContext;
  readonly #onError: () => void;
  #isEnded = false;
  #traceparent: string | undefined;

  constructor(api: OtelApi, span: OtelSpan, parentContext: OtelContext, onError: () => void) {
    this.#api = api;
    this.#span = span;
    this.#context = api.trace.setSpan(parentContext, span);
    this.#onError = onError;
  }

  /** What a worker (or a remote node) makes its parent. */
  get traceparent(): string {
    return (this.#traceparent ??= formatTraceparent(this.#span.spanContext()));
  }

  /** Runs an inline tool's execute with this span active, so its spans are children of the call's. */
  runInContext<T>(fn: () => T): T {
    return this.#api.context.with(this.#context, fn);
  }

  end(result: AgentToolResult<unknown>, isError: boolean, execution: CallExecution, durations?: CallDurations): void {
    if (this.#isEnded) return;
    this.#isEnded = true;
    const span = this.#span;
    span.setAttribute(ATTR_EXECUTION, execution);
    if (durations !== undefined) {
      span.setAttribute(ATTR_QUEUE_WAIT_MS, durations.queueWaitMs);
      span.setAttribute(ATTR_RUN_MS, durations.runMs);
      if (durations.threadId !== undefined) span.setAttribute(ATTR_THREAD_ID, durations.threadId);
      if (durations.node !== undefined) span.setAttribute(ATTR_NODE, durations.node);
    }
    if (isError) {
      this.#onError();
      span.setAttribute(ATTR_ERROR_TYPE, errorTypeOf(result));
      span.setStatus({ code: SPAN_STATUS_ERROR, message: statusMessageOf(result) });
    }
    span.end();
  }
}

/** A toolpool fault's code, else `"tool_error"`: a tool's own codes are not toolpool's. */
function errorTypeOf(result: AgentToolResult<unknown>): string {
  const code = (result.details as { code?: unknown } | null | undefined)?.code;
  return typeof code === "string" && Object.hasOwn(errorCodes, code) ? code : TOOL_ERROR_TYPE;
}

function statusMessageOf(result: AgentToolResult<unknown>): string {
  const text = result.content.find((block) => block.type === "text")?.text ?? "";
  return text.length > maxStatusMessageLength ? `${text.slice(0, maxStatusMessageLength - 1)}…` : text;
}
