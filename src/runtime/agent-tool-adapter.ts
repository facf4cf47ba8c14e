/**
 * A worker tool as a pi `AgentTool`, so that a pi `Agent` can use the pool
 * directly (`Runtime.agentTools()`).
 *
 * @module
 */
import type { ToolCallPool } from "../contracts/pool-contract.js";
import type { WorkerTool } from "../contracts/worker-tool.js";
import { ToolpoolError } from "../errors.js";
import type { AgentTool, AgentToolResult } from "../types.js";

/**
 * An `AgentTool` whose execute runs `tool` on `pool`. pi's tools fail by
 * throwing, so a failed call throws: an `Error` with the message, or a
 * `ToolpoolError` with its code for toolpool's faults.
 */
export function toAgentTool(tool: WorkerTool, pool: ToolCallPool): AgentTool {
  return {
    name: tool.name,
    label: tool.label,
    description: tool.description,
    parameters: tool.parameters,
    ...(tool.executionMode === undefined ? {} : { executionMode: tool.executionMode }),
    ...(tool.prepareArguments === undefined ? {} : { prepareArguments: tool.prepareArguments }),
    execute: async (toolCallId, args, signal, onUpdate): Promise<AgentToolResult<unknown>> => {
      const outcome = await pool.run({ tool, toolCallId, args, signal, onUpdate });
      if (outcome.kind === "ok") return outcome.result;
      throw outcome.code === undefined ? new Error(outcome.message) : new ToolpoolError(outcome.code, outcome.message);
    },
  };
}
