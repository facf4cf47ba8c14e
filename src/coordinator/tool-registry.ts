import { describeValue, ToolpoolError } from "../errors.js";
import type { ToolDefinition } from "../options.js";
import type { AgentTool, JsonSchema } from "../types.js";
import { isWorkerTool, type WorkerTool } from "../contracts/worker-tool.js";

/** A registered tool, by where its execute runs. */
export type RegisteredTool = { kind: "inline"; tool: AgentTool } | { kind: "worker"; tool: WorkerTool };

/** The tools of a runtime by name, each definition checked. */
export function createToolRegistry(tools: readonly ToolDefinition[]): ReadonlyMap<string, RegisteredTool> {
  const registry = new Map<string, RegisteredTool>();
  tools.forEach((tool, index) => {
    const entry = registerTool(tool, index);
    if (registry.has(entry.tool.name)) {
      throw new ToolpoolError("TP_ERR_INVALID_TOOL", `Two tools are named "${entry.tool.name}"; tool names must be unique`);
    }
    registry.set(entry.tool.name, entry);
  });
  return registry;
}

function registerTool(tool: ToolDefinition, index: number): RegisteredTool {
  const where = `tools[${index}]`;
  if (isWorkerTool(tool)) {
    return { kind: "worker", tool };
  }
  if (typeof tool !== "object" || tool === null) {
    throw invalid(`Expected \`${where}\` to be a pi AgentTool or a workerTool(...) definition`, tool);
  }
  const candidate = tool as Partial<AgentTool>;
  if (typeof candidate.name !== "string" || candidate.name.length === 0) {
    throw invalid(`Expected \`${where}.name\` to be a non-empty string`, candidate.name);
  }
  if (typeof candidate.execute !== "function") {
    throw invalid(`Expected \`${where}.execute\` of tool "${candidate.name}" to be a function`, candidate.execute);
  }
  if (typeof candidate.parameters !== "object" || candidate.parameters === null) {
    throw invalid(`Expected \`${where}.parameters\` of tool "${candidate.name}" to be a JSON Schema object`, candidate.parameters);
  }
  return { kind: "inline", tool: tool as AgentTool };
}

/**
 * Compiles every tool's validator while the pools boot, not in a first
 * batch. Never throws: pi meets a schema per call, so one it cannot compile
 * fails each call in validation (docs/design.md, "Schemas are pi's").
 */
export function compileToolSchemas(registry: ReadonlyMap<string, RegisteredTool>, compile: (schema: JsonSchema) => void): void {
  for (const { tool } of registry.values()) {
    try {
      compile(tool.parameters);
    } catch {}
  }
}

function invalid(expectation: string, received: unknown): ToolpoolError {
  return new ToolpoolError("TP_ERR_INVALID_TOOL", `${expectation}, got ${describeValue(received)}`);
}
