import type {
  AgentContext,
  AgentToolResult,
  AssistantMessage,
  BeforeToolCallHook,
  ToolCall,
} from "../types.js";
import type { RegisteredTool } from "./tool-registry.js";
import { describeThrown } from "../errors.js";
import { createErrorToolResult } from "./tool-results.js";
import { validateToolArguments } from "./validate-arguments.js";

/** The outcome of stage 1: ready to execute, or an immediate error result. */
export type Preparation =
  | { kind: "prepared"; toolCall: ToolCall; entry: RegisteredTool; args: unknown }
  | { kind: "immediate"; toolCall: ToolCall; result: AgentToolResult<unknown>; isError: true };

/** What stage 1 needs of its batch. */
export interface PrepareScope {
  registry: ReadonlyMap<string, RegisteredTool>;
  assistantMessage: AssistantMessage;
  context: AgentContext;
  beforeToolCall: BeforeToolCallHook | undefined;
  signal: AbortSignal | undefined;
}

/**
 * Stage 1, prepare: find the tool, apply its `prepareArguments`, validate with
 * coercion, then ask `beforeToolCall`. Never throws: anything thrown here is an
 * immediate error result with the thrown message.
 */
export async function prepareToolCall(scope: PrepareScope, toolCall: ToolCall): Promise<Preparation> {
  const preparation = prepareArguments(scope, toolCall);
  if (preparation.kind === "immediate" || scope.beforeToolCall === undefined) return preparation;
  try {
    const decision = await scope.beforeToolCall(
      { assistantMessage: scope.assistantMessage, toolCall, args: preparation.args, context: scope.context },
      scope.signal,
    );
    return decision?.block ? immediate(toolCall, decision.reason || "Tool execution was blocked") : preparation;
  } catch (error) {
    return immediate(toolCall, describeThrown(error));
  }
}

/**
 * Stage 1 without the hook, synchronous: find the tool, apply its
 * `prepareArguments`, validate with coercion. Never throws.
 *
 * `isUnobserved`: no hook will see the arguments. A worker tool then gets the
 * call's own arguments object when it is valid as it is: the trip to the
 * worker copies it anyway, so nobody could tell.
 */
export function prepareArguments(scope: Pick<PrepareScope, "registry">, toolCall: ToolCall, isUnobserved = false): Preparation {
  const entry = scope.registry.get(toolCall.name);
  if (entry === undefined) {
    return immediate(toolCall, `Tool ${toolCall.name} not found`);
  }
  try {
    const { tool } = entry;
    // The shim's output is only validated: hooks and events keep the raw call.
    const rawArgs = tool.prepareArguments === undefined ? toolCall.arguments : tool.prepareArguments(toolCall.arguments);
    const mayShare = isUnobserved && entry.kind === "worker";
    return { kind: "prepared", toolCall, entry, args: validateToolArguments(toolCall.name, tool.parameters, rawArgs, mayShare) };
  } catch (error) {
    return immediate(toolCall, describeThrown(error));
  }
}

function immediate(toolCall: ToolCall, message: string): Preparation {
  return { kind: "immediate", toolCall, result: createErrorToolResult(message), isError: true };
}
