/**
 * Which pool of a runtime runs each worker tool, as the MCP call gate
 * counts places: the same split as the runtime's pools (the shared pool, a
 * named pool, a tool's own pool, the fleet).
 *
 * @module
 */
import { isWorkerTool } from "../contracts/worker-tool.js";
import type { Runtime } from "../runtime.js";

/**
 * The gate's pool of each worker tool of `runtime`, by tool name:
 * `"shared"`, `"pool:NAME"` (a named pool, such as the coding tools'
 * `toolpool:coding-io`), `"tool:NAME"` (a tool with `resourceLimits`, alone
 * on its pool) or `"fleet"` (`fleet.remote`). Inline tools are absent: they
 * use no thread.
 */
export function mcpToolPools(runtime: Runtime): Map<string, string> {
  const { tools, fleet } = runtime.options;
  const pools = new Map<string, string>();
  for (const tool of tools) {
    if (!isWorkerTool(tool)) continue;
    if (fleet !== undefined && (fleet.remote === "all" || fleet.remote.includes(tool.name))) pools.set(tool.name, "fleet");
    else if (tool.pool !== undefined) pools.set(tool.name, `pool:${tool.pool.name}`);
    else if (tool.resourceLimits !== undefined) pools.set(tool.name, `tool:${tool.name}`);
    else pools.set(tool.name, "shared");
  }
  return pools;
}

/**
 * The places of `runtime`'s pools other than the shared one, for
 * `McpCallGateOptions.pools`: each pool's threads (a named pool's as its
 * first tool gives them, as the runtime makes it), and the fleet's
 * `maxOutstanding`.
 *
 * @example
 * ```ts
 * const gate = new McpCallGate({ maxRunning: runtime.options.pool.maxThreads, pools: mcpCallGatePools(runtime) });
 * ```
 */
export function mcpCallGatePools(runtime: Runtime): Record<string, number> {
  const { tools, fleet, pool } = runtime.options;
  const places: Record<string, number> = {};
  const toolPools = mcpToolPools(runtime);
  for (const tool of tools) {
    if (!isWorkerTool(tool)) continue;
    const name = toolPools.get(tool.name)!;
    if (name === "shared" || name in places) continue;
    if (name === "fleet") places[name] = fleet!.maxOutstanding;
    else if (name.startsWith("pool:")) places[name] = tool.pool?.maxThreads ?? pool.maxThreads;
    else places[name] = pool.maxThreads;
  }
  return places;
}
