/** The server's Prometheus metrics, on a registry of its own so that two servers, or the host's metrics, never collide. */
import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";

import type { Counter, Histogram, Registry } from "prom-client";

import { loadPromClient } from "./lazy-modules.js";
import { PoolEventMetrics } from "./pool-event-metrics.js";

import { errorCodes } from "../errors.js";
import type { EventMeta, RemoteCallRecord, ToolExecutionEndEvent, ToolExecutionStartEvent } from "../events.js";
import type { Runtime } from "../runtime.js";

/** The `tool` label of an unknown tool: model-chosen names must not grow the label set without bound. */
const UNKNOWN_TOOL_LABEL = "(unknown)";

const EVENT_LOOP_RESOLUTION_MS = 10;

const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** The prefix of prom-client's default metrics on /metrics. */
const defaultMetricsPrefix = "toolpool_";

/** Counts every batch of the runtime, also those not sent through the server; `meta.batchId` tells concurrent batches apart. */
export class ServerMetrics {
  readonly #registry: Registry;
  readonly #runtime: Runtime;
  readonly #toolNames: ReadonlySet<string>;
  readonly #startedAt = new Map<string, number>();
  readonly #eventLoopDelay: IntervalHistogram = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
  readonly #calls: Counter<"tool" | "outcome">;
  #remoteCalls: Counter<"tool" | "outcome"> | undefined;
  #remoteOverhead: Histogram | undefined;
  readonly #durations: Histogram<"tool">;
  readonly #queueWaits: Histogram<"tool">;
  readonly #runTimes: Histogram<"tool">;
  readonly #poolMetrics: PoolEventMetrics;

