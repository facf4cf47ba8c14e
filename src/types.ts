/** Public types: pi's shapes (pi 1.6 fields marked), declared structurally so values pass both ways. */

export interface TextContent {
  type: "text";
  text: string;
  textSignature?: string;
}

export interface ImageContent {
  type: "image";
  data: string;
  mimeType: string;
}

/** Reasoning content; ignored by the executor. */
export interface ThinkingContent {
  type: "thinking";
  thinking: string;
  thinkingSignature?: string;
  redacted?: boolean;
}

export interface ToolCall {
  type: "toolCall";
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  thoughtSignature?: string;
  /** pi 1.6: why the model's arguments could not be parsed; with `pi: "1.6"` the call fails validation with it. */
  argumentsError?: string;
}

/** Only `content` is read (and `stopReason` with `pi: "1.6"`); the other fields pass through to hooks untouched. */
export interface AssistantMessage {
  role: "assistant";
  content: (TextContent | ThinkingContent | ToolCall)[];
  /** pi 1.6: `"length"` (output token limit) fails every tool call unexecuted. */
  stopReason?: string;
  // An `any` index signature lets pi's AssistantMessage (an interface) be passed in.
  [field: string]: any;
}

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
  // An `any` index signature lets pi-ai's Usage (an interface) be assigned.
  [field: string]: any;
}

export interface AgentToolResult<TDetails = unknown> {
  content: (TextContent | ImageContent)[];
  details: TDetails;
  /** The agent should stop after this batch (only when every call sets it). */
  terminate?: boolean;
  /** pi 1.6: a machine-readable result for programmatic callers, not sent to the model. */
  structuredContent?: JsonValue;
  /** pi 1.6: carried onto the result message. */
  usage?: Usage;
  /** pi 1.6: reports a failure without throwing; with `pi: "0.73"` a field like any other. */
  isError?: boolean;
}

export type AgentToolUpdateCallback<TDetails = unknown> = (partialResult: AgentToolResult<TDetails>) => void;

export type ToolExecutionMode = "sequential" | "parallel";

/** A JSON Schema of a tool's arguments (TypeBox, pi 0.73.1's `TSchema`, pi 1.6.0's `object` parameters). */
// Only an `any` index signature accepts interfaces such as TypeBox's TSchema.
export type JsonSchema = { [keyword: string]: any };

/** A tool that runs on the main thread, as in pi. */
export interface AgentTool<TArgs = any, TDetails = any> {
  name: string;
  label: string;
  description: string;
  parameters: JsonSchema;
  /** Applied to raw arguments before validation. */
  prepareArguments?: (args: unknown) => TArgs;
  /** Throw on failure instead of encoding errors in `content`. */
  execute: (
    toolCallId: string,
    params: TArgs,
    signal?: AbortSignal,
    onUpdate?: AgentToolUpdateCallback<TDetails>,
  ) => Promise<AgentToolResult<TDetails>>;
  executionMode?: ToolExecutionMode;
  /** pi 1.6: the JSON Schema of `structuredContent` in successful results. */
  outputSchema?: object;
}

export interface WorkerToolContext<TDetails = unknown> {
  toolCallId: string;
  /** Aborted with the batch; backed by shared memory, so a synchronous loop polling `signal.aborted` sees it without yielding. */
  signal: AbortSignal;
  /** Streams a partial result to the coordinator; never throws. */
  onUpdate: AgentToolUpdateCallback<TDetails>;
  /** The call's `execute_tool` span (W3C `traceparent`) when traced; with `@opentelemetry/api` it is the active context too. */
  traceparent?: string;
  /** What the tool's `context` function computed on the main thread. */
  context?: unknown;
  /** Runs `exportName(input, ctx)` per input on idle threads only; an input not run (`ran: false`) is the caller's to do. */
  spread?<TOutput = unknown>(exportName: string, inputs: readonly unknown[]): Promise<SpreadOutcome<TOutput>[]>;
  /** True when a spread part should return what it has (another session waits); cheap to poll. */
  shouldYield?(): boolean;
}

export type SpreadOutcome<TOutput = unknown> =
  | { ok: true; value: TOutput }
  /** `ran`: false when the part never started. */
  | { ok: false; error: string; ran: boolean };

export type WorkerToolExecute<TArgs = any, TDetails = any> = (
  args: TArgs,
  ctx: WorkerToolContext<TDetails>,
) => Promise<AgentToolResult<TDetails>> | AgentToolResult<TDetails>;

export interface AgentContext {
  /** `""` unless given; optional, as pi 1.6's context has none. */
  systemPrompt?: string;
  messages: unknown[];
  tools?: AgentTool[];
}

/** Result of `beforeToolCall`: `{ block: true }` prevents execution. */
export interface BeforeToolCallResult {
  block?: boolean;
  reason?: string;
  /** pi 1.6: a blocked call's error result asks the batch to terminate. */
  terminate?: boolean;
}

/** Field-by-field override returned by `afterToolCall`; no deep merge. */
export interface AfterToolCallResult {
  content?: (TextContent | ImageContent)[];
  details?: unknown;
  isError?: boolean;
  terminate?: boolean;
  /** pi 1.6: replaces the structured content; `content` without it drops it. Ignored with `pi: "0.73"`. */
  structuredContent?: JsonValue;
  /** pi 1.6: replaces the result's usage. */
  usage?: Usage;
}

export interface BeforeToolCallContext {
  assistantMessage: AssistantMessage;
  toolCall: ToolCall;
  args: unknown;
  context: AgentContext;
}

export interface AfterToolCallContext extends BeforeToolCallContext {
  result: AgentToolResult<any>;
  isError: boolean;
}

export type BeforeToolCallHook = (
  context: BeforeToolCallContext,
  signal?: AbortSignal,
) => Promise<BeforeToolCallResult | undefined> | BeforeToolCallResult | undefined;

export type AfterToolCallHook = (
  context: AfterToolCallContext,
  signal?: AbortSignal,
) => Promise<AfterToolCallResult | undefined> | AfterToolCallResult | undefined;

export interface ToolResultMessage<TDetails = any> {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: (TextContent | ImageContent)[];
  details: TDetails;
  /** pi 1.6: present, maybe `undefined`, with `pi: "1.6"`. */
  usage?: Usage;
  isError: boolean;
  /** pi 1.6: absent for a call that did not run. */
  durationMs?: number;
  timestamp: number;
}

export interface BatchOutcome {
  /** One per tool call, in the assistant's order. */
  messages: ToolResultMessage[];
  /** True when the batch is non-empty and every finalized result set it. */
  terminate: boolean;
}
