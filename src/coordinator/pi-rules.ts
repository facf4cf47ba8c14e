/**
 * The rules in which pi 0.73.1 and pi 1.6.0 differ, one object per pi: the
 * stages ask the batch's rules, never which pi it is (spec: `pi-1.6.md`).
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
  /** Whether an aborted batch makes a call `Operation aborted` where pi 1.6 checks: before prepare, after `beforeToolCall`, before a parallel call runs. */
  readonly checksAbort: boolean;
  /** Whether partials sent after the execute settled are dropped (pi 1.6) or still emitted (pi 0.73.1). */
  readonly dropsLatePartials: boolean;
  /**
   * Whether a returned value is an error result (pi 1.6 reads `isError`).
   * Throws what that read throws, `null` and `undefined` under either pi
   * (docs/design.md, deliberate difference 4): the caller makes it the
   * call's error result, as pi 1.6 does.
   */
  isErrorResult(result: unknown): boolean;
  /** Throws the library's error for a schema it cannot compile. */
  compileSchema(schema: JsonSchema): void;
  /** Validates and coerces as this pi's pi-ai does, or throws pi-ai's text; `mayReturnInput`: valid arguments may come back as they are. */
  validate(toolCall: ToolCall, schema: JsonSchema, rawArguments: unknown, mayReturnInput: boolean): unknown;
  blockedResult(decision: BeforeToolCallResult): AgentToolResult<unknown>;
  applyOverride(result: AgentToolResult<unknown>, override: AfterToolCallResult): AgentToolResult<unknown>;
  /** Whether end events and messages carry `durationMs` (pi 1.6). */
  readonly reportsDuration: boolean;
  resultMessage(finalized: FinalizedCall): ToolResultMessage;
  /** The error text of a call that must not run (pi 1.6: a response cut off by the token limit); undefined when it runs. */
  unexecutedReason(assistantMessage: AssistantMessage, toolCall: ToolCall): string | undefined;
}

/** pi 1.6's text for a call an abort stopped. */
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
    // pi 0.73.1 drops every other field.
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
    // Structured content not replaced with the content may no longer match it.
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
    // pi's field order, for transcripts compared as text.
    return {
      role: "toolResult",
      toolCallId: toolCall.id,
      toolName: toolCall.name,
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

/** Read as pi 1.6 reads it, throwing as it throws for `null`. */
function readIsError(result: unknown): unknown {
  return (result as { isError?: unknown }).isError;
}

/** The rules of a pi. */
export function rulesOf(version: PiVersion): PiRules {
  return version === "1.6" ? pi16Rules : pi073Rules;
}
