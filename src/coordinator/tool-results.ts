import type { ErrorCode } from "../errors.js";
import type { CallTiming } from "../workers/pool-contract.js";
import type { AgentToolResult, ToolCall, ToolResultMessage } from "../types.js";

/** A call whose result is final: after finalize, or an immediate outcome. */
export interface FinalizedCall {
  toolCall: ToolCall;
  result: AgentToolResult<unknown>;
  isError: boolean;
  /** When the call waited and ran; absent for a call that ended in preparation. */
  timing?: CallTiming;
}

/**
 * pi's error result: the message as the only text, empty details. For faults
 * pi cannot have, `details.code` holds toolpool's stable code.
 */
export function createErrorToolResult(message: string, code?: ErrorCode): AgentToolResult<unknown> {
  return { content: [{ type: "text", text: message }], details: code === undefined ? {} : { code } };
}

export function createToolResultMessage(finalized: FinalizedCall): ToolResultMessage {
  return toolResultMessage(finalized.toolCall, finalized.result, finalized.isError);
}

/** Stage 5's message for a call and its final result. */
export function toolResultMessage(toolCall: ToolCall, result: AgentToolResult<unknown>, isError: boolean): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: toolCall.id,
    toolName: toolCall.name,
    content: result.content,
    details: result.details,
    isError,
    timestamp: Date.now(),
  };
}

/** A batch terminates only when it is non-empty and every finalized result asks for it. */
export function shouldTerminateBatch(finalized: readonly FinalizedCall[]): boolean {
  return finalized.length > 0 && finalized.every((call) => call.result.terminate === true);
}
