/**
 * A call's message names its tool by number; a thread gets the definition
 * until it has answered a call of it.
 *
 * @module
 */
import type { ResolvedPoolOptions } from "../options.js";
import type { WorkerToolDefinition } from "./protocol.js";
import type { WorkerTool } from "../contracts/worker-tool.js";

export interface PoolTool {
  readonly id: number;
  readonly definition: WorkerToolDefinition;
}

/** Each keeps a tool entry for the pool's life. */
const maxPartExports = 64;

export class ToolNumbering {
  readonly #options: ResolvedPoolOptions;
  readonly #tools = new Map<WorkerTool, PoolTool>();
  readonly #partTools = new Map<number, Map<string, WorkerTool>>();

  constructor(options: ResolvedPoolOptions) {
    this.#options = options;
  }

  toolOf(tool: WorkerTool): PoolTool {
    let numbered = this.#tools.get(tool);
    if (numbered === undefined) {
      numbered = {
        id: this.#tools.size + 1,
        definition: {
          moduleUrl: tool.moduleUrl,
          exportName: tool.exportName,
          toolName: tool.name,
          maxResultBytes: tool.maxResultBytes ?? this.#options.maxResultBytes,
        },
      };
      this.#tools.set(tool, numbered);
    }
    return numbered;
  }

  /** Throws past {@link maxPartExports} exports for one tool. */
  partTool(parent: PoolTool, exportName: string): WorkerTool {
    const { moduleUrl, toolName, maxResultBytes } = parent.definition;
    let parts = this.#partTools.get(parent.id);
    if (parts === undefined) this.#partTools.set(parent.id, (parts = new Map()));
    let tool = parts.get(exportName);
    if (tool === undefined) {
      if (parts.size >= maxPartExports) {
        throw new Error(`tool "${toolName}" already spreads ${maxPartExports} different exports, the most one tool may`);
      }
      tool = { name: `${toolName} (part: ${exportName})`, moduleUrl, exportName, maxResultBytes, cost: 1 } as unknown as WorkerTool;
      parts.set(exportName, tool);
    }
    return tool;
  }
}
