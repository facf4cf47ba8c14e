import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";

import { compiledValidator } from "../compiled-validators.js";
import { describeValue, ToolpoolError } from "../errors.js";
import { maxTimerMs, refuseUnknownOptions } from "../option-checks.js";
import type { JsonSchema, ToolExecutionMode } from "../types.js";
import { findTooSmallResourceLimit } from "./minimum-resource-limits.js";

export interface WorkerResourceLimits {
  /** MiB; at least 16 (see `minimumResourceLimits`). */
  maxOldGenerationSizeMb?: number;
  maxYoungGenerationSizeMb?: number;
  codeRangeSizeMb?: number;
  /** MiB; at least 1 (see `minimumResourceLimits`). */
  stackSizeMb?: number;
}

export interface WorkerToolOptions<TArgs = any> {
  name: string;
  /** @default name */
  label?: string;
  description: string;
  parameters: JsonSchema;
  /** A `file:` URL or a path (relative to `process.cwd()`); prefer `new URL("./my-tool.js", import.meta.url)`. */
  module: string | URL;
  /** `async (args, ctx) => AgentToolResult`. @default "execute" */
  exportName?: string;
  /** `"sequential"` forces the whole batch to run sequentially, as in pi. */
  executionMode?: ToolExecutionMode;
  /** Runs in the coordinator, before validation. */
  prepareArguments?: (args: unknown) => TArgs;
  /** Milliseconds from when the call starts in a worker; past it the worker is terminated (`TP_ERR_TIMEOUT`). @default undefined (no limit) */
  timeoutMs?: number;
  /** JS heap limits for this tool's calls, on a pool of its own (`TP_ERR_OUT_OF_MEMORY` past them). @default the runtime's `pool.resourceLimits` */
  resourceLimits?: WorkerResourceLimits;
  /** @default the runtime's `pool.maxResultBytes` */
  maxResultBytes?: number;
  /** Most calls of this tool executing at once across the runtime; others wait, first come first served. @default undefined (no cap) */
  maxConcurrency?: number;
  /** Turns of its session's share one call uses (1 to 1000): a heavy tool's session waits longer between calls. @default 1 */
  cost?: number;
  /** Running a call twice does no harm: only then is a call resubmitted after its fleet node was lost. @default false */
  idempotent?: boolean;
  /** Computes `ctx.context` on the main thread before the call goes to the pool; a throw is the call's error result. Not for fleet calls. */
  context?: (call: WorkerCallInfo) => unknown;
  /** A pool shared by the tools naming it, for tools waiting on processes or I/O (more threads than cores). Not with `resourceLimits`. */
  pool?: WorkerToolPool;
  /** More pi `AgentTool` fields for `runtime.agentTools()`, passed through unchecked (e.g. `outputSchema`, `promptSnippet`). */
  agentToolFields?: Readonly<Record<string, unknown>>;
}

interface WorkerToolPool {
  readonly name: string;
  /** @default the runtime's `pool.maxThreads` */
  readonly maxThreads?: number;
  /** Most threads of this pool one session holds; set by the first definition giving one. @default the runtime's `pool.maxRunningPerSession` */
  readonly maxRunningPerSession?: number;
}

/** What a worker tool's {@link WorkerToolOptions.context} function learns of a call. */
export interface WorkerCallInfo {
  readonly toolCallId: string;
  /** Undefined for calls without one. */
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
  /** An absolute `file:` URL. */
  readonly moduleUrl: string;
  readonly exportName: string;
  readonly executionMode?: ToolExecutionMode;
  readonly prepareArguments?: (args: unknown) => TArgs;
  readonly timeoutMs?: number;
  readonly resourceLimits?: Readonly<WorkerResourceLimits>;
  readonly maxResultBytes?: number;
  readonly maxConcurrency?: number;
  readonly cost: number;
  readonly idempotent: boolean;
  readonly context?: (call: WorkerCallInfo) => unknown;
  readonly pool?: WorkerToolPool;
  readonly agentToolFields?: Readonly<Record<string, unknown>>;
}

/** Typed, so that a new option must be listed. */
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

function refuseUnknownToolOptions(options: object, known: readonly string[], path = ""): void {
  refuseUnknownOptions(options, known, path, "worker tool option", "TP_ERR_INVALID_TOOL");
}

/** A tool whose execute function runs on a pool thread; throws `TP_ERR_INVALID_TOOL` for an invalid definition. */
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

/** Each setting from the first tool naming pool `name` that gives it; undefined means the runtime's `pool` options. */
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
