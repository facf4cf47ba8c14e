/** `toolpool mcp`'s limits on load (calls, sessions, pressure): the flags and what the MCP server is made with from them. */
import { InvalidArgumentError, Option } from "commander";

import type { Runtime } from "../index.js";
import type { McpCallGateOptions } from "../mcp/mcp-call-gate.js";
import { mcpCallGatePools } from "../mcp/mcp-gate-pools.js";
import type { McpSessionLimits } from "../mcp/mcp-sessions.js";
import { UsageError } from "./usage-error.js";

export interface McpLimitCliOptions {
  callTimeout?: number;
  maxQueue?: number;
  maxSessionCalls?: number;
  maxSessionRunning?: number;
  retryAfter?: number;
  maxSessions?: number;
  maxEventLoopDelay?: number;
  maxHeapUsed?: number;
  maxRss?: number;
  drainTimeout?: number;
}

const httpOnly = {
  maxSessions: "--max-sessions",
  maxSessionRunning: "--max-session-running",
  maxEventLoopDelay: "--max-event-loop-delay",
  maxHeapUsed: "--max-heap-used",
  maxRss: "--max-rss",
} as const;

/** What `--drain-timeout` is without the flag: as long as a built-in tool's call may run. */
export const defaultDrainTimeoutMs = 30_000;

export function mcpLimitOptions(): Option[] {
  return [
    new Option("--call-timeout <ms>", "time limit of every worker tool without one of its own (default: 30000 for the built-ins)").argParser(
      integerParser(1, 2_147_483_647),
    ),
    new Option("--max-queue <n>", "calls waiting for a thread, all sessions together; past it a call is refused (default: 1024)").argParser(
      integerParser(0),
    ),
    new Option("--max-session-calls <n>", "calls one session may have waiting or running; past it a call is refused (default: 128)").argParser(
      integerParser(1),
    ),
    new Option(
      "--max-session-running <n>",
      "with --http: threads of one pool one session may hold at once; its other calls wait while other sessions' start (default: half of each pool's threads, rounded up)",
    ).argParser(integerParser(1)),
    new Option("--retry-after <seconds>", "the Retry-After of a refusal for load (default: 1)").argParser(integerParser(0)),
    new Option(
      "--max-sessions <n>",
      "with --http: sessions open at once; a new one closes the idle session used least recently, or gets 503 while all are busy (default: 64)",
    ).argParser(integerParser(1)),
    new Option("--max-event-loop-delay <ms>", "with --http: event-loop delay past which requests get 503 (default: 1000; 0: off)").argParser(
      integerParser(0),
    ),
    new Option("--max-heap-used <bytes>", "with --http: heap in use past which requests get 503 (default: 0, off)").argParser(integerParser(0)),
    new Option("--max-rss <bytes>", "with --http: resident memory past which requests get 503 (default: 0, off)").argParser(integerParser(0)),
    new Option(
      "--drain-timeout <ms>",
      `on stdio: once input ends, how long calls already read may run on; then they are answered TP_ERR_CLOSED (default: ${defaultDrainTimeoutMs})`,
    ).argParser(integerParser(0, 2_147_483_647)),
  ];
}

/** Refuses a `--http`-only flag given without `--http`, and a stdio-only one given with it. */
export function checkHttpOnlyLimits(options: McpLimitCliOptions, isHttp: boolean): void {
  if (isHttp) {
    if (options.drainTimeout !== undefined)
      throw new UsageError("--drain-timeout is for stdio: over HTTP, calls in flight at shutdown are answered TP_ERR_CLOSED");
    return;
  }
  for (const [key, flag] of Object.entries(httpOnly)) {
    if (options[key as keyof typeof httpOnly] !== undefined) throw new UsageError(`${flag} needs --http: on stdio there is one session`);
  }
}

/**
 * Each pool runs as many calls as it has threads (the fleet's `maxOutstanding` for remote tools), so calls wait in the
 * gate, where one whose client is gone leaves unstarted. Over HTTP a session holds at most its share of a pool (half,
 * rounded up, or `--max-session-running`) and never more than the pool's own per-session cap; on stdio one session may hold all.
 */
export function callGateOptions(runtime: Runtime, options: McpLimitCliOptions, isHttp = true): McpCallGateOptions {
  const sessionRunning = isHttp ? options.maxSessionRunning : Number.MAX_SAFE_INTEGER;
  return {
    maxRunning: runtime.options.pool.maxThreads,
    pools: mcpCallGatePools(runtime),
    ...(sessionRunning === undefined ? {} : { maxSessionRunning: sessionRunning }),
    ...(options.maxQueue === undefined ? {} : { maxQueue: options.maxQueue }),
    ...(options.maxSessionCalls === undefined ? {} : { maxSessionCalls: options.maxSessionCalls }),
    ...(options.retryAfter === undefined ? {} : { retryAfterSeconds: options.retryAfter }),
  };
}

export function sessionLimits(options: McpLimitCliOptions): McpSessionLimits {
  const limits: McpSessionLimits = {
    maxSessions: options.maxSessions,
    maxEventLoopDelayMs: options.maxEventLoopDelay,
    maxHeapUsedBytes: options.maxHeapUsed,
    maxRssBytes: options.maxRss,
    retryAfterSeconds: options.retryAfter,
  };
  return Object.fromEntries(Object.entries(limits).filter(([, value]) => value !== undefined)) as McpSessionLimits;
}

/** Digits only, from `minimum` to `maximum`; commander reports the message as a usage error naming the flag. */
function integerParser(minimum: number, maximum = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value) => {
    const number = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(number) || number < minimum || number > maximum) {
      throw new InvalidArgumentError(
        maximum === Number.MAX_SAFE_INTEGER ? `Expected an integer >= ${minimum}.` : `Expected an integer from ${minimum} to ${maximum}.`,
      );
    }
    return number;
  };
}
