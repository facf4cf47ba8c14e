/** The events of a batch (pi's shapes, unchanged) and the runtime-wide events. */
import type { AgentToolResult, BatchOutcome, ToolResultMessage } from "./types.js";

/** Emitted when a call enters preparation; `args` are the raw call arguments. */
export interface ToolExecutionStartEvent {
  type: "tool_execution_start";
  toolCallId: string;
  toolName: string;
  args: unknown;
}

/** Emitted for every partial result a tool sends while it runs. */
export interface ToolExecutionUpdateEvent {
  type: "tool_execution_update";
  toolCallId: string;
  toolName: string;
  args: unknown;
  partialResult: AgentToolResult<unknown>;
}

/** Emitted once per call, when its result is final (completion order in a parallel batch). */
export interface ToolExecutionEndEvent {
  type: "tool_execution_end";
  toolCallId: string;
  toolName: string;
  result: AgentToolResult<unknown>;
  isError: boolean;
  /** pi 1.6: milliseconds the tool's execution took (worker tools: on their thread); absent for a call that did not run. */
  durationMs?: number;
}

/** Emitted for each tool result message, in call order, after every call finished. */
export interface MessageStartEvent {
  type: "message_start";
  message: ToolResultMessage;
}

export interface MessageEndEvent {
  type: "message_end";
  message: ToolResultMessage;
}

/** Any event a batch emits, exactly as pi's agent loop emits it. */
export type BatchEvent = ToolExecutionStartEvent | ToolExecutionUpdateEvent | ToolExecutionEndEvent | MessageStartEvent | MessageEndEvent;

/** The sink of a batch's events; awaited like pi awaits its `emit`. */
export type EmitFunction = (event: BatchEvent) => void | Promise<void>;

export interface EventMeta {
  /** Unique within the runtime (`"b1"`, `"b2"`, …). */
  batchId: string;
  /** On `tool_execution_end` of an executed call: milliseconds it waited for a thread (0 inline); absent if it ended in preparation. */
  queueWaitMs?: number;
  /** On `tool_execution_end` of an executed call: milliseconds it ran. */
  runMs?: number;
  /** On `tool_execution_end` of a worker call that reached a thread: that thread's id. */
  threadId?: number;
  /** On `tool_execution_end` of a call run by a node of a fleet: that node. */
  node?: string;
  /** On every event of a batch with a `sessionKey`: that key. */
  sessionKey?: string;
}

export interface BatchStartEvent {
  type: "batch_start";
  toolCallCount: number;
}

export interface BatchEndEvent extends BatchOutcome {
  type: "batch_end";
}

/**
 * The events of `runtime.on(...)`. `listener_error`: a listener threw (it never breaks a batch); `pool_error`: a worker
 * failure that belonged to no call; `fleet_call`: a remote call's end, for metrics.
 */
export interface RuntimeEvents {
  tool_execution_start: (event: ToolExecutionStartEvent, meta: EventMeta) => void;
  tool_execution_update: (event: ToolExecutionUpdateEvent, meta: EventMeta) => void;
  tool_execution_end: (event: ToolExecutionEndEvent, meta: EventMeta) => void;
  message_start: (event: MessageStartEvent, meta: EventMeta) => void;
  message_end: (event: MessageEndEvent, meta: EventMeta) => void;
  batch_start: (event: BatchStartEvent, meta: EventMeta) => void;
  batch_end: (event: BatchEndEvent, meta: EventMeta) => void;
  listener_error: (error: unknown, eventType: string) => void;
  pool_error: (error: unknown) => void;
  fleet_call: (record: RemoteCallRecord) => void;
}

/** The record of a `fleet_call` event. */
export interface RemoteCallRecord {
  tool: string;
  /** `ok`, `error`, or the fault's code in lower case (`tp_err_node_lost`). */
  outcome: string;
  /** Round trip minus the node's own time, in seconds; absent when no node answered. */
  overheadSeconds: number | undefined;
}
