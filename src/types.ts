/**
 * Public types of toolpool. The message, tool and hook shapes are pi's
 * (`@mariozechner/pi-agent-core` 0.73.1, with the fields pi 1.6.0 added, each
 * marked so), declared structurally so that pi's own values can be passed in
 * and toolpool's values can be handed to pi.
 *
 * @module
 */

/** Plain text content of a message or tool result. */
export interface TextContent {
  type: "text";
  text: string;
  textSignature?: string;
}

/** Base64 image content of a message or tool result. */
export interface ImageContent {
  type: "image";
  data: string;
  mimeType: string;
}

/** Reasoning content of an assistant message; ignored by the executor. */
export interface ThinkingContent {
  type: "thinking";
  thinking: string;
  thinkingSignature?: string;
  redacted?: boolean;
}

/** One tool call block of an assistant message. */
export interface ToolCall {
  type: "toolCall";
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  thoughtSignature?: string;
  /**
   * pi 1.6: why the model's arguments could not be parsed. A call carrying it
   * fails validation with this text (with `pi: "1.6"`).
   */
  argumentsError?: string;
}

/**
 * The assistant message whose tool calls form a batch. Only `content` is read
 * (and, with `pi: "1.6"`, `stopReason`); the other fields of pi's
 * `AssistantMessage` pass through to hooks untouched.
 */
export interface AssistantMessage {
  role: "assistant";
  content: (TextContent | ThinkingContent | ToolCall)[];
  /** pi 1.6: `"length"` (the output token limit cut the response) fails every tool call unexecuted. */
  stopReason?: string;
  // an `any` index signature is what lets pi's AssistantMessage (an interface) be passed in
  [field: string]: any;
}

/** A JSON value (pi 1.6's `JsonValue`). */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { [key: string]: JsonValue };

/** Token usage and cost of a tool's own model calls (pi-ai 1.6's `Usage`). */
export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  cacheWrite1h?: number;
  reasoning?: number;
  totalTokens: number;
  cost: {
    input: number;
    output: number;
    cacheRead: number;
    cacheWrite: number;
    total: number;
    /** pi-ai 1.6: whether `total` is the billed cost the provider reported. */
    totalFromProvider?: boolean;
    [field: string]: unknown;
  };
  // an `any` index signature is what lets pi-ai's Usage (an interface) be assigned
  [field: string]: any;
}

/** What a tool returns: pi's `AgentToolResult`. */
export interface AgentToolResult<TDetails = unknown> {
  /** Text or image content returned to the model. */
  content: (TextContent | ImageContent)[];
  /** Structured details for logs or UI rendering. */
  details: TDetails;
  /** Hint that the agent should stop after this batch (only when every call sets it). */
  terminate?: boolean;
  /** pi 1.6: a machine-readable result for programmatic callers; not sent to the model. */
  structuredContent?: JsonValue;
  /** pi 1.6: usage of the tool's own execution; carried onto the result message. */
  usage?: Usage;
  /**
   * pi 1.6: reports a failure without throwing (the call's `isError`). With
   * `pi: "0.73"` it is a field like any other.
   */
  isError?: boolean;
}

/** Callback through which a tool streams partial results. */
export type AgentToolUpdateCallback<TDetails = unknown> = (partialResult: AgentToolResult<TDetails>) => void;

/** Per-call execution mode override, as in pi. */
export type ToolExecutionMode = "sequential" | "parallel";

/**
 * A JSON Schema object describing a tool's arguments (TypeBox schemas, pi
 * 0.73.1's `TSchema` and pi 1.6.0's `object` parameters qualify: the index
 * signature's `any` is what lets an interface without one be assigned).
 */
// only an `any` index signature accepts interfaces such as TypeBox's TSchema
export type JsonSchema = { [keyword: string]: any };

/**
 * A tool that runs on the main thread, exactly as in pi: pi's `AgentTool`.
 */
export interface AgentTool<TArgs = any, TDetails = any> {
  name: string;
  label: string;
  description: string;
  parameters: JsonSchema;
  /** Compatibility shim applied to raw arguments before validation. */
  prepareArguments?: (args: unknown) => TArgs;
  /** Execute the call. Throw on failure instead of encoding errors in `content`. */
  execute: (
    toolCallId: string,
    params: TArgs,
    signal?: AbortSignal,
    onUpdate?: AgentToolUpdateCallback<TDetails>,
  ) => Promise<AgentToolResult<TDetails>>;
  executionMode?: ToolExecutionMode;
  /** pi 1.6: the JSON Schema of `structuredContent` in successful results (read and bash of pi's coding tools declare one). */
  outputSchema?: object;
}

