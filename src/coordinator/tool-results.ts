import type { ErrorCode } from "../errors.js";
import type { AgentToolResult, ToolCall } from "../types.js";
import type { CallTiming } from "../contracts/call-timing.js";

/** A call whose result is final: after finalize, or an immediate outcome. */
export interface FinalizedCall {
  toolCall: ToolCall;
  result: AgentToolResult<unknown>;
  isError: boolean;
  /** When the call waited and ran; absent for a call that ended in preparation. */
  timing?: CallTiming;
  /** pi 1.6: how long the tool's execution took, on the end event and the message; absent for a call that did not run. */
  durationMs?: number;
}

/** A call's outcome of stage 2, execute. */
export interface ExecutedCall {
  result: AgentToolResult<unknown>;
  isError: boolean;
  /** When the call waited and ran. */
  timing: CallTiming | undefined;
  /** pi 1.6's `durationMs` of the call. */
  durationMs: number | undefined;
}

/** An executed call, final with the result and `isError` that stage 3 leaves (the executed ones where no hook changed them). */
export function finalizedCallOf(toolCall: ToolCall, executed: ExecutedCall, result = executed.result, isError = executed.isError): FinalizedCall {
  const finalized: FinalizedCall = { toolCall, result, isError };
  if (executed.timing !== undefined) finalized.timing = executed.timing;
  if (executed.durationMs !== undefined) finalized.durationMs = executed.durationMs;
  return finalized;
}

/**
 * pi's error result: the message as the only text, empty details. For faults
 * pi cannot have, `details.code` holds toolpool's stable code.
 */
export function createErrorToolResult(message: string, code?: ErrorCode): AgentToolResult<unknown> {
  return { content: [{ type: "text", text: message }], details: code === undefined ? {} : { code } };
}

/** A batch terminates only when it is non-empty and every finalized result asks for it. */
export function shouldTerminateBatch(finalized: readonly FinalizedCall[]): boolean {
  return finalized.length > 0 && finalized.every((call) => call.result.terminate === true);
}

/**
 * A partial result as it is now, for a delivery that happens later: a
 * structured clone, or the object itself when it cannot be cloned (a partial
 * holding a function, say), which is then delivered as it will be.
 */
export function snapshotOf<T>(partialResult: T): T {
  try {
    return structuredClone(partialResult);
  } catch {
    return partialResult;
  }
}
