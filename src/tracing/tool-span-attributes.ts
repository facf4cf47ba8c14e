/** Span attribute names: OpenTelemetry's GenAI conventions for `execute_tool` spans, plus toolpool's own (docs/guide.md). */

export const ATTR_GEN_AI_OPERATION_NAME = "gen_ai.operation.name";
export const ATTR_GEN_AI_TOOL_NAME = "gen_ai.tool.name";
export const ATTR_GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id";
export const ATTR_GEN_AI_TOOL_TYPE = "gen_ai.tool.type";
export const ATTR_GEN_AI_TOOL_DESCRIPTION = "gen_ai.tool.description";
/** A toolpool fault's code (`TP_ERR_TIMEOUT`, …), else `"tool_error"`. */
export const ATTR_ERROR_TYPE = "error.type";

export const ATTR_BATCH_ID = "toolpool.batch.id";
export const ATTR_BATCH_TOOL_CALLS = "toolpool.batch.tool_calls";
export const ATTR_BATCH_ERRORS = "toolpool.batch.errors";
export const ATTR_TOOL_EXECUTION = "toolpool.tool_execution";
export const ATTR_SESSION = "toolpool.session";
/** `"worker"`, `"inline"` (the main thread), or `"none"` (ended in preparation). */
export const ATTR_EXECUTION = "toolpool.execution";
export const ATTR_QUEUE_WAIT_MS = "toolpool.queue_wait_ms";
export const ATTR_RUN_MS = "toolpool.run_ms";
export const ATTR_THREAD_ID = "toolpool.thread.id";
export const ATTR_NODE = "toolpool.node";

export const TOOL_ERROR_TYPE = "tool_error";