  constructor(runtime: Runtime, countBatches: () => number) {
    const { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } = loadPromClient();
    this.#registry = new Registry();
    // prom-client's process and Node.js metrics, as Prometheus users expect them, with toolpool's prefix.
    collectDefaultMetrics({ register: this.#registry, prefix: defaultMetricsPrefix });
    this.#runtime = runtime;
    this.#toolNames = new Set(runtime.agentTools().map((tool) => tool.name));
    const registers = [this.#registry];
    const stats = (): Runtime["poolStats"] => runtime.poolStats;
    new Gauge({
      name: "toolpool_pool_threads",
      help: "Worker threads alive in the pool.",
      registers,
      collect() {
        this.set(stats()?.threads ?? 0);
      },
    });
    new Gauge({
      name: "toolpool_pool_utilization",
      help: "Share of the pool's capacity its threads spent on calls over the last 10 seconds (0..1).",
      registers,
      collect() {
        this.set(stats()?.utilization ?? 0);
      },
    });
    new Gauge({
      name: "toolpool_pool_queue_depth",
      help: "Worker calls waiting for a thread.",
      registers,
      collect() {
        this.set(stats()?.queued ?? 0);
      },
    });
    new Gauge({
      name: "toolpool_pool_running",
      help: "Worker calls running on a thread.",
      registers,
      collect() {
        this.set(stats()?.running ?? 0);
      },
    });
    new Gauge({
      name: "toolpool_pool_sessions_waiting",
      help: "Sessions with at least one worker call waiting for a thread.",
      registers,
      collect() {
        this.set(stats()?.sessionsWaiting ?? 0);
      },
    });
    new Gauge({
      name: "toolpool_pool_longest_wait_seconds",
      help: "How long the longest-waiting worker call has waited so far.",
      registers,
      collect() {
        this.set((stats()?.longestWaitMs ?? 0) / 1_000);
      },
    });
    new Gauge({
      name: "toolpool_calls_waiting_for_cap",
      help: "Calls waiting for a cap (maxConcurrency of a tool or a batch, maxConcurrencyPerSession), by tool: started, not yet run.",
      labelNames: ["tool"] as const,
      registers,
      collect() {
        this.reset();
        if (runtime.isClosed) return;
        for (const wait of runtime.capWaits()) this.inc({ tool: wait.tool });
      },
    });
    new Gauge({
      name: "toolpool_batches_in_flight",
      help: "Batches the server is answering.",
      registers,
      collect() {
        this.set(countBatches());
      },
    });
    const eventLoopDelay = this.#eventLoopDelay;
    new Gauge({
      name: "toolpool_event_loop_delay_seconds",
      help: "Event loop delay of the server's thread since the previous scrape; quantile 1 is the maximum.",
      labelNames: ["quantile"] as const,
      registers,
      collect() {
        // An empty histogram reports its initial extremes, not zero; and Node counts the sampling
        // interval into each sample, so an idle loop would read the interval: take it off.
        const hasSamples = eventLoopDelay.count > 0;
        const seconds = (nanoseconds: number): number => (hasSamples ? Math.max(0, nanoseconds - EVENT_LOOP_RESOLUTION_MS * 1e6) / 1e9 : 0);
        this.set({ quantile: "0.5" }, seconds(eventLoopDelay.percentile(50)));
        this.set({ quantile: "0.99" }, seconds(eventLoopDelay.percentile(99)));
        this.set({ quantile: "1" }, seconds(eventLoopDelay.max));
        eventLoopDelay.reset();
      },
    });
    this.#calls = new Counter({
      name: "toolpool_tool_calls_total",
      help: "Tool calls ended, by tool and outcome: ok, error, or the lower-cased toolpool code of a fault (tp_err_timeout, ...).",
      labelNames: ["tool", "outcome"] as const,
      registers,
    });
    this.#durations = new Histogram({
      name: "toolpool_tool_call_duration_seconds",
      help: "Time from a call's tool_execution_start to its tool_execution_end event (queueing and hooks included).",
      labelNames: ["tool"] as const,
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.#queueWaits = new Histogram({
      name: "toolpool_tool_call_queue_wait_seconds",
      help: "Time an executed call waited for a worker thread (0 for an inline tool).",
      labelNames: ["tool"] as const,
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.#runTimes = new Histogram({
      name: "toolpool_tool_call_run_seconds",
      help: "Time an executed call ran: on its worker thread, or inline.",
      labelNames: ["tool"] as const,
      buckets: DURATION_BUCKETS,
      registers,
    });
    if (runtime.fleetStats !== undefined) {
      new Gauge({
        name: "toolpool_fleet_nodes",
        help: "Live fleet nodes serving the runtime's worker tools, at the coordinator's last look.",
        registers,
        collect() {
          this.set(runtime.fleetStats?.nodes ?? 0);
        },
      });
      this.#remoteCalls = new Counter({
        name: "toolpool_remote_calls_total",
        help: "Remote (fleet) calls ended, by tool and outcome: ok, error, or the lower-cased code (tp_err_node_lost, ...).",
        labelNames: ["tool", "outcome"] as const,
        registers,
      });
      this.#remoteOverhead = new Histogram({
        name: "toolpool_remote_overhead_seconds",
        help: "A remote call's round trip minus the node's own time for it: queueing in Redis, transport, dispatch.",
        buckets: [0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
        registers,
      });
      runtime.on("fleet_call", this.#onFleetCall);
    }
    this.#poolMetrics = new PoolEventMetrics(runtime, this.#registry, this.#toolNames);
    this.#eventLoopDelay.enable();
    runtime.on("tool_execution_start", this.#onStart);
    runtime.on("tool_execution_end", this.#onEnd);
  }

  get contentType(): string {
    return this.#registry.contentType;
  }

  render(): Promise<string> {
    // Pool events are listened to from the first scrape on: a server nobody scrapes pays nothing for them.
    this.#poolMetrics.attach();
    return this.#registry.metrics();
  }

  dispose(): void {
    this.#runtime.off("fleet_call", this.#onFleetCall);
    this.#runtime.off("tool_execution_start", this.#onStart);
    this.#runtime.off("tool_execution_end", this.#onEnd);
    this.#poolMetrics.dispose();
    this.#eventLoopDelay.disable();
    this.#startedAt.clear();
  }

  readonly #onFleetCall = (record: RemoteCallRecord): void => {
    this.#remoteCalls?.inc({ tool: record.tool, outcome: record.outcome });
    if (record.overheadSeconds !== undefined) this.#remoteOverhead?.observe(record.overheadSeconds);
  };

  readonly #onStart = (event: ToolExecutionStartEvent, meta: EventMeta): void => {
    this.#startedAt.set(callKey(event.toolCallId, meta), this.#runtime.options.clock.now());
  };

  readonly #onEnd = (event: ToolExecutionEndEvent, meta: EventMeta): void => {
    const tool = this.#toolNames.has(event.toolName) ? event.toolName : UNKNOWN_TOOL_LABEL;
    this.#calls.inc({ tool, outcome: outcomeOf(event) });
    if (meta.queueWaitMs !== undefined) this.#queueWaits.observe({ tool }, meta.queueWaitMs / 1000);
    if (meta.runMs !== undefined) this.#runTimes.observe({ tool }, meta.runMs / 1000);
    const key = callKey(event.toolCallId, meta);
    const startedAt = this.#startedAt.get(key);
    if (startedAt === undefined) return;
    this.#startedAt.delete(key);
    this.#durations.observe({ tool }, Math.max(0, this.#runtime.options.clock.now() - startedAt) / 1000);
  };
}

function callKey(toolCallId: string, meta: EventMeta): string {
  return `${meta.batchId}\u0000${toolCallId}`;
}

/** `ok`, `error`, or a toolpool fault's code in lower case; a tool's own codes count as `error`, to bound the label set. */
function outcomeOf(event: ToolExecutionEndEvent): string {
  if (!event.isError) return "ok";
  const code = (event.result.details as { code?: unknown } | null | undefined)?.code;
  return typeof code === "string" && Object.hasOwn(errorCodes, code) ? code.toLowerCase() : "error";
}
