import { hostname } from "node:os";
import { performance } from "node:perf_hooks";

import type { Job, Worker } from "bullmq";
import type { Redis } from "ioredis";

import { systemClock } from "../clock.js";
import { describeThrown, ToolpoolError } from "../errors.js";
import { resolveRuntimeOptions, type PiVersion } from "../options.js";
import type { AgentToolResult } from "../types.js";
import type { WorkerCallOutcome } from "../contracts/pool-contract.js";
import { WorkerPool } from "../workers/worker-pool.js";
import { isWorkerTool, type WorkerTool } from "../contracts/worker-tool.js";
import { checkWorkerModules } from "../contracts/worker-modules.js";
import {
  decodeJobArgs,
  encodeEnd,
  encodeStart,
  encodeUpdate,
  FleetKeys,
  reconnectDelay,
  redisOptionsFromUrl,
  type NodeRecord,
  type RemoteJobData,
} from "./fleet-protocol.js";
import { admitCall, readKeys } from "./call-admission.js";
import { abortedBeforeStart, coordinatorGoneBeforeStart, coordinatorGoneWhileRunning } from "./fleet-outcomes.js";
import { loadRedisLibraries, type RedisLibraries } from "./redis-libraries.js";
import { describeToolset, fleetProtocolVersion, type Toolset } from "./toolset.js";
import { checkFleetNodeOptions, type FleetNodeOptions } from "./fleet-node-options.js";

interface RunningCall {
  readonly abortKey: string | undefined;
  readonly presenceKey: string;
  readonly abort: AbortController;
  /** Why the node stopped the call itself: it then ends as that, not as whatever the stop made of it. */
  stoppedBy: "lock-lost" | "coordinator-gone" | undefined;
}

/** A reply stream expires this long after a node last wrote to it. */
const replyStreamTtlMs = 600_000;

/** Renewals of a node's registration per lock duration. */
const heartbeatsPerLock = 3;

/**
 * A fleet node: runs the remote calls of coordinators whose worker tools equal its own (one BullMQ queue per toolset) on
 * a local {@link WorkerPool}, so every fault ends as it would locally; partials, then the end, go back on the calling
 * coordinator's reply stream. At most once: with `maxStalledCount: 0` a dead node's call is never handed to another.
 */
export class FleetNode {
  readonly #name: string;
  readonly #threads: number;
  readonly #toolset: Toolset;
  readonly #tools: ReadonlyMap<string, WorkerTool>;
  readonly #pools: Map<WorkerTool | "shared", WorkerPool>;
  readonly #keys: FleetKeys;
  readonly #commands: Redis;
  readonly #subscriber: Redis;
  readonly #worker: Worker<RemoteJobData>;
  readonly #running = new Map<string, RunningCall>();
  readonly #lockDurationMs: number;
  readonly #onError: (error: unknown) => void;
  #heartbeat: NodeJS.Timeout | undefined;
  #isRechecking = false;
  #closing: Promise<void> | undefined;

