import { describeThrown } from "../errors.js";
import type { AfterToolCallHook, AgentContext, AgentToolResult, AssistantMessage, BeforeToolCallHook, ToolCall } from "../types.js";
import type { CallTrace } from "../tracing/batch-trace.js";
import { abortedText, type PiRules } from "./pi-rules.js";
import type { RegisteredTool } from "./tool-registry.js";
import { createErrorToolResult } from "./tool-results.js";

/** A call ready to execute; in a traced batch, with its span. */
export interface PreparedCall {
  kind: "prepared";
  toolCall: ToolCall;
  entry: RegisteredTool;
  args: unknown;
  callTrace?: CallTrace;
}

/** A call that ended in stage 1: final as it is. */
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
  /** Only whether there is one. */
  afterToolCall: AfterToolCallHook | undefined;
  signal: AbortSignal | undefined;
  rules: PiRules;
}

/** pi's `prepareToolCall`. Never throws: a throw is an immediate error result. Synchronous without `beforeToolCall`. */
export function prepareToolCall(scope: PrepareScope, toolCall: ToolCall): Preparation | Promise<Preparation> {
  const { beforeToolCall } = scope;
  const preparation = prepareWithoutHook(scope, toolCall);
  if (preparation.kind === "immediate" || beforeToolCall === undefined) return preparation;
  return askBeforeToolCall(scope, beforeToolCall, preparation);
}

/** Stage 1 without `beforeToolCall`. */
export function prepareWithoutHook(scope: PrepareScope, toolCall: ToolCall): Preparation {
  const { rules, signal } = scope;
  if (rules.checksAbort && signal?.aborted) return immediate(toolCall, createErrorToolResult(abortedText));
  // With no hook to see them, valid arguments may go to a worker as they are: the trip copies them.
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
