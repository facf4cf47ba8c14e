/**
 * What `--toolpool-status` and `/toolpool` print. Pure (no pi, no pool), so that it is tested on every Node.
 * @module
 */

export interface ToolStatus {
  readonly name: string;
  /** `"toolpool"`, `"pi"`, another extension's path, or `"none"`. */
  readonly definedBy: string;
  readonly isActive: boolean;
}

export interface PoolStatus {
  readonly name: string;
  readonly tools: readonly string[];
  readonly maxThreads: number;
  readonly threads: number;
}

export interface ExtensionStatus {
  readonly toolpoolVersion: string;
  readonly pi: { readonly version: string; readonly folder: string };
  readonly tools: readonly ToolStatus[];
  /** How bash's commands are isolated, when known. */
  readonly sandbox?: string;
  /** Or why they cannot be made. */
  readonly pools: readonly PoolStatus[] | { readonly error: string };
}

/** One line for toolpool and its pi, one per tool, one for the sandbox, one per pool (`pool toolpool:coding: read, edit, write; up to 8 threads, 0 started`). */
export function formatExtensionStatus(status: ExtensionStatus): string {
  const lines = [`toolpool ${status.toolpoolVersion} in pi ${status.pi.version} (${status.pi.folder})`];
  for (const tool of status.tools) {
    lines.push(`${tool.name}: ${whereRuns(tool.definedBy)}${tool.isActive ? ", active" : ""}`);
  }
  if (status.sandbox !== undefined) lines.push(`sandbox: ${status.sandbox}`);
  if ("error" in status.pools) {
    lines.push(`pools: none (${status.pools.error})`);
  } else {
    for (const pool of status.pools) {
      lines.push(`pool ${pool.name}: ${pool.tools.join(", ")}; up to ${pool.maxThreads} threads, ${pool.threads} started`);
    }
  }
  return `${lines.join("\n")}\n`;
}

/** Where a tool's calls run, by who defines the tool pi runs. */
function whereRuns(definedBy: string): string {
  if (definedBy === "toolpool") return "on the pool";
  if (definedBy === "pi") return "not on the pool (pi's own)";
  if (definedBy === "none") return "not on the pool (pi has no tool of this name)";
  return `not on the pool (${definedBy})`;
}
