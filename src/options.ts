import { availableParallelism } from "node:os";

import type { ErrorObject } from "ajv";

import { systemClock, type Clock } from "./clock.js";
import { compiledValidator } from "./compiled-validators.js";
import { ToolpoolError } from "./errors.js";
import { resolveFleetOptions, type FleetOptions, type ResolvedFleetOptions } from "./contracts/fleet-options.js";
import { invalidOption, invalidOptionFromSchema, maxTimerMs, refuseUnknownOptions } from "./option-checks.js";
import type { AfterToolCallHook, AgentTool, BeforeToolCallHook, ToolExecutionMode } from "./types.js";
import { findTooSmallResourceLimit } from "./contracts/minimum-resource-limits.js";
import type { WorkerResourceLimits, WorkerTool } from "./contracts/worker-tool.js";

export type PiVersion = "0.73" | "1.6";

/** The oldest Node that pi 1.6 runs on: its packages' `engines`. */
export const pi16MinimumNode = [22, 19, 0] as const;

export function supportsPi16(version: string = process.versions.node): boolean {
  const parts = version.split(".").map(Number);
  for (let index = 0; index < pi16MinimumNode.length; index++) {
    const part = parts[index] ?? 0;
    if (part !== pi16MinimumNode[index]) return part > pi16MinimumNode[index]!;
  }
  return true;
}

export type ToolDefinition = AgentTool | WorkerTool;

export interface PoolOptions {
  /** Most worker threads; further worker calls wait in the queue. @default os.availableParallelism() */
  maxThreads?: number;
  /** Kept alive while idle, so a burst never pays a start-up. Never 0: Piscina replaces lost workers only up to it. @default maxThreads */
  minThreads?: number;
  /** Milliseconds an idle thread above `minThreads` lives. @default 30000 */
  idleTimeout?: number;
  /** Most worker calls waiting for a thread; past it a call ends at once with `TP_ERR_QUEUE_FULL`. @default undefined (unbounded) */
  maxQueue?: number;
  /** JS heap limits of each worker thread. @default Node's defaults */
  resourceLimits?: WorkerResourceLimits;
  /** Milliseconds a worker call may take to stop after its batch's abort before its worker is terminated. @default 500 */
  abortGraceMs?: number;
  /** Most bytes (strings as UTF-8, buffers) a worker call's result may hold; past it, `TP_ERR_RESULT_TOO_LARGE`. @default 1048576 */
  maxResultBytes?: number;
  /** Milliseconds a call's leftover work (timers, unawaited I/O) may take; still pending, it retires the worker. @default 20 */
  leftoverGraceMs?: number;
  /** The worker threads' environment; pass an object to give tools only what they need. @default undefined (the host's `process.env`) */
  env?: Record<string, string>;
  /** Most threads one session (`sessionKey`) may hold at once; its other calls wait. @default undefined (no cap) */
  maxRunningPerSession?: number;
  /** `"fair"`: sessions take turns for threads (see `sessionKey`, `workerTool`'s `cost`); `"fifo"`: first come, first served. @default "fair" */
  scheduling?: "fair" | "fifo";
}

export interface RuntimeOptions {
  /** Inline pi `AgentTool`s and/or `workerTool(...)` definitions. @default [] */
  tools?: readonly ToolDefinition[];
  /** Which pi's rules batches follow: 0.73.1 or 1.6.0 (Node >= 22.19). @default "0.73" */
  pi?: PiVersion;
  /** How a batch runs, as pi's `toolExecution`. @default "parallel" */
  toolExecution?: ToolExecutionMode;
  /** pi's `beforeToolCall`: may block a call. Runs in the coordinator's mailbox, one hook at a time. */
  beforeToolCall?: BeforeToolCallHook;
  /** pi's `afterToolCall`: may override the result field by field. Runs in the coordinator's mailbox. */
  afterToolCall?: AfterToolCallHook;
  pool?: PoolOptions;
  /** Source of time for timeouts and grace periods. @default the system clock */
  clock?: Clock;
  /** Emit OpenTelemetry spans through `@opentelemetry/api`'s global tracer provider, when that optional package is installed. @default true */
  tracing?: boolean;
  /** Runs worker calls on a fleet of nodes (`toolpool node`) through Redis; see docs/fleet.md. @default undefined (local pool only) */
  fleet?: FleetOptions;
  /** Most calls of a tool (by name, nested included) executing at once; over it a call waits. Wins over the tool's own. @default {} */
  maxConcurrency?: Readonly<Record<string, number>>;
  /** Most calls of one session executing at once, across its batches (`pool.maxRunningPerSession` counts threads). @default undefined (no cap) */
  maxConcurrencyPerSession?: number;
}

