/** Which pool of a runtime runs each worker tool, as the MCP call gate counts places: the runtime's own split. */
import { isWorkerTool, namedPoolSettings, type WorkerTool } from "../contracts/worker-tool.js";
import type { Runtime } from "../runtime.js";
import type { McpCallGatePool } from "./mcp-call-gate.js";

/** By tool name: `"shared"`, `"pool:NAME"`, `"tool:NAME"` (own `resourceLimits`) or `"fleet"`; inline tools use no thread. */
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
 * The places of `runtime`'s pools, for `McpCallGateOptions.pools`: threads and per-session cap as the runtime makes each
 * pool, and the fleet's `maxOutstanding`. A capped pool is `{ places, maxSessionRunning }`, so one session never holds
 * more gate places than the pool runs for it; the shared pool is named only then.
 */
export function mcpCallGatePools(runtime: Runtime): Record<string, number | McpCallGatePool> {
  const { tools, fleet, pool } = runtime.options;
  const places: Record<string, number | McpCallGatePool> = {};
  const toolPools = mcpToolPools(runtime);
  const local = tools.filter((tool) => isWorkerTool(tool) && toolPools.get(tool.name) !== "fleet") as WorkerTool[];
  const withCap = (threads: number, perSession: number | undefined): number | McpCallGatePool =>
    perSession === undefined ? threads : { places: threads, maxSessionRunning: perSession };
  for (const tool of local) {
    const name = toolPools.get(tool.name)!;
    if (name in places) continue;
    if (name === "shared") {
      if (pool.maxRunningPerSession !== undefined) places[name] = withCap(pool.maxThreads, pool.maxRunningPerSession);
    } else if (name.startsWith("pool:")) {
      const named = namedPoolSettings(local, tool.pool!.name);
      places[name] = withCap(named.maxThreads ?? pool.maxThreads, named.maxRunningPerSession ?? pool.maxRunningPerSession);
    } else places[name] = withCap(pool.maxThreads, pool.maxRunningPerSession);
  }
  if (fleet !== undefined && [...toolPools.values()].includes("fleet")) places.fleet = fleet.maxOutstanding;
  return places;
}
