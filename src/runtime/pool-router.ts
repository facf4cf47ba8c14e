/** The pools of one runtime (shared, named, a tool's own, the fleet) and which runs each worker tool. */
import type { FleetStats, PoolDiagnosis, PoolStats, ToolCallPool } from "../contracts/pool-contract.js";
import { namedPoolSettings, type WorkerTool } from "../contracts/worker-tool.js";
import type { PoolEventSource } from "../contracts/pool-events.js";
import type { RegisteredTool } from "../coordinator/tool-registry.js";
import { ToolpoolError } from "../errors.js";
import type { RemoteCallRecord } from "../events.js";
import { RemotePool } from "../fleet/remote-pool.js";
import type { ResolvedRuntimeOptions } from "../options.js";
import { checkWorkerModules } from "../contracts/worker-modules.js";
import { WorkerPool } from "../workers/worker-pool.js";

export interface PoolRouterEvents {
  /** A worker failure that belonged to no call. */
  onPoolError: (error: unknown) => void;
  onFleetCall: (record: RemoteCallRecord) => void;
}

type PoolDiagnosisEntry = { pool: string } & PoolDiagnosis;

/** Every pool is made here, once; `poolFor` is how the coordinator finds one. */
export class PoolRouter {
  /** `"shared"`, `"pool:NAME"`, and one per worker tool with resource limits of its own. */
  readonly #pools = new Map<WorkerTool | string, WorkerPool>();
  readonly #namedPools = new Map<WorkerTool, string>();
  readonly #remotePool: RemotePool | undefined;
  readonly #remoteTools = new Set<WorkerTool>();

  /** Throws `TP_ERR_INVALID_OPTION` for a `fleet.remote` naming no worker tool of the registry. */
  constructor(options: ResolvedRuntimeOptions, registry: ReadonlyMap<string, RegisteredTool>, events: PoolRouterEvents) {
    const workerTools = [...registry.values()].flatMap((entry) => (entry.kind === "worker" ? [entry.tool] : []));
    this.#remotePool = this.#createRemotePool(options, workerTools, events);
    // Before any thread starts: a missing or non-ESM module is refused here.
    checkWorkerModules(workerTools.filter((tool) => !this.#remoteTools.has(tool)));
    for (const tool of workerTools) {
      if (this.#remoteTools.has(tool)) continue;
      const { resourceLimits, pool } = tool;
      if (pool !== undefined) {
        const key = `pool:${pool.name}`;
        if (!this.#pools.has(key)) {
          const named = namedPoolSettings(
            workerTools.filter((other) => !this.#remoteTools.has(other)),
            pool.name,
          );
          const threads = named.maxThreads ?? options.pool.maxThreads;
          const perSession = named.maxRunningPerSession ?? options.pool.maxRunningPerSession;
          const poolOptions = Object.freeze({
            ...options.pool,
            maxThreads: threads,
            minThreads: Math.min(options.pool.minThreads, threads),
            maxRunningPerSession: perSession,
          });
          this.#pools.set(key, new WorkerPool(poolOptions, options.clock, events.onPoolError));
        }
        this.#namedPools.set(tool, key);
      } else if (resourceLimits === undefined) {
        if (!this.#pools.has("shared")) this.#pools.set("shared", new WorkerPool(options.pool, options.clock, events.onPoolError));
      } else {
        // Limits belong to a worker, hence a pool of its own; one idle thread, as such tools are usually rare and heavy.
        const poolOptions = Object.freeze({ ...options.pool, resourceLimits, minThreads: 1 });
        this.#pools.set(tool, new WorkerPool(poolOptions, options.clock, events.onPoolError));
      }
    }
  }

  poolFor(tool: WorkerTool): ToolCallPool {
    if (this.#remoteTools.has(tool)) return this.#remotePool!;
    const named = this.#namedPools.get(tool);
    return this.#pools.get(named ?? tool) ?? this.#pools.get("shared")!;
  }

  get fleetStats(): FleetStats | undefined {
    return this.#remotePool?.fleetStats;
  }

  /** Each pool's utilization weighs as much as its capacity. */
  get poolStats(): PoolStats | undefined {
    const pools = [...this.#pools.values()];
    const all = pools.map((pool) => pool.stats);
    if (all.length === 0) return undefined;
    const capacity = pools.reduce((total, pool) => total + pool.options.maxThreads, 0);
    const utilization = pools.reduce((total, pool, index) => total + all[index]!.utilization * pool.options.maxThreads, 0) / capacity;
    const sum = (pick: (stats: PoolStats) => number) => all.reduce((total, stats) => total + pick(stats), 0);
    return {
      threads: sum((stats) => stats.threads),
      running: sum((stats) => stats.running),
      queued: sum((stats) => stats.queued),
      completed: sum((stats) => stats.completed),
      utilization,
      sessionsWaiting: sum((stats) => stats.sessionsWaiting),
      longestWaitMs: Math.max(...all.map((stats) => stats.longestWaitMs)),
    };
  }

  /** Named as `RuntimeDiagnosis.pools` names them. */
  diagnose(): PoolDiagnosisEntry[] {
    return [...this.#pools.entries()].map(([key, pool]) => ({
      pool: typeof key === "string" ? key : key.name,
      ...pool.diagnose(),
    }));
  }

  /** By the name their events take; the fleet's as `"fleet"`. */
  get eventPools(): ReadonlyMap<WorkerTool | string, { readonly events: PoolEventSource }> {
    if (this.#remotePool === undefined) return this.#pools;
    return new Map<WorkerTool | string, { readonly events: PoolEventSource }>([...this.#pools, ["fleet", this.#remotePool]]);
  }

  get pools(): ToolCallPool[] {
    return [...this.#pools.values(), ...(this.#remotePool === undefined ? [] : [this.#remotePool])];
  }

  /** Also fills in which worker tools go remote. */
  #createRemotePool(options: ResolvedRuntimeOptions, workerTools: WorkerTool[], events: PoolRouterEvents): RemotePool | undefined {
    const { fleet } = options;
    if (fleet === undefined) return undefined;
    for (const name of fleet.remote === "all" ? [] : fleet.remote) {
      if (!workerTools.some((tool) => tool.name === name)) {
        throw new ToolpoolError("TP_ERR_INVALID_OPTION", `Expected \`fleet.remote\` to name worker tools of the runtime, got "${name}"`);
      }
    }
    for (const tool of workerTools) if (fleet.remote === "all" || fleet.remote.includes(tool.name)) this.#remoteTools.add(tool);
    return new RemotePool(fleet, workerTools, {
      abortGraceMs: options.pool.abortGraceMs,
      pi: options.pi,
      clock: options.clock,
      onCall: events.onFleetCall,
      onError: events.onPoolError,
    });
  }
}