/** The `ctx` a worker tool's execute function receives inside a worker thread. */
export interface WorkerToolContext<TDetails = unknown> {
  /** The id of the tool call being executed. */
  toolCallId: string;
  /**
   * Aborted when the batch is aborted. Its `aborted` flag is backed by shared
   * memory, so a synchronous loop that polls `signal.aborted` (or calls
   * `signal.throwIfAborted()`) sees an abort without yielding to the event loop.
   */
  signal: AbortSignal;
  /** Streams a partial result to the coordinator; never throws. */
  onUpdate: AgentToolUpdateCallback<TDetails>;
  /**
   * The W3C `traceparent` of the call's `execute_tool` span, present when the
   * call is traced. With `@opentelemetry/api` installed, that span context is
   * also the active context while `execute` runs (in the worker's own
   * context manager, if the thread registered one).
   */
  traceparent?: string;
  /** The value the tool's `context` function computed for this call on the main thread (see `workerTool`); absent for tools without one. */
  context?: unknown;
  /**
   * Runs `exportName` of the tool's own module on the pool's idle threads,
   * once per input (at most 64), each as `exportName(input, ctx)` with a
   * `ctx` of its own, and resolves with one outcome per input, in order.
   * Only threads idle at the request are used: an input that finds none is
   * not run (`ran: false`), so the caller must be able to do that work
   * itself. A part that throws, crashes its thread or is stopped is an
   * outcome with its error, never a failure of the call. Parts see their
   * signal abort when the call is aborted, and are stopped when the call
   * ends; a part cannot spread further. Present in worker tools run by a
   * toolpool pool; absent elsewhere (a tool must do without it).
   */
  spread?<TOutput = unknown>(exportName: string, inputs: readonly unknown[]): Promise<SpreadOutcome<TOutput>[]>;
  /**
   * Whether the pool asks this call to give its thread back: true once the
   * call runs as a part of a spread call ({@link spread}) and calls of
   * another session wait for a thread. A part that leaves work its caller
   * can do should then return what it has at its next step (grep's parts
   * stop before their next file). A part that has not returned within the
   * pool's `abortGraceMs` of being asked, while such a call still waits, is
   * preempted: its thread is terminated, and its outcome is a
   * `TP_ERR_ABORTED` error. One read of shared memory: cheap to poll in a
   * loop. Never true for a call that is not a part. Present in worker tools
   * run by a toolpool pool; absent elsewhere.
   */
  shouldYield?(): boolean;
}

/** One part's outcome in {@link WorkerToolContext.spread}. */
export type SpreadOutcome<TOutput = unknown> =
  | { ok: true; value: TOutput }
  /** `ran`: false when the part never started (no idle thread, the pool closing). */
  | { ok: false; error: string; ran: boolean };

/**
 * The function a worker tool module exports: runs inside a worker thread.
 */
export type WorkerToolExecute<TArgs = any, TDetails = any> = (
  args: TArgs,
  ctx: WorkerToolContext<TDetails>,
) => Promise<AgentToolResult<TDetails>> | AgentToolResult<TDetails>;

/** Context of the agent handed to hooks (pi's `AgentContext`). */
export interface AgentContext {
  /** The runtime's system prompt (`""` unless given); optional in the type, as pi 1.6's context has none. */
  systemPrompt?: string;
  messages: unknown[];
  tools?: AgentTool[];
}

/** Result of `beforeToolCall`: `{ block: true }` prevents execution. */
export interface BeforeToolCallResult {
  block?: boolean;
  reason?: string;
  /** pi 1.6: a blocked call's error result asks the batch to terminate (with `pi: "1.6"`). */
  terminate?: boolean;
}

/** Field-by-field override returned by `afterToolCall`; no deep merge. */
export interface AfterToolCallResult {
  content?: (TextContent | ImageContent)[];
  details?: unknown;
  isError?: boolean;
  terminate?: boolean;
  /**
   * pi 1.6: replaces the structured content; `content` given without it drops
   * it (it may no longer match). With `pi: "0.73"`, ignored.
   */
  structuredContent?: JsonValue;
  /** pi 1.6: replaces the result's usage. With `pi: "0.73"`, ignored. */
  usage?: Usage;
}

/** What `beforeToolCall` receives. */
export interface BeforeToolCallContext {
  assistantMessage: AssistantMessage;
  /** The raw tool call block from `assistantMessage.content`. */
  toolCall: ToolCall;
  /** Validated (and coerced) arguments. */
  args: unknown;
  context: AgentContext;
}

/** What `afterToolCall` receives. */
export interface AfterToolCallContext extends BeforeToolCallContext {
  /** The executed result before any override. */
  result: AgentToolResult<any>;
  isError: boolean;
}

/** pi's `beforeToolCall` hook. */
export type BeforeToolCallHook = (
  context: BeforeToolCallContext,
  signal?: AbortSignal,
) => Promise<BeforeToolCallResult | undefined> | BeforeToolCallResult | undefined;

/** pi's `afterToolCall` hook. */
export type AfterToolCallHook = (
  context: AfterToolCallContext,
  signal?: AbortSignal,
) => Promise<AfterToolCallResult | undefined> | AfterToolCallResult | undefined;

/** A tool result message, built once per call. */
export interface ToolResultMessage<TDetails = any> {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: (TextContent | ImageContent)[];
  details: TDetails;
  /** pi 1.6: the result's usage (the key is present, maybe `undefined`, with `pi: "1.6"`). */
  usage?: Usage;
  isError: boolean;
  /** pi 1.6: milliseconds the tool's execution took; absent for a call that did not run. */
  durationMs?: number;
  timestamp: number;
}

/** The outcome of one batch. */
export interface BatchOutcome {
  /** One tool result message per tool call, in the assistant's order. */
  messages: ToolResultMessage[];
  /** True when the batch is non-empty and every finalized result set `terminate: true`. */
  terminate: boolean;
}
