import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";

import { compiledValidator } from "../compiled-validators.js";
import { describeValue, ToolpoolError } from "../errors.js";
import { maxTimerMs, refuseUnknownOptions } from "../option-checks.js";
import type { JsonSchema, ToolExecutionMode } from "../types.js";
import { findTooSmallResourceLimit } from "./minimum-resource-limits.js";

/** JS heap limits of each worker thread (Node's `resourceLimits`). */
export interface WorkerResourceLimits {
  /** Size of the main heap, in MiB; at least 16 (see `minimumResourceLimits`). */
  maxOldGenerationSizeMb?: number;
  /** Size of the heap space for recently created objects, in MiB. */
  maxYoungGenerationSizeMb?: number;
  /** Size of the pre-allocated memory range for generated code, in MiB. */
  codeRangeSizeMb?: number;
  /** Default maximum stack size of the thread, in MiB; at least 1 (see `minimumResourceLimits`). */
  stackSizeMb?: number;
}

/** What {@link workerTool} takes. */
export interface WorkerToolOptions<TArgs = any> {
  /** The name the model calls the tool by; unique within a runtime. */
  name: string;
  /** Human-readable label. @default name */
  label?: string;
  description: string;
  /** JSON Schema of the arguments (TypeBox schemas qualify). */
  parameters: JsonSchema;
  /**
   * The ES module holding the execute function: a `file:` URL (string or
   * `URL`), or a path (relative paths resolve against `process.cwd()`).
   * Prefer `new URL("./my-tool.js", import.meta.url)`.
   */
  module: string | URL;
  /** The module's export to call, `async (args, ctx) => AgentToolResult`. @default "execute" */
  exportName?: string;
  /** `"sequential"` forces the whole batch to run sequentially, as in pi. */
  executionMode?: ToolExecutionMode;
  /** Compatibility shim for raw arguments; runs in the coordinator, before validation. */
  prepareArguments?: (args: unknown) => TArgs;
  /**
   * Time limit in milliseconds, counted from when the call starts running in a
   * worker (never while it waits in the queue). Past it the worker is
   * terminated and the call ends with a `TP_ERR_TIMEOUT` error result.
   * @default undefined (no limit)
   */
  timeoutMs?: number;
  /**
   * JS heap limits for this tool's calls. A tool that sets them runs on a
   * pool of its own, so that its limits cannot tighten (or loosen) anyone
   * else's; past them the call ends with `TP_ERR_OUT_OF_MEMORY`. Limits too
   * small for a worker to start are refused (see `minimumResourceLimits`).
   * @default the runtime's `pool.resourceLimits`
   */
  resourceLimits?: WorkerResourceLimits;
  /** Overrides the runtime's `pool.maxResultBytes` for this tool. @default the runtime's */
  maxResultBytes?: number;
  /**
   * Most calls of this tool executing at once, across every batch and session
   * of the runtime (nested calls included). A call over it waits for a slot,
   * first come first served, and never fails for it. An integer >= 1. The
   * runtime's `maxConcurrency` option may set it for any tool by name.
   * @default undefined (no cap)
   */
  maxConcurrency?: number;
  /**
   * How many turns of its session's share one call uses when sessions take
   * turns on the pool: give a heavy tool a higher cost, so that a session
   * calling it waits longer between its calls than one calling light tools.
   * An integer from 1 to 1000.
   * @default 1
   */
  cost?: number;
  /**
   * Declares that running a call twice does no harm (a pure function of its
   * arguments, like `hash`). Only such a tool's remote calls are resubmitted
   * after their fleet node was lost (`fleet.nodeLossRetries`); any other call
   * then ends with `TP_ERR_NODE_LOST`, never run a second time.
   * @default false
   */
  idempotent?: boolean;
  /**
   * Computes, on the main thread, a value the call's execute receives as
   * `ctx.context` (structured-cloned to the worker): what a tool needs to
   * know of the call's session that its arguments do not say, such as the
   * session's workspace folder. Called once per call, just before the call
   * is handed to the pool, with the call's id and its batch's `sessionKey`;
   * a throw ends the call with an error result holding its message.
   * Calls sent to fleet nodes do not get it.
   * @default undefined (`ctx.context` is undefined)
   */
  context?: (call: WorkerCallInfo) => unknown;
  /**
   * Runs the tool's calls on a pool of their own, shared by every tool of the
   * runtime that names the same pool, with `maxThreads` threads (the
   * runtime's `pool` options otherwise): for tools that spend their calls
   * waiting on child processes or I/O rather than on CPU, which want more
   * threads than cores, without giving CPU-bound tools as many. Tools with
   * `resourceLimits` keep a pool of their own and may not name one.
   * @default undefined (the runtime's shared pool)
   */
  pool?: WorkerToolPool;
  /**
   * More fields of the pi `AgentTool` that `runtime.agentTools()` gives for
   * this tool, as they are: for a worker tool that stands in for a pi tool
   * whose `AgentTool` has them (pi's `outputSchema` and
   * `constrainedSampling`, which pi hands to the model's provider; a pi
   * coding tool's `promptSnippet` and `promptGuidelines`, which pi's coding
   * agent puts into its system prompt). The runtime neither reads nor checks
   * them. A name that is one of this definition's own options (`name`,
   * `parameters`, `prepareArguments`, …) or `execute` is refused.
   * @default undefined (none)
   */
  agentToolFields?: Readonly<Record<string, unknown>>;
}

