/** The MCP server's pressure check: `toolpool serve`'s limits, without `@fastify/under-pressure` (a Fastify plugin). */
import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";

import { integerOption } from "./mcp-options.js";

/** The limits past which the server sheds load; 0 turns one off. */
export interface McpPressureLimits {
  /** Mean event-loop delay (ms, sampled every second) past which requests are refused. @default 1000 */
  maxEventLoopDelayMs?: number;
  /** Heap bytes in use past which requests are refused. @default 0 (off) */
  maxHeapUsedBytes?: number;
  /** Resident set size in bytes past which requests are refused. @default 0 (off) */
  maxRssBytes?: number;
}

/** As under-pressure does by default. */
const sampleIntervalMs = 1000;
/** Taken off the mean, as under-pressure does. */
const resolutionMs = 10;

/** `overload()` says which limit is past, if any. */
export class McpPressure {
  readonly #limits: Required<McpPressureLimits>;
  readonly #histogram: IntervalHistogram | undefined;
  readonly #timer: NodeJS.Timeout | undefined;
  #overload: string | undefined;

  constructor(limits: McpPressureLimits = {}) {
    this.#limits = {
      maxEventLoopDelayMs: integerOption(limits.maxEventLoopDelayMs, "maxEventLoopDelayMs", 0, 1000),
      maxHeapUsedBytes: integerOption(limits.maxHeapUsedBytes, "maxHeapUsedBytes", 0, 0),
      maxRssBytes: integerOption(limits.maxRssBytes, "maxRssBytes", 0, 0),
    };
    const { maxEventLoopDelayMs, maxHeapUsedBytes, maxRssBytes } = this.#limits;
    if (maxEventLoopDelayMs === 0 && maxHeapUsedBytes === 0 && maxRssBytes === 0) return;
    if (maxEventLoopDelayMs > 0) {
      this.#histogram = monitorEventLoopDelay({ resolution: resolutionMs });
      this.#histogram.enable();
    }
    // Sampled once at once, so that a memory limit holds from the first request.
    this.#sample();
    this.#timer = setInterval(() => this.#sample(), sampleIntervalMs);
    this.#timer.unref();
  }

  overload(): string | undefined {
    return this.#overload;
  }

  dispose(): void {
    clearInterval(this.#timer);
    this.#histogram?.disable();
  }

  #sample(): void {
    const { maxEventLoopDelayMs, maxHeapUsedBytes, maxRssBytes } = this.#limits;
    let delayMs = 0;
    if (this.#histogram !== undefined) {
      const mean = this.#histogram.mean / 1e6;
      delayMs = Number.isFinite(mean) ? Math.max(0, Math.round(mean - resolutionMs)) : 0;
      this.#histogram.reset();
    }
    const memory = maxHeapUsedBytes > 0 || maxRssBytes > 0 ? process.memoryUsage() : undefined;
    if (maxEventLoopDelayMs > 0 && delayMs > maxEventLoopDelayMs) this.#overload = `event-loop delay ${delayMs} ms`;
    else if (memory !== undefined && maxHeapUsedBytes > 0 && memory.heapUsed > maxHeapUsedBytes)
      this.#overload = `heap used ${memory.heapUsed} bytes`;
    else if (memory !== undefined && maxRssBytes > 0 && memory.rss > maxRssBytes) this.#overload = `RSS ${memory.rss} bytes`;
    else this.#overload = undefined;
  }
}
