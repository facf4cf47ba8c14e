/** `serve --call-timeout MS`: a time limit for every worker tool that has none of its own. */
import { isWorkerTool, workerTool, type ToolDefinition, type WorkerTool } from "../index.js";
import { inputErrors } from "./usage-error.js";

/** Inline tools are left as they are: they run on the main thread, where no limit can stop them. */
export function withCallTimeout(tools: readonly ToolDefinition[], timeoutMs: number | undefined): ToolDefinition[] {
  if (timeoutMs === undefined) return [...tools];
  return tools.map((tool) => (isWorkerTool(tool) && tool.timeoutMs === undefined ? withTimeout(tool, timeoutMs) : tool));
}

function withTimeout(tool: WorkerTool, timeoutMs: number): WorkerTool {
  // Spread, so that every field of the definition carries over, present and future.
  const { moduleUrl, ...definition } = tool;
  return inputErrors(() => workerTool({ ...definition, module: moduleUrl, timeoutMs }));
}
