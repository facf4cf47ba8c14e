import { describeThrown } from "../errors.js";
import type { AfterToolCallHook, AgentContext, AgentToolResult, AssistantMessage, BeforeToolCallHook, ToolCall } from "../types.js";
import type { CallTrace } from "../tracing/batch-trace.js";
import { abortedText, type PiRules } from "./pi-rules.js";
import type { RegisteredTool } from "./tool-registry.js";
import { createErrorToolResult } from "./tool-results.js";

/** A call ready to execute; in a traced batch, with its span (ended once the call is finalized). */
export interface PreparedCall {
  kind: "prepared";
  toolCall: ToolCall;
  entry: RegisteredTool;
  args: unknown;
  callTrace?: CallTrace;
}

/** A call that ended in stage 1 with an error result: it is final as it is. */
export interface ImmediateCall {
  kind: "immediate";
  toolCall: ToolCall;
  result: AgentToolResult<unknown>;
  isError: true;
}

/** The outcome of stage 1. */
export type Preparation = PreparedCall | ImmediateCall;

/** What stage 1 needs of its batch. */
export interface PrepareScope {
  registry: ReadonlyMap<string, RegisteredTool>;
  assistantMessage: AssistantMessage;
  context: AgentContext;
  beforeToolCall: BeforeToolCallHook | undefined;
  /** Only whether there is one: a batch without hooks may share a worker call's arguments (see {@link prepareToolCall}). */
  afterToolCall: AfterToolCallHook | undefined;
  signal: AbortSignal | undefined;
  /** The pi whose rules the batch follows. */
  rules: PiRules;
}

/**
 * Stage 1, prepare: (pi 1.6: an aborted batch ends the call here) find the
 * tool, apply its `prepareArguments`, validate with coercion, then ask
 * `beforeToolCall` (pi 1.6: an abort meanwhile wins over its answer). Never
 * throws: anything thrown here is an immediate error result with the thrown
 * message. Synchronous when there is no `beforeToolCall`.
 */
export function prepareToolCall(scope: PrepareScope, toolCall: ToolCall): Preparation | Promise<Preparation> {
  const { beforeToolCall } = scope;
  const preparation = prepareWithoutHook(scope, toolCall);
  if (preparation.kind === "immediate" || beforeToolCall === undefined) return preparation;
  return askBeforeToolCall(scope, beforeToolCall, preparation);
}

/** Stage 1 of a batch without `beforeToolCall`: synchronous. */
export function prepareWithoutHook(scope: PrepareScope, toolCall: ToolCall): Preparation {
  const { rules, signal } = scope;
  if (rules.checksAbort && signal?.aborted) return immediate(toolCall, createErrorToolResult(abortedText));
  // No hook sees the validated arguments: a worker call may then get the
  // call's own object when it is valid as it is, as the trip to the worker
  // copies it anyway and nobody could tell.
  const mayReturnInput = scope.beforeToolCall === undefined && scope.afterToolCall === undefined;
  return prepareArguments(scope, toolCall, mayReturnInput);
}

async function askBeforeToolCall(scope: PrepareScope, beforeToolCall: BeforeToolCallHook, preparation: PreparedCall): Promise<Preparation> {
  const { toolCall } = preparation;
  const { rules, signal } = scope;
  try {
    const decision = await beforeToolCall(
      { assistantMessage: scope.assistantMessage, toolCall, args: preparation.args, context: scope.context },
      signal,
    );
    if (rules.checksAbort && signal?.aborted) return immediate(toolCall, createErrorToolResult(abortedText));
    return decision?.block ? immediate(toolCall, rules.blockedResult(decision)) : preparation;
  } catch (error) {
    return immediate(toolCall, createErrorToolResult(describeThrown(error)));
  }
}

/** Finds the tool, applies its `prepareArguments` and validates as the batch's pi does. Never throws. */
function prepareArguments(scope: PrepareScope, toolCall: ToolCall, mayReturnInputToWorker: boolean): Preparation {
  const entry = scope.registry.get(toolCall.name);
  if (entry === undefined) {
    return immediate(toolCall, createErrorToolResult(`Tool ${toolCall.name} not found`));
  }
  try {
    const { tool } = entry;
    // The shim's output is only validated: hooks and events keep the raw call.
    const rawArgs = tool.prepareArguments === undefined ? toolCall.arguments : tool.prepareArguments(toolCall.arguments);
    const mayReturnInput = mayReturnInputToWorker && entry.kind === "worker";
    return { kind: "prepared", toolCall, entry, args: scope.rules.validate(toolCall, tool.parameters, rawArgs, mayReturnInput) };
  } catch (error) {
    return immediate(toolCall, createErrorToolResult(describeThrown(error)));
  }
}

function immediate(toolCall: ToolCall, result: AgentToolResult<unknown>): ImmediateCall {
  return { kind: "immediate", toolCall, result, isError: true };
}
