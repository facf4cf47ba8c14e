/**
 * `serve --call-timeout MS`: a time limit for every worker tool that has
 * none of its own.
 *
 * @module
 */
import { isWorkerTool, workerTool, type ToolDefinition, type WorkerTool } from "../index.js";
import { inputErrors } from "./usage-error.js";

/**
 * `tools` with each worker tool that has no `timeoutMs` redefined with
 * `timeoutMs`; inline tools run on the main thread, where no limit can stop
 * them, and are left as they are. Without `timeoutMs`, `tools` unchanged.
 */
export function withCallTimeout(tools: readonly ToolDefinition[], timeoutMs: number | undefined): ToolDefinition[] {
  if (timeoutMs === undefined) return [...tools];
  return tools.map((tool) => (isWorkerTool(tool) && tool.timeoutMs === undefined ? withTimeout(tool, timeoutMs) : tool));
}

function withTimeout(tool: WorkerTool, timeoutMs: number): WorkerTool {
  // Spread, so that every field of the definition carries over, present and future; `moduleUrl` is the `module` option resolved.
  const { moduleUrl, ...definition } = tool;
  return inputErrors(() => workerTool({ ...definition, module: moduleUrl, timeoutMs }));
}