export interface ResolvedPoolOptions {
  readonly maxThreads: number;
  readonly minThreads: number;
  readonly idleTimeout: number;
  readonly maxQueue: number | undefined;
  readonly resourceLimits: Readonly<WorkerResourceLimits> | undefined;
  readonly abortGraceMs: number;
  readonly maxResultBytes: number;
  readonly leftoverGraceMs: number;
  readonly env: Readonly<Record<string, string>> | undefined;
  readonly maxRunningPerSession: number | undefined;
  readonly scheduling: "fair" | "fifo";
}

/** Runtime options after validation and defaults; frozen. */
export interface ResolvedRuntimeOptions {
  readonly tools: readonly ToolDefinition[];
  readonly pi: PiVersion;
  readonly toolExecution: ToolExecutionMode;
  readonly beforeToolCall: BeforeToolCallHook | undefined;
  readonly afterToolCall: AfterToolCallHook | undefined;
  readonly pool: ResolvedPoolOptions;
  readonly clock: Clock;
  readonly tracing: boolean;
  readonly fleet: ResolvedFleetOptions | undefined;
  /** A worker tool's own cap is on its definition. */
  readonly maxConcurrency: Readonly<Record<string, number>>;
  readonly maxConcurrencyPerSession: number | undefined;
}

const positiveMb = { type: "number", exclusiveMinimum: 0 };

export const resourceLimitsSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    maxOldGenerationSizeMb: positiveMb,
    maxYoungGenerationSizeMb: positiveMb,
    codeRangeSizeMb: positiveMb,
    stackSizeMb: positiveMb,
  },
} as const;

/** Defaults live here and nowhere else, but `pool.maxThreads`'s: the machine's parallelism is known only at runtime. */
export const dataOptionsSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    pi: { enum: ["0.73", "1.6"], default: "0.73" },
    toolExecution: { enum: ["parallel", "sequential"], default: "parallel" },
    tracing: { type: "boolean", default: true },
    maxConcurrency: { type: "object", additionalProperties: { type: "integer", minimum: 1 } },
    maxConcurrencyPerSession: { type: "integer", minimum: 1 },
    pool: {
      type: "object",
      default: {},
      additionalProperties: false,
      properties: {
        maxThreads: { type: "integer", minimum: 1 },
        minThreads: { type: "integer", minimum: 1 },
        idleTimeout: { type: "number", minimum: 0, maximum: maxTimerMs, default: 30_000 },
        maxQueue: { type: "integer", minimum: 0 },
        abortGraceMs: { type: "number", minimum: 0, maximum: maxTimerMs, default: 500 },
        maxResultBytes: { type: "integer", minimum: 1, default: 1_048_576 },
        leftoverGraceMs: { type: "number", minimum: 0, maximum: maxTimerMs, default: 20 },
        resourceLimits: resourceLimitsSchema,
        env: { type: "object", additionalProperties: { type: "string" } },
        maxRunningPerSession: { type: "integer", minimum: 1 },
        scheduling: { enum: ["fair", "fifo"], default: "fair" },
      },
    },
  },
} as const;

/** Typed, so that a new option must be listed. */
const runtimeOptionNames = Object.keys({
  tools: true,
  pi: true,
  toolExecution: true,
  beforeToolCall: true,
  afterToolCall: true,
  pool: true,
  clock: true,
  tracing: true,
  fleet: true,
  maxConcurrency: true,
  maxConcurrencyPerSession: true,
} satisfies Record<keyof RuntimeOptions, true>);