  private constructor(options: FleetNodeOptions, { Redis, Worker }: RedisLibraries) {
    const workerTools = options.tools.filter(isWorkerTool);
    const runtimeOptions = resolveRuntimeOptions({
      tools: workerTools,
      ...(options.pi === undefined ? {} : { pi: options.pi }),
      pool: {
        ...options.pool,
        ...(options.threads === undefined ? {} : { maxThreads: options.threads, minThreads: options.threads }),
      },
    });
    this.#name = options.name ?? `${hostname()}-${process.pid}`;
    if (!/^[A-Za-z0-9_.-]+$/.test(this.#name)) {
      throw new ToolpoolError(
        "TP_ERR_INVALID_OPTION",
        `Expected the node's name to hold only letters, digits, "_", "." and "-", got "${this.#name}"`,
      );
    }
    this.#threads = runtimeOptions.pool.maxThreads;
    this.#tools = new Map(workerTools.map((tool) => [tool.name, tool]));
    if (this.#tools.size !== workerTools.length) throw new ToolpoolError("TP_ERR_INVALID_TOOL", "Two worker tools of the node share a name");
    this.#toolset = describeToolset(workerTools, runtimeOptions.pi);
    this.#keys = new FleetKeys(options.prefix ?? "toolpool");
    this.#lockDurationMs = options.lockDurationMs ?? 10_000;
    this.#onError = options.onError ?? (() => {});
    // The same pools as a runtime's: one shared, one per tool with heap limits of its own.
    this.#pools = new Map();
    for (const tool of workerTools) {
      if (tool.resourceLimits === undefined) {
        if (!this.#pools.has("shared")) this.#pools.set("shared", new WorkerPool(runtimeOptions.pool, systemClock, this.#onError));
      } else {
        const poolOptions = Object.freeze({ ...runtimeOptions.pool, resourceLimits: tool.resourceLimits, minThreads: 1 });
        this.#pools.set(tool, new WorkerPool(poolOptions, systemClock, this.#onError));
      }
    }
    const redisOptions = { ...redisOptionsFromUrl(options.redis), retryStrategy: reconnectDelay };
    // No retry limit: every call's end must reach Redis, even across a reconnection.
    this.#commands = new Redis({
      ...redisOptions,
      maxRetriesPerRequest: null,
      enableAutoPipelining: true,
      connectionName: `toolpool-node-${this.#name}`,
    });
    this.#commands.on("error", () => {}); // reconnects on its own; the worker reports the outage
    this.#subscriber = new Redis({ ...redisOptions, maxRetriesPerRequest: null });
    this.#subscriber.on("error", () => {});
    this.#subscriber.on("message", (_channel: string, key: string) => this.#abortCalls(key));
    // After a reconnection, aborts announced meanwhile were missed: look again.
    this.#subscriber.on("ready", () => void this.#recheckAborts().catch(() => {}));
    this.#worker = new Worker<RemoteJobData>(
      FleetKeys.queueName(this.#toolset.hash),
      // Three parameters: BullMQ passes an abort signal only to a processor that declares it.
      (job, token, signal) => this.#process(job, token, signal),
      {
        connection: { ...redisOptions, maxRetriesPerRequest: null },
        prefix: this.#keys.prefix,
        name: this.#name,
        autorun: false,
        concurrency: options.concurrency ?? this.#threads,
        lockDuration: this.#lockDurationMs,
        stalledInterval: options.stalledIntervalMs ?? 5_000,
        // At most once: a call whose node was lost is never run again.
        maxStalledCount: 0,
        maxStartedAttempts: 1,
      },
    );
    this.#worker.on("error", (error) => this.#onError(error));
    // Lost its hold on a call (cut off from Redis): stop it, as another party will report it lost.
    this.#worker.on("lockRenewalFailed", (jobIds) => {
      for (const jobId of jobIds) {
        const call = this.#running.get(jobId);
        if (call === undefined) continue;
        call.stoppedBy = "lock-lost";
        call.abort.abort();
      }
    });
  }

  /**
   * Connects, registers the node and resolves once it takes calls.
   * @example
   * const node = await FleetNode.start({ redis: "redis://127.0.0.1:6379", tools: builtinTools(), threads: 4 });
   */
  static async start(options: FleetNodeOptions): Promise<FleetNode> {
    checkFleetNodeOptions(options);
    // As createRuntime does: a missing module, or one Node would not load as an ES module, is refused before anything starts.
    if (Array.isArray(options.tools)) checkWorkerModules(options.tools.filter(isWorkerTool));
    const node = new FleetNode(options, await loadRedisLibraries());
    try {
      await node.#subscriber.subscribe(node.#keys.cancelChannel);
      await node.#register();
      // Each beat also stops running calls whose coordinator is gone.
      node.#heartbeat = setInterval(
        () => {
          void node.#register().catch(node.#onError);
          void node.#recheckAborts().catch(() => {});
        },
        Math.max(50, node.#lockDurationMs / heartbeatsPerLock),
      );
      void node.#worker.run().catch(node.#onError);
      await node.#worker.waitUntilReady();
    } catch (error) {
      await node.close().catch(() => {});
      throw error;
    }
    return node;
  }

  get name(): string {
    return this.#name;
  }

  /** Threads of the node's shared pool. */
  get threads(): number {
    return this.#threads;
  }

  /** The hash of the worker tools the node serves: coordinators with the same hash send it their calls. */
  get toolsetHash(): string {
    return this.#toolset.hash;
  }

  /** The pi of the coordinators the node serves. */
  get pi(): PiVersion {
    return this.#toolset.pi;
  }

  get running(): number {
    return this.#running.size;
  }

  /** Stops taking calls, lets the running ones deliver their ends, then leaves the fleet. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      clearInterval(this.#heartbeat);
      await this.#commands
        .multi()
        .del(this.#keys.node(this.#name))
        .srem(this.#keys.nodes, this.#name)
        .exec()
        .catch(() => {});
      await this.#worker.close();
      await Promise.all([...this.#pools.values()].map((pool) => pool.close()));
      await Promise.all([this.#commands.quit().catch(() => {}), this.#subscriber.quit().catch(() => {})]);
      this.#commands.disconnect();
      this.#subscriber.disconnect();
    })();
    return this.#closing;
  }

  async #register(): Promise<void> {
    const record: NodeRecord = {
      name: this.#name,
      toolsetHash: this.#toolset.hash,
      pi: this.#toolset.pi,
      tools: [...this.#tools.keys()],
      threads: this.#threads,
      pid: process.pid,
      startedAt: Date.now(),
    };
    await this.#commands
      .multi()
      .set(this.#keys.node(this.#name), JSON.stringify(record), "PX", this.#lockDurationMs)
      .sadd(this.#keys.nodes, this.#name)
      .exec();
  }

  async #process(job: Job<RemoteJobData>, _token: string | undefined, signal: AbortSignal | undefined): Promise<number> {
    const startedAt = performance.now();
    const data = job.data;
    const jobId = job.id!;
    const tool = this.#tools.get(data.tool);
    let outcome: WorkerCallOutcome;
    if (data.v !== fleetProtocolVersion || tool === undefined || this.#toolset.fingerprints.get(data.tool) !== data.fingerprint) {
      outcome = {
        kind: "error",
        code: "TP_ERR_TOOL_MISMATCH",
        message: `Tool "${data.tool}" was not run: node "${this.#name}" serves ${tool === undefined ? "no tool of that name" : "another version of it"} (protocol ${fleetProtocolVersion})`,
      };
    } else {
      const abort = new AbortController();
      // Registered before the keys are read: an abort announced from now on reaches it either way.
      const running: RunningCall = { abortKey: data.abortKey, presenceKey: data.presenceKey, abort, stoppedBy: undefined };
      let isStarted = false;
      this.#running.set(jobId, running);
      signal?.addEventListener("abort", () => abort.abort(), { once: true });
      try {
        const admission = await admitCall(this.#commands, data);
        if (admission === "aborted") outcome = abortedBeforeStart(data.tool);
        else if (admission === "coordinator-gone") outcome = coordinatorGoneBeforeStart(data.tool, this.#name);
        else {
          if (admission === "run-aborted") abort.abort();
          isStarted = true;
          // On the connection that writes its partials and its end: the start entry comes before them.
          if (data.reportsStart === true) void this.#commands.xadd(data.replyTo, "*", ...encodeStart(jobId, this.#name)).catch(this.#onError);
          outcome = await this.#run(tool, jobId, data, abort.signal);
        }
      } catch (error) {
        const what = isStarted ? "could not be run" : "was not run";
        outcome = {
          kind: "error",
          code: "TP_ERR_WORKER_CRASH",
          message: `Tool "${data.tool}" ${what} on node "${this.#name}": ${describeThrown(error)}`,
        };
      }
      // A call that never started keeps its "was not run"; one whose tool returned keeps its result.
      const isStopped = isStarted && outcome.kind === "error";
      if (isStopped && running.stoppedBy === "lock-lost") {
        outcome = {
          kind: "error",
          code: "TP_ERR_NODE_LOST",
          message: `Tool "${data.tool}": node "${this.#name}" lost its hold on the call (cut off from Redis) and stopped it; the call may have run partly or fully`,
        };
      } else if (isStopped && running.stoppedBy === "coordinator-gone") outcome = coordinatorGoneWhileRunning(data.tool, this.#name);
    }
    try {
      const executionMs = performance.now() - startedAt;
      // The stream expires unless its coordinator keeps reading it (a coordinator that died leaves nothing behind).
      await this.#commands
        .pipeline()
        .xadd(data.replyTo, "*", ...encodeEnd(jobId, outcome, executionMs))
        .pexpire(data.replyTo, replyStreamTtlMs)
        .exec();
    } finally {
      this.#running.delete(jobId);
    }
    return 0;
  }

  async #run(tool: WorkerTool, jobId: string, data: RemoteJobData, signal: AbortSignal): Promise<WorkerCallOutcome> {
    let updates: Promise<unknown> = Promise.resolve();
    const pool = this.#pools.get(tool) ?? this.#pools.get("shared")!;
    const outcome = await pool.run({
      tool,
      toolCallId: data.toolCallId,
      args: decodeJobArgs(data),
      signal,
      // Chained on one connection, so partials reach the stream in order and before the end; each renews its expiry.
      onUpdate: (partial: AgentToolResult<unknown>) => {
        const fields = encodeUpdate(jobId, partial);
        updates = updates
          .then(() =>
            this.#commands
              .pipeline()
              .xadd(data.replyTo, "*", ...fields)
              .pexpire(data.replyTo, replyStreamTtlMs)
              .exec(),
          )
          .catch(this.#onError);
      },
    });
    await updates;
    return outcome;
  }

  /** A message on the cancel channel: an abort key (a batch aborted) or a presence key (a coordinator left). */
  #abortCalls(key: string): void {
    for (const call of this.#running.values()) {
      if (call.presenceKey === key) call.stoppedBy ??= "coordinator-gone";
      if (call.abortKey === key || call.presenceKey === key) call.abort.abort();
    }
  }

  /** Looks at the keys of the running calls: aborts announced while unheard, coordinators gone. */
  async #recheckAborts(): Promise<void> {
    const calls = [...this.#running.values()].filter((call) => !call.abort.signal.aborted);
    if (this.#isRechecking || calls.length === 0) return;
    this.#isRechecking = true;
    try {
      const keys = calls.flatMap((call) => (call.abortKey === undefined ? [call.presenceKey] : [call.presenceKey, call.abortKey]));
      const exists = await readKeys(this.#commands, keys);
      for (const call of calls) {
        const isCoordinatorGone = exists.get(call.presenceKey) === false;
        if (isCoordinatorGone) call.stoppedBy ??= "coordinator-gone";
        if (isCoordinatorGone || (call.abortKey !== undefined && exists.get(call.abortKey) === true)) call.abort.abort();
      }
    } finally {
      this.#isRechecking = false;
    }
  }
}
