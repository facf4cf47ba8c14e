/**
 * A worker tool as a pi `AgentTool`, so that a pi `Agent` can use the pool
 * directly (`Runtime.agentTools()`).
 *
 * @module
 */
import type { ToolCallPool } from "../contracts/pool-contract.js";
import type { WorkerTool } from "../contracts/worker-tool.js";
import { enterCapContext, leaveCapContext, type CapContext } from "../coordinator/call-caps.js";
import { ToolpoolError } from "../errors.js";
import type { AgentTool, AgentToolResult } from "../types.js";

/**
 * Runs one call of the tool named `toolName` under the runtime's caps (see
 * `runCapped` in `coordinator/call-caps.ts`): `run` gets the call's cap
 * context once it holds its slots, undefined where no cap applies.
 */
export type CappedRun = <T>(toolName: string, toolCallId: string, run: (context: CapContext | undefined) => Promise<T>) => Promise<T>;

/**
 * An `AgentTool` whose execute runs `tool` on `pool`. pi's tools fail by
 * throwing, so a failed call throws: an `Error` with the message, or a
 * `ToolpoolError` with its code for toolpool's faults.
 */
export function toAgentTool(tool: WorkerTool, pool: ToolCallPool, capped?: CappedRun): AgentTool {
  return {
    name: tool.name,
    label: tool.label,
    description: tool.description,
    parameters: tool.parameters,
    ...(tool.executionMode === undefined ? {} : { executionMode: tool.executionMode }),
    ...(tool.prepareArguments === undefined ? {} : { prepareArguments: tool.prepareArguments }),
    execute: async (toolCallId, args, signal, onUpdate): Promise<AgentToolResult<unknown>> => {
      const run = (partCaps: CapContext | undefined) => pool.run({ tool, toolCallId, args, signal, onUpdate, partCaps });
      const outcome = await (capped === undefined ? run(undefined) : capped(tool.name, toolCallId, run));
      if (outcome.kind === "ok") return outcome.result;
      throw outcome.code === undefined ? new Error(outcome.message) : new ToolpoolError(outcome.code, outcome.message);
    },
  };
}

/**
 * An inline tool whose calls count against the runtime's caps: a copy of
 * `tool` (its prototype kept) whose execute waits for its slots and runs in
 * its cap context, so that the calls it makes through `runtime.runToolCall`
 * are its children.
 */
export function toCappedInlineTool(tool: AgentTool, capped: CappedRun): AgentTool {
  const copy = Object.assign(Object.create(Object.getPrototypeOf(tool) as object | null) as AgentTool, tool);
  const execute: AgentTool["execute"] = (toolCallId, args, signal, onUpdate) =>
    capped(tool.name, toolCallId, (context) => {
      if (context === undefined) return Promise.resolve(tool.execute(toolCallId, args, signal, onUpdate));
      let result: ReturnType<AgentTool["execute"]>;
      try {
        result = enterCapContext(context, () => tool.execute(toolCallId, args, signal, onUpdate));
      } catch (error) {
        leaveCapContext();
        throw error;
      }
      return Promise.resolve(result).finally(leaveCapContext);
    });
  // Defined, not assigned: the tool's prototype may have an `execute` accessor.
  Object.defineProperty(copy, "execute", { value: execute, enumerable: true, writable: true, configurable: true });
  return copy;
}
