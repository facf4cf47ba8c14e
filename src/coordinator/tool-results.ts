import type { ErrorCode } from "../errors.js";
import type { AgentToolResult, ToolCall } from "../types.js";
import type { CallTiming } from "../contracts/call-timing.js";

/** A call whose result is final: after finalize, or an immediate outcome. */
export interface FinalizedCall {
  toolCall: ToolCall;
  result: AgentToolResult<unknown>;
  isError: boolean;
  /** Absent for a call that did not run. */
  timing?: CallTiming;
  /** pi 1.6's, on the end event and the message; absent for a call that did not run. */
  durationMs?: number;
}

/** A call's outcome of stage 2, execute. */
export interface ExecutedCall {
  result: AgentToolResult<unknown>;
  isError: boolean;
  timing: CallTiming | undefined;
  /** pi 1.6's. */
  durationMs: number | undefined;
}

/** An executed call with the result stage 3 leaves. */
export function finalizedCallOf(toolCall: ToolCall, executed: ExecutedCall, result = executed.result, isError = executed.isError): FinalizedCall {
  const finalized: FinalizedCall = { toolCall, result, isError };
  if (executed.timing !== undefined) finalized.timing = executed.timing;
  if (executed.durationMs !== undefined) finalized.durationMs = executed.durationMs;
  return finalized;
}

/** pi's error result; for faults pi cannot have, `details.code` holds toolpool's code. */
export function createErrorToolResult(message: string, code?: ErrorCode): AgentToolResult<unknown> {
  return { content: [{ type: "text", text: message }], details: code === undefined ? {} : { code } };
}

/** A batch terminates only when it is non-empty and every finalized result asks for it. */
export function shouldTerminateBatch(finalized: readonly FinalizedCall[]): boolean {
  return finalized.length > 0 && finalized.every((call) => call.result.terminate === true);
}

/** A partial as it is now, for a later delivery; one that cannot be cloned goes out as it will be then. */
export function snapshotOf<T>(partialResult: T): T {
  try {
    return structuredClone(partialResult);
  } catch {
    return partialResult;
  }
}