/** A pool that worker tools share (see {@link WorkerToolOptions.pool}). */
interface WorkerToolPool {
  /** Tools naming the same pool share it. */
  readonly name: string;
  /** Its threads. @default the runtime's `pool.maxThreads` */
  readonly maxThreads?: number;
  /**
   * Most threads of this pool one session holds at once, as the runtime's
   * `pool.maxRunningPerSession` does for its shared pool: a session's other
   * calls of this pool wait while other sessions' calls take its free
   * threads. Like `maxThreads`, the first definition naming the pool that
   * gives one sets it.
   * @default the runtime's `pool.maxRunningPerSession`
   */
  readonly maxRunningPerSession?: number;
}

/** What a worker tool's {@link WorkerToolOptions.context} function learns of a call. */
export interface WorkerCallInfo {
  readonly toolCallId: string;
  /** The batch's `sessionKey`; undefined for calls without one. */
  readonly sessionKey: string | undefined;
}

const workerToolBrand = Symbol.for("toolpool.workerTool");

/** A worker tool definition, as returned by {@link workerTool}. Frozen. */
export interface WorkerTool<TArgs = any> {
  readonly [workerToolBrand]: true;
  readonly name: string;
  readonly label: string;
  readonly description: string;
  readonly parameters: JsonSchema;
  /** The module as an absolute `file:` URL string. */
  readonly moduleUrl: string;
  readonly exportName: string;
  readonly executionMode?: ToolExecutionMode;
  readonly prepareArguments?: (args: unknown) => TArgs;
  readonly timeoutMs?: number;
  readonly resourceLimits?: Readonly<WorkerResourceLimits>;
  readonly maxResultBytes?: number;
  /** See {@link WorkerToolOptions.maxConcurrency}. */
  readonly maxConcurrency?: number;
  /** Turns of its session's share a call uses (see {@link WorkerToolOptions.cost}). */
  readonly cost: number;
  readonly idempotent: boolean;
  /** See {@link WorkerToolOptions.context}. */
  readonly context?: (call: WorkerCallInfo) => unknown;
  /** See {@link WorkerToolOptions.pool}. */
  readonly pool?: WorkerToolPool;
  /** See {@link WorkerToolOptions.agentToolFields}. Frozen. */
  readonly agentToolFields?: Readonly<Record<string, unknown>>;
}

/** Every option of {@link WorkerToolOptions}, by name: a name not here is refused (typed, so that a new option is listed). */
const workerToolOptionNames = Object.keys({
  name: true,
  label: true,
  description: true,
  parameters: true,
  module: true,
  exportName: true,
  executionMode: true,
  prepareArguments: true,
  timeoutMs: true,
  resourceLimits: true,
  maxResultBytes: true,
  maxConcurrency: true,
  cost: true,
  idempotent: true,
  context: true,
  pool: true,
  agentToolFields: true,
} satisfies Record<keyof WorkerToolOptions, true>);
/** Names `agentToolFields` may not hold: those the definition sets itself, and the `execute` the runtime makes. */
const ownAgentToolNames: ReadonlySet<string> = new Set([
  "name",
  "label",
  "description",
  "parameters",
  "executionMode",
  "prepareArguments",
  "execute",
]);
const poolOptionNames = Object.keys({ name: true, maxThreads: true, maxRunningPerSession: true } satisfies Record<keyof WorkerToolPool, true>);
const resourceLimitNames = Object.keys({
  maxOldGenerationSizeMb: true,
  maxYoungGenerationSizeMb: true,
  codeRangeSizeMb: true,
  stackSizeMb: true,
} satisfies Record<keyof WorkerResourceLimits, true>);

