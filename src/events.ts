/** The events of a batch (pi's shapes, unchanged) and the runtime-wide events. */
import type { AgentToolResult, BatchOutcome, ToolResultMessage } from "./types.js";

/** `args` are the raw call arguments. */
export interface ToolExecutionStartEvent {
  type: "tool_execution_start";
  toolCallId: string;
  toolName: string;
  args: unknown;
}

export interface ToolExecutionUpdateEvent {
  type: "tool_execution_update";
  toolCallId: string;
  toolName: string;
  args: unknown;
  partialResult: AgentToolResult<unknown>;
}

/** Once per call, in completion order. */
export interface ToolExecutionEndEvent {
  type: "tool_execution_end";
  toolCallId: string;
  toolName: string;
  result: AgentToolResult<unknown>;
  isError: boolean;
  /** pi 1.6: absent for a call that did not run; worker tools measure on their thread. */
  durationMs?: number;
}

/** In call order, after every call finished. */
export interface MessageStartEvent {
  type: "message_start";
  message: ToolResultMessage;
}

export interface MessageEndEvent {
  type: "message_end";
  message: ToolResultMessage;
}

export type BatchEvent = ToolExecutionStartEvent | ToolExecutionUpdateEvent | ToolExecutionEndEvent | MessageStartEvent | MessageEndEvent;

/** Awaited like pi awaits its `emit`. */
export type EmitFunction = (event: BatchEvent) => void | Promise<void>;

export interface EventMeta {
  /** Unique within the runtime (`"b1"`, `"b2"`, …). */
  batchId: string;
  /** On `tool_execution_end` of an executed call; 0 inline. */
  queueWaitMs?: number;
  runMs?: number;
  /** On `tool_execution_end` of a worker call that reached a thread. */
  threadId?: number;
  /** On `tool_execution_end` of a fleet call. */
  node?: string;
  sessionKey?: string;
}

export interface BatchStartEvent {
  type: "batch_start";
  toolCallCount: number;
}

export interface BatchEndEvent extends BatchOutcome {
  type: "batch_end";
}

/** `listener_error`: a listener threw (never breaks a batch); `pool_error`: a worker failure of no call. */
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

export interface RemoteCallRecord {
  tool: string;
  /** `ok`, `error`, or the fault's code in lower case (`tp_err_node_lost`). */
  outcome: string;
  /** Round trip minus the node's own time, in seconds; absent when no node answered. */
  overheadSeconds: number | undefined;
}