/** Validates once, applies defaults, freezes; never mutates the caller's object. Throws `TP_ERR_INVALID_OPTION`. */
export function resolveRuntimeOptions(options: RuntimeOptions | undefined): ResolvedRuntimeOptions {
  if (options === undefined) options = {};
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw invalidOption("options", "an object", options);
  }
  refuseUnknownOptions(options, runtimeOptionNames);
  const {
    tools = [],
    beforeToolCall,
    afterToolCall,
    clock = systemClock,
    pi,
    toolExecution,
    pool,
    tracing,
    fleet,
    maxConcurrency,
    maxConcurrencyPerSession,
  } = options;
  if (!Array.isArray(tools)) throw invalidOption("tools", "an array of tools", tools);
  if (beforeToolCall !== undefined && typeof beforeToolCall !== "function") {
    throw invalidOption("beforeToolCall", "a function", beforeToolCall);
  }
  if (afterToolCall !== undefined && typeof afterToolCall !== "function") {
    throw invalidOption("afterToolCall", "a function", afterToolCall);
  }
  if (typeof clock?.now !== "function" || typeof clock.setTimeout !== "function" || typeof clock.clearTimeout !== "function") {
    throw invalidOption("clock", "an object with now, setTimeout and clearTimeout", clock);
  }
  // The data options are copied before ajv writes defaults into them.
  const data: Pick<RuntimeOptions, "pi" | "toolExecution" | "pool" | "tracing" | "maxConcurrency" | "maxConcurrencyPerSession"> = {};
  if (pi !== undefined) data.pi = pi;
  if (toolExecution !== undefined) data.toolExecution = toolExecution;
  if (tracing !== undefined) data.tracing = tracing;
  if (pool !== undefined) data.pool = copyData(pool, "pool");
  if (maxConcurrency !== undefined) data.maxConcurrency = copyData(maxConcurrency, "maxConcurrency");
  if (maxConcurrencyPerSession !== undefined) data.maxConcurrencyPerSession = maxConcurrencyPerSession;
  const validateDataOptions = compiledValidator("runtime-options");
  if (!validateDataOptions(data)) {
    const [error] = validateDataOptions.errors as ErrorObject[];
    throw invalidOptionFromSchema(error!, { pi, toolExecution, pool, tracing, maxConcurrency, maxConcurrencyPerSession });
  }
  const resolvedPi = data.pi ?? "0.73";
  if (resolvedPi === "1.6" && !supportsPi16()) {
    throw new ToolpoolError(
      "TP_ERR_INVALID_OPTION",
      `\`pi: "1.6"\` needs Node >= ${pi16MinimumNode.join(".")}, as pi 1.6 does; this is Node ${process.versions.node}. Use \`pi: "0.73"\` or a newer Node`,
    );
  }
  // The one default the schema cannot hold (see dataOptionsSchema).
  (data.pool as PoolOptions).maxThreads ??= availableParallelism();
  const resolvedPool = data.pool as Required<
    Pick<PoolOptions, "maxThreads" | "idleTimeout" | "abortGraceMs" | "maxResultBytes" | "leftoverGraceMs" | "scheduling">
  > &
    PoolOptions;
  const tooSmall = resolvedPool.resourceLimits && findTooSmallResourceLimit(resolvedPool.resourceLimits);
  if (tooSmall) throw invalidOption(`pool.resourceLimits.${tooSmall.name}`, tooSmall.expected, tooSmall.received);
  const resolvedFleet = fleet === undefined ? undefined : resolveFleetOptions(fleet);
  const minThreads = resolvedPool.minThreads ?? resolvedPool.maxThreads;
  if (minThreads > resolvedPool.maxThreads) {
    throw invalidOption("pool.minThreads", `an integer <= pool.maxThreads (${resolvedPool.maxThreads})`, minThreads);
  }
  return Object.freeze({
    tools: Object.freeze([...tools]),
    pi: resolvedPi,
    toolExecution: data.toolExecution ?? "parallel",
    beforeToolCall,
    afterToolCall,
    clock,
    tracing: data.tracing ?? true,
    fleet: resolvedFleet,
    maxConcurrency: Object.freeze(data.maxConcurrency ?? {}),
    maxConcurrencyPerSession: data.maxConcurrencyPerSession,
    pool: Object.freeze({
      maxThreads: resolvedPool.maxThreads,
      minThreads,
      idleTimeout: resolvedPool.idleTimeout,
      maxQueue: resolvedPool.maxQueue,
      resourceLimits: resolvedPool.resourceLimits && Object.freeze({ ...resolvedPool.resourceLimits }),
      abortGraceMs: resolvedPool.abortGraceMs,
      maxResultBytes: resolvedPool.maxResultBytes,
      leftoverGraceMs: resolvedPool.leftoverGraceMs,
      env: resolvedPool.env && Object.freeze({ ...resolvedPool.env }),
      maxRunningPerSession: resolvedPool.maxRunningPerSession,
      scheduling: resolvedPool.scheduling,
    }),
  });
}

function copyData<T>(value: T, name: string): T {
  try {
    return structuredClone(value);
  } catch {
    throw invalidOption(name, "plain data", value);
  }
}