/** Refuses an option of a worker tool's definition (or of its `path`) that does not exist, naming the closest known one. */
function refuseUnknownToolOptions(options: object, known: readonly string[], path = ""): void {
  refuseUnknownOptions(options, known, path, "worker tool option", "TP_ERR_INVALID_TOOL");
}

/**
 * Defines a tool whose execute function runs on a worker thread of the pool.
 * Throws a `ToolpoolError` (`TP_ERR_INVALID_TOOL`) for an invalid definition,
 * an option that does not exist included (``Unknown worker tool option
 * `timeotMs`; did you mean `timeoutMs`?``).
 *
 * @example
 * ```ts
 * const wordCount = workerTool({
 *   name: "word_count",
 *   description: "Counts the words of a text",
 *   parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
 *   module: new URL("./word-count.js", import.meta.url),
 * });
 * ```
 */
export function workerTool<TArgs = any>(options: WorkerToolOptions<TArgs>): WorkerTool<TArgs> {
  if (typeof options !== "object" || options === null) {
    throw invalidTool("workerTool expects an options object", options);
  }
  refuseUnknownToolOptions(options, workerToolOptionNames);
  const {
    name,
    description,
    parameters,
    module,
    exportName = "execute",
    executionMode,
    prepareArguments,
    timeoutMs,
    resourceLimits,
    maxResultBytes,
    maxConcurrency,
    cost = 1,
    idempotent = false,
    context,
    pool,
    agentToolFields,
  } = options;
  if (typeof name !== "string" || name.length === 0) throw invalidTool("Expected `name` to be a non-empty string", name);
  const where = `worker tool "${name}"`;
  if (typeof description !== "string") throw invalidTool(`Expected \`description\` of ${where} to be a string`, description);
  if (typeof parameters !== "object" || parameters === null || Array.isArray(parameters)) {
    throw invalidTool(`Expected \`parameters\` of ${where} to be a JSON Schema object`, parameters);
  }
  if (typeof exportName !== "string" || exportName.length === 0) {
    throw invalidTool(`Expected \`exportName\` of ${where} to be a non-empty string`, exportName);
  }
  if (executionMode !== undefined && executionMode !== "sequential" && executionMode !== "parallel") {
    throw invalidTool(`Expected \`executionMode\` of ${where} to be "sequential" or "parallel"`, executionMode);
  }
  if (prepareArguments !== undefined && typeof prepareArguments !== "function") {
    throw invalidTool(`Expected \`prepareArguments\` of ${where} to be a function`, prepareArguments);
  }
  if (timeoutMs !== undefined && !(typeof timeoutMs === "number" && timeoutMs > 0 && timeoutMs <= maxTimerMs)) {
    throw invalidTool(`Expected \`timeoutMs\` of ${where} to be a number > 0 and <= ${maxTimerMs}`, timeoutMs);
  }
  if (maxResultBytes !== undefined && !(Number.isInteger(maxResultBytes) && maxResultBytes >= 1)) {
    throw invalidTool(`Expected \`maxResultBytes\` of ${where} to be an integer >= 1`, maxResultBytes);
  }
  if (maxConcurrency !== undefined && !(Number.isInteger(maxConcurrency) && maxConcurrency >= 1)) {
    throw invalidTool(`Expected \`maxConcurrency\` of ${where} to be an integer >= 1`, maxConcurrency);
  }
  if (!(Number.isInteger(cost) && cost >= 1 && cost <= 1_000)) {
    throw invalidTool(`Expected \`cost\` of ${where} to be an integer from 1 to 1000`, cost);
  }
  if (typeof resourceLimits === "object" && resourceLimits !== null) refuseUnknownToolOptions(resourceLimits, resourceLimitNames, "resourceLimits");
  if (resourceLimits !== undefined && !compiledValidator("resource-limits")(resourceLimits)) {
    throw invalidTool(
      `Expected \`resourceLimits\` of ${where} to hold only positive maxOldGenerationSizeMb, maxYoungGenerationSizeMb, codeRangeSizeMb, stackSizeMb`,
      resourceLimits,
    );
  }
  const tooSmall = resourceLimits && findTooSmallResourceLimit(resourceLimits);
  if (tooSmall) throw invalidTool(`Expected \`resourceLimits.${tooSmall.name}\` of ${where} to be ${tooSmall.expected}`, tooSmall.received);
  if (typeof idempotent !== "boolean") throw invalidTool(`Expected \`idempotent\` of ${where} to be a boolean`, idempotent);
  if (context !== undefined && typeof context !== "function") throw invalidTool(`Expected \`context\` of ${where} to be a function`, context);
  if (pool !== undefined) {
    if (typeof pool !== "object" || pool === null || typeof pool.name !== "string" || pool.name === "") {
      throw invalidTool(`Expected \`pool\` of ${where} to be { name, maxThreads?, maxRunningPerSession? } with a non-empty name`, pool);
    }
    refuseUnknownToolOptions(pool, poolOptionNames, "pool");
    for (const key of ["maxThreads", "maxRunningPerSession"] as const) {
      const value = pool[key];
      if (value !== undefined && !(Number.isInteger(value) && value >= 1 && value <= 1024)) {
        throw invalidTool(`Expected \`pool.${key}\` of ${where} to be an integer from 1 to 1024`, value);
      }
    }
    if (resourceLimits !== undefined) throw invalidTool(`Expected ${where} to have either \`resourceLimits\` or \`pool\`, not both`, pool);
  }
  if (agentToolFields !== undefined) {
    if (typeof agentToolFields !== "object" || agentToolFields === null || Array.isArray(agentToolFields))
      throw invalidTool(`Expected \`agentToolFields\` of ${where} to be an object`, agentToolFields);
    const taken = Object.keys(agentToolFields).find((key) => ownAgentToolNames.has(key));
    if (taken !== undefined)
      throw invalidTool(`Expected \`agentToolFields\` of ${where} to leave out \`${taken}\`, which the definition sets itself`, agentToolFields);
  }
  const tool: WorkerTool<TArgs> = {
    [workerToolBrand]: true,
    name,
    label: options.label ?? name,
    description,
    parameters,
    moduleUrl: toModuleUrl(module, where),
    exportName,
    ...(executionMode === undefined ? {} : { executionMode }),
    ...(prepareArguments === undefined ? {} : { prepareArguments }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(resourceLimits === undefined ? {} : { resourceLimits: Object.freeze({ ...resourceLimits }) }),
    ...(maxResultBytes === undefined ? {} : { maxResultBytes }),
    ...(maxConcurrency === undefined ? {} : { maxConcurrency }),
    cost,
    idempotent,
    ...(context === undefined ? {} : { context }),
    ...(pool === undefined
      ? {}
      : {
          pool: Object.freeze({
            name: pool.name,
            ...(pool.maxThreads === undefined ? {} : { maxThreads: pool.maxThreads }),
            ...(pool.maxRunningPerSession === undefined ? {} : { maxRunningPerSession: pool.maxRunningPerSession }),
          }),
        }),
    ...(agentToolFields === undefined ? {} : { agentToolFields: Object.freeze({ ...agentToolFields }) }),
  };
  return Object.freeze(tool);
}

/**
 * The size and per-session cap of the named pool `name`, as the runtime makes
 * it for `tools` (its worker tools that run on this machine): each from the
 * first tool naming the pool that gives it; undefined where none does, and
 * the runtime's `pool` options apply.
 */
export function namedPoolSettings(
  tools: readonly WorkerTool[],
  name: string,
): { maxThreads: number | undefined; maxRunningPerSession: number | undefined } {
  const sharing = tools.filter((tool) => tool.pool?.name === name);
  return {
    maxThreads: sharing.find((tool) => tool.pool?.maxThreads !== undefined)?.pool?.maxThreads,
    maxRunningPerSession: sharing.find((tool) => tool.pool?.maxRunningPerSession !== undefined)?.pool?.maxRunningPerSession,
  };
}

/** True for a definition made by {@link workerTool}. */
export function isWorkerTool(value: unknown): value is WorkerTool {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[workerToolBrand] === true;
}

function toModuleUrl(module: unknown, where: string): string {
  if (module instanceof URL) {
    if (module.protocol !== "file:") throw invalidTool(`Expected \`module\` of ${where} to be a file: URL`, module.href);
    return module.href;
  }
  if (typeof module !== "string" || module.length === 0) {
    throw invalidTool(`Expected \`module\` of ${where} to be a path or a file: URL`, module);
  }
  if (module.startsWith("file:")) return new URL(module).href;
  return pathToFileURL(isAbsolute(module) ? module : resolve(module)).href;
}

function invalidTool(expectation: string, received: unknown): ToolpoolError {
  return new ToolpoolError("TP_ERR_INVALID_TOOL", `${expectation}, got ${describeValue(received)}`);
}
