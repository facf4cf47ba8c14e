/**
 * What `--toolpool-status` and `/toolpool` print: which pi the extension
 * runs in, which of pi's tools run on toolpool's pools (those whose
 * definition in pi's registry is the extension's), and each pool's tools and
 * threads.
 *
 * Pure: no pi, no pool, so that it is tested on every Node.
 *
 * @module
 */

/** One of pi's coding tools, as pi's registry holds it. */
export interface ToolStatus {
  readonly name: string;
  /** Who defines the tool pi runs under this name: `"toolpool"` (its calls run on the pool), `"pi"` (pi's own), another extension's path, or `"none"` (pi has no tool of this name). */
  readonly definedBy: string;
  /** Whether pi offers it to the model. */
  readonly isActive: boolean;
}

/** One of the extension's pools. */
export interface PoolStatus {
  readonly name: string;
  readonly tools: readonly string[];
  readonly maxThreads: number;
  /** Threads started so far (0 until the first tool call starts the pool). */
  readonly threads: number;
}

/** Everything the status says. */
export interface ExtensionStatus {
  readonly toolpoolVersion: string;
  readonly pi: { readonly version: string; readonly folder: string };
  readonly tools: readonly ToolStatus[];
  /** The pools, or why the extension's options or pi's tools cannot make them. */
  readonly pools: readonly PoolStatus[] | { readonly error: string };
}

/**
 * The status as lines of text: one for toolpool and its pi, one per tool
 * (`read: on the pool, active`), one per pool (`pool toolpool:coding: read, edit,
 * write; up to 8 threads, 0 started`).
 */
export function formatExtensionStatus(status: ExtensionStatus): string {
  const lines = [`toolpool ${status.toolpoolVersion} in pi ${status.pi.version} (${status.pi.folder})`];
  for (const tool of status.tools) {
    lines.push(`${tool.name}: ${whereRuns(tool.definedBy)}${tool.isActive ? ", active" : ""}`);
  }
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
