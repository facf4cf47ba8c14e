/**
 * The `/metrics` series that come from the pools' lifecycle events. They listen from the first scrape on (so counts
 * start there): a server whose metrics nobody reads makes no event objects.
 */
import type { Counter, Histogram, Registry } from "prom-client";

import type { PoolCallEvent, PoolThreadEvent } from "../contracts/pool-events.js";
import type { Runtime } from "../runtime.js";
import { loadPromClient } from "./lazy-modules.js";

/** The `tool` label of a tool the runtime does not list (a part of a spread call): bounds the label set. */
const OTHER_TOOL_LABEL = "(other)";

const POOL_BUCKETS = [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export class PoolEventMetrics {
  readonly #runtime: Runtime;
  readonly #toolNames: ReadonlySet<string>;
  readonly #queueWaits: Histogram<"pool" | "tool">;
  readonly #runTimes: Histogram<"pool" | "tool">;
  readonly #calls: Counter<"pool" | "tool" | "outcome">;
  /** Per pool, the call (its `seq`) each busy thread runs. */
  readonly #busy = new Map<string, Map<number, number>>();
  #isAttached = false;
  #isDisposed = false;

  constructor(runtime: Runtime, registry: Registry, toolNames: ReadonlySet<string>) {
    const { Counter, Gauge, Histogram } = loadPromClient();
    this.#runtime = runtime;
    this.#toolNames = toolNames;
    const registers = [registry];
    this.#queueWaits = new Histogram({
      name: "toolpool_pool_queue_wait_seconds",
      help: "Time a worker call waited for a thread of its pool, by pool and tool (from the pools' started events).",
      labelNames: ["pool", "tool"] as const,
      buckets: POOL_BUCKETS,
      registers,
    });
    this.#runTimes = new Histogram({
      name: "toolpool_pool_run_seconds",
      help: "Time a worker call ran on its thread, by pool and tool (from the pools' ended events; calls that never started are not observed).",
      labelNames: ["pool", "tool"] as const,
      buckets: POOL_BUCKETS,
      registers,
    });
    this.#calls = new Counter({
      name: "toolpool_pool_calls_total",
      help: "Worker calls a pool ended, by pool, tool and outcome: ok, error, or the lower-cased code of a fault (from the pools' ended events).",
      labelNames: ["pool", "tool", "outcome"] as const,
      registers,
    });
    const busy = this.#busy;
    new Gauge({
      name: "toolpool_pool_threads_busy",
      help: "Threads running a call now, by pool (from the pools' events).",
      labelNames: ["pool"] as const,
      registers,
      collect() {
        for (const [pool, threads] of busy) this.set({ pool }, threads.size);
      },
    });
  }

  /** Starts listening to the pools (on the first scrape); idempotent. */
  attach(): void {
    if (this.#isAttached || this.#isDisposed) return;
    this.#isAttached = true;
    this.#runtime.poolEvents.on(this.#onCall);
    this.#runtime.poolEvents.onThread(this.#onThread);
  }

  dispose(): void {
    this.#isDisposed = true;
    this.#runtime.poolEvents.off(this.#onCall);
    this.#runtime.poolEvents.offThread(this.#onThread);
  }

  readonly #onCall = (event: PoolCallEvent): void => {
    if (event.type === "queued") return;
    const labels = { pool: event.pool, tool: this.#toolNames.has(event.tool) ? event.tool : OTHER_TOOL_LABEL };
    const threads = this.#threadsOf(event.pool);
    if (event.type === "started") {
      this.#queueWaits.observe(labels, event.queueWaitMs / 1000);
      if (event.threadId !== undefined) threads.set(event.threadId, event.seq);
      return;
    }
    this.#calls.inc({ ...labels, outcome: event.code?.toLowerCase() ?? event.outcome });
    const { timing } = event;
    if (timing.startedAt !== undefined) this.#runTimes.observe(labels, (timing.runMs ?? Math.max(0, timing.endedAt - timing.startedAt)) / 1000);
    // The thread may already run its next call (started before this one's end came).
    if (event.threadId !== undefined && threads.get(event.threadId) === event.seq) threads.delete(event.threadId);
  };

  readonly #onThread = (event: PoolThreadEvent): void => {
    if (event.change === "exited") this.#threadsOf(event.pool).delete(event.threadId);
  };

  #threadsOf(pool: string): Map<number, number> {
    let threads = this.#busy.get(pool);
    if (threads === undefined) {
      threads = new Map();
      this.#busy.set(pool, threads);
    }
    return threads;
  }
}
