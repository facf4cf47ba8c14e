/**
 * `PoolRouter`: the pools of one runtime and which of them runs each worker
 * tool — the shared pool, a named pool (`workerTool({ pool })`), a pool of a
 * tool's own (resource limits of its own), or the fleet (`fleet.remote`) —
 * and their state added up.
 *
 * @module
 */
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

/** What the router reports to its runtime. */
export interface PoolRouterEvents {
  /** A worker failure that belonged to no call. */
  onPoolError: (error: unknown) => void;
  /** A remote call ended (a runtime with `fleet`). */
  onFleetCall: (record: RemoteCallRecord) => void;
}

/** One pool of a runtime, as {@link PoolRouter.diagnose} names it. */
type PoolDiagnosisEntry = { pool: string } & PoolDiagnosis;

/**
 * The pools of a runtime, made for the worker tools of its registry: every
 * pool is made here, once, and `poolFor` is how the coordinator finds one.
 */
export class PoolRouter {
  /** The shared pool (`"shared"`), each named pool (`"pool:NAME"`) and one pool per worker tool with resource limits of its own. */
  readonly #pools = new Map<WorkerTool | string, WorkerPool>();
  /** The named pool of each tool that names one (`workerTool({ pool })`), as its key in {@link #pools}. */
  readonly #namedPools = new Map<WorkerTool, string>();
  /** The fleet, with the worker tools whose calls run there (`fleet.remote`). */
  readonly #remotePool: RemotePool | undefined;
  readonly #remoteTools = new Set<WorkerTool>();

  /** Makes the pools; throws `TP_ERR_INVALID_OPTION` for a `fleet.remote` that names no worker tool of the registry. */
  constructor(options: ResolvedRuntimeOptions, registry: ReadonlyMap<string, RegisteredTool>, events: PoolRouterEvents) {
    const workerTools = [...registry.values()].flatMap((entry) => (entry.kind === "worker" ? [entry.tool] : []));
    this.#remotePool = this.#createRemotePool(options, workerTools, events);
    // Before any thread starts: a missing module, or one Node would not load as an ES module, is refused here.
    checkWorkerModules(workerTools.filter((tool) => !this.#remoteTools.has(tool)));
    for (const tool of workerTools) {
      if (this.#remoteTools.has(tool)) continue;
      const { resourceLimits, pool } = tool;
      if (pool !== undefined) {
        // A named pool: tools that name it share it; its size and per-session
        // cap are those of the first definition that gives each.
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
        // Limits are a property of a worker, hence a pool of its own; it keeps
        // one idle thread only, as such tools are usually the rare heavy ones
        // (and not none: see `minThreads`).
        const poolOptions = Object.freeze({ ...options.pool, resourceLimits, minThreads: 1 });
        this.#pools.set(tool, new WorkerPool(poolOptions, options.clock, events.onPoolError));
      }
    }
  }

  /** The pool that runs `tool`'s calls. */
  poolFor(tool: WorkerTool): ToolCallPool {
    if (this.#remoteTools.has(tool)) return this.#remotePool!;
    const named = this.#namedPools.get(tool);
    return this.#pools.get(named ?? tool) ?? this.#pools.get("shared")!;
  }

  /** The fleet as the runtime sees it; `undefined` without the `fleet` option. */
  get fleetStats(): FleetStats | undefined {
    return this.#remotePool?.fleetStats;
  }

  /**
   * The state of the worker pools, added up; `undefined` when there is none.
   * Each pool's utilization weighs as much as its capacity.
   */
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

  /** The inner state of every worker pool, named as `RuntimeDiagnosis.pools` names them. */
  diagnose(): PoolDiagnosisEntry[] {
    return [...this.#pools.entries()].map(([key, pool]) => ({
      pool: typeof key === "string" ? key : key.name,
      ...pool.diagnose(),
    }));
  }

  /**
   * The pools whose events `runtime.poolEvents` relays, by the name their
   * events take: the local pools by key (`"shared"`, `"pool:NAME"`, or the
   * tool of a pool of its own), and the fleet's as `"fleet"`.
   */
  get eventPools(): ReadonlyMap<WorkerTool | string, { readonly events: PoolEventSource }> {
    if (this.#remotePool === undefined) return this.#pools;
    return new Map<WorkerTool | string, { readonly events: PoolEventSource }>([...this.#pools, ["fleet", this.#remotePool]]);
  }

  /** Every pool, the fleet's included. */

  get pools(): ToolCallPool[] {
    return [...this.#pools.values(), ...(this.#remotePool === undefined ? [] : [this.#remotePool])];
  }

  /** The fleet's pool, for a runtime with `fleet`; fills in which worker tools go remote. */
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
