/**
 * The attribute names of toolpool's spans: OpenTelemetry's GenAI semantic
 * conventions for tool execution (`execute_tool` spans), plus toolpool's own
 * under `toolpool.`.
 *
 * @module
 */

/** `gen_ai.operation.name`: `"execute_tool"` on every call span. */
export const ATTR_GEN_AI_OPERATION_NAME = "gen_ai.operation.name";
/** `gen_ai.tool.name`. */
export const ATTR_GEN_AI_TOOL_NAME = "gen_ai.tool.name";
/** `gen_ai.tool.call.id`: the model's id of the call. */
export const ATTR_GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id";
/** `gen_ai.tool.type`: `"function"`, a tool the application runs itself. */
export const ATTR_GEN_AI_TOOL_TYPE = "gen_ai.tool.type";
/** `gen_ai.tool.description`. */
export const ATTR_GEN_AI_TOOL_DESCRIPTION = "gen_ai.tool.description";
/** `error.type`: a toolpool fault's code (`TP_ERR_TIMEOUT`, …), else `"tool_error"`. */
export const ATTR_ERROR_TYPE = "error.type";

/** The batch's id within its runtime (`"b1"`, …). */
export const ATTR_BATCH_ID = "toolpool.batch.id";
/** Tool calls in the batch. */
export const ATTR_BATCH_TOOL_CALLS = "toolpool.batch.tool_calls";
/** Calls of the batch that ended with an error result. */
export const ATTR_BATCH_ERRORS = "toolpool.batch.errors";
/** `"parallel"` or `"sequential"`, as the batch ran. */
export const ATTR_TOOL_EXECUTION = "toolpool.tool_execution";
/** The session the batch belongs to, when it names one. */
export const ATTR_SESSION = "toolpool.session";
/** Where the call ran: `"worker"` (the pool), `"inline"` (the main thread), `"none"` (ended in preparation). */
export const ATTR_EXECUTION = "toolpool.execution";
/** Milliseconds the call waited for a thread. */
export const ATTR_QUEUE_WAIT_MS = "toolpool.queue_wait_ms";
/** Milliseconds the call ran (on its thread, or inline). */
export const ATTR_RUN_MS = "toolpool.run_ms";
/** The worker thread's id. */
export const ATTR_THREAD_ID = "toolpool.thread.id";
/** The node of a fleet that ran the call. */
export const ATTR_NODE = "toolpool.node";

/** `error.type` of an error result that carries no toolpool code. */
export const TOOL_ERROR_TYPE = "tool_error";
