/**
 * The rules in which pi 0.73.1 and pi 1.6.0 differ, one object per pi. The
 * batch pipeline (`batch-coordinator.ts`, `prepare-tool-call.ts`) is one copy
 * of the stage sequence; at each point where the two pis part ways it asks
 * the batch's rules, never which pi it is. The spec's `pi-1.6.md` lists the
 * rules one by one.
 *
 * @module
 */
import type { PiVersion } from "../options.js";
import type {
  AfterToolCallResult,
  AgentToolResult,
  AssistantMessage,
  BeforeToolCallResult,
  JsonSchema,
  ToolCall,
  ToolResultMessage,
} from "../types.js";
import { createErrorToolResult, type FinalizedCall } from "./tool-results.js";
import { compileArgumentValidator, validateToolArguments } from "./validation/pi-0.73/validate-arguments.js";
import { compileArgumentValidator16, validateToolArguments16 } from "./validation/pi-1.6/validate-arguments-16.js";

/** What a batch's pipeline asks of its pi at the points where the pis differ. */
export interface PiRules {
  readonly version: PiVersion;
  /**
   * Whether an aborted batch signal turns a call into an immediate
   * `Operation aborted` result where pi 1.6 checks it: as the call's
   * preparation begins, once `beforeToolCall` has returned, and (parallel
   * mode) as a prepared call would start executing.
   */
  readonly checksAbort: boolean;
  /**
   * Whether partial results a tool sends after its execute settled are
   * dropped (pi 1.6), or still emitted (pi 0.73.1, which awaits only those
   * sent before).
   */
  readonly dropsLatePartials: boolean;
  /**
   * Whether a value the tool returned (did not throw) is an error result:
   * pi 1.6 reads its `isError`. Throws what that read throws: for a value
   * that is no result at all (`null`, `undefined`) under either pi (pi 0.73.1
   * would reject the whole batch a step later: docs/design.md,
   * deliberate difference 4), and for a throwing `isError` getter under pi 1.6. The
   * caller makes the throw the call's error result, as pi 1.6 does.
   */
  isErrorResult(result: unknown): boolean;
  /** Compiles the validator of a tool's schema; throws the library's error for a schema it cannot compile. */
  compileSchema(schema: JsonSchema): void;
  /**
   * Validates (and coerces) a call's arguments as this pi's pi-ai does, or
   * throws an `Error` with pi-ai's text. `mayReturnInput`: nobody but a copying
   * consumer sees the result, so valid arguments may be returned as they are.
   */
  validate(toolCall: ToolCall, schema: JsonSchema, rawArguments: unknown, mayReturnInput: boolean): unknown;
  /** The immediate result of a call that `beforeToolCall` blocked. */
  blockedResult(decision: BeforeToolCallResult): AgentToolResult<unknown>;
  /** The result after `afterToolCall`'s override, field by field. */
  applyOverride(result: AgentToolResult<unknown>, override: AfterToolCallResult): AgentToolResult<unknown>;
  /** Whether an executed call's end event and message carry its `durationMs` (pi 1.6). */
  readonly reportsDuration: boolean;
  /** Stage 5's message for a finalized call. */
  resultMessage(finalized: FinalizedCall): ToolResultMessage;
  /**
   * The error text of a call whose assistant message's tool calls must not
   * run (pi 1.6: a response cut off by the output token limit), or
   * `undefined` when they run.
   */
  unexecutedReason(assistantMessage: AssistantMessage, toolCall: ToolCall): string | undefined;
}

/** pi's text of a call stopped by an aborted batch (pi 1.6). */
export const abortedText = "Operation aborted";

const defaultBlockReason = "Tool execution was blocked";

/** `@mariozechner/pi-agent-core` 0.73.1. */
const pi073Rules: PiRules = Object.freeze({
  version: "0.73",
  checksAbort: false,
  dropsLatePartials: false,
  reportsDuration: false,
  isErrorResult(result: unknown): boolean {
    if (result === null || result === undefined) readIsError(result);
    return false;
  },
  compileSchema(schema: JsonSchema): void {
    compileArgumentValidator(schema);
  },
  validate(toolCall: ToolCall, schema: JsonSchema, rawArguments: unknown, mayReturnInput: boolean): unknown {
    return validateToolArguments(toolCall.name, schema, rawArguments, mayReturnInput);
  },
  blockedResult(decision: BeforeToolCallResult): AgentToolResult<unknown> {
    return createErrorToolResult(decision.reason || defaultBlockReason);
  },
  applyOverride(result: AgentToolResult<unknown>, override: AfterToolCallResult): AgentToolResult<unknown> {
    // A new result of these three fields: pi 0.73.1 drops every other one.
    return {
      content: override.content ?? result.content,
      details: override.details ?? result.details,
      terminate: override.terminate ?? result.terminate,
    };
  },
  resultMessage({ toolCall, result, isError }: FinalizedCall): ToolResultMessage {
    return {
      role: "toolResult",
      toolCallId: toolCall.id,
      toolName: toolCall.name,
      content: result.content,
      details: result.details,
      isError,
      timestamp: Date.now(),
    };
  },
  unexecutedReason: (): undefined => undefined,
});

/** `@earendil-works/pi-agent-core` 1.6.0 with `@earendil-works/pi-ai` 1.6.0. */
const pi16Rules: PiRules = Object.freeze({
  version: "1.6",
  checksAbort: true,
  dropsLatePartials: true,
  reportsDuration: true,
  isErrorResult: (result: unknown): boolean => readIsError(result) === true,
  compileSchema(schema: JsonSchema): void {
    compileArgumentValidator16(schema);
  },
  validate(toolCall: ToolCall, schema: JsonSchema, rawArguments: unknown): unknown {
    return validateToolArguments16(toolCall.name, schema, rawArguments, toolCall.argumentsError);
  },
  blockedResult(decision: BeforeToolCallResult): AgentToolResult<unknown> {
    const result = createErrorToolResult(decision.reason || defaultBlockReason);
    if (decision.terminate === true) result.terminate = true;
    return result;
  },
  applyOverride(result: AgentToolResult<unknown>, override: AfterToolCallResult): AgentToolResult<unknown> {
    // Every other field of the result is kept. Structured content not
    // replaced along with the content may no longer match it: it goes.
    const structuredContent = override.structuredContent ?? (override.content ? undefined : result.structuredContent);
    const next: AgentToolResult<unknown> = {
      ...result,
      content: override.content ?? result.content,
      details: override.details ?? result.details,
      usage: override.usage ?? result.usage,
      terminate: override.terminate ?? result.terminate,
    };
    if (structuredContent === undefined) delete next.structuredContent;
    else next.structuredContent = structuredContent;
    return next;
  },
  resultMessage({ toolCall, result, isError, durationMs }: FinalizedCall): ToolResultMessage {
    // pi's fields in pi's order (`durationMs` before `timestamp`), for transcripts compared as text.
    return {
      role: "toolResult",
      toolCallId: toolCall.id,
      toolName: toolCall.name,
      // Untyped tools can return results without content: never a null in the transcript.
      content: result.content ?? [],
      details: result.details,
      usage: result.usage,
      isError,
      ...(durationMs === undefined ? {} : { durationMs }),
      timestamp: Date.now(),
    };
  },
  unexecutedReason(assistantMessage: AssistantMessage, toolCall: ToolCall): string | undefined {
    if (assistantMessage.stopReason !== "length") return undefined;
    return `Tool call "${toolCall.name}" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.`;
  },
});

/** A returned value's `isError`, read as pi 1.6 reads it: "Cannot read properties of null (reading 'isError')" for no result at all. */
function readIsError(result: unknown): unknown {
  return (result as { isError?: unknown }).isError;
}

/** The rules of a pi. */
export function rulesOf(version: PiVersion): PiRules {
  return version === "1.6" ? pi16Rules : pi073Rules;
}
