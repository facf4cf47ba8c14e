/**
 * `codingTools`: pi 1.6's own coding tools as worker tools, on pools of
 * their own. Main thread; the tools run in `tools/coding/coding-tool-worker.ts`.
 *
 * @module
 */
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

import { ToolpoolError } from "./errors.js";
import { invalidOption, maxTimerMs, refuseUnknownOptions } from "./option-checks.js";
import {
  codingToolNames,
  toCodingModuleUrl,
  type CodingCallContext,
  type CodingToolName,
  type PiSessionInfo,
} from "./tools/coding/coding-settings.js";
import { BashOutputFolder } from "./tools/coding/bash-output-files.js";
import { declareToolNeeds, piMismatchOf, type ToolNeeds } from "./contracts/tool-needs.js";
import { fdShortfallOf, type FdShortfall } from "./tools/coding/fd-requirement.js";
import {
  piCodingAgentEntry,
  piCodingAgentPackage,
  piCodingAgentUnavailable,
  piFdLookup,
  requirePiToolModules,
} from "./tools/coding/pi-coding-agent.js";
import { pathLockTable, releasePathLocksOf } from "./tools/coding/path-lock-table.js";
import { enableProcessSweeps, sweepThreadProcesses } from "./tools/coding/process-tree.js";
import { resolveSandbox, type SandboxOption } from "./tools/coding/sandbox.js";
import { workspaceResolver, type CodingWorkspace } from "./tools/coding/workspace.js";
import { workerTool, type WorkerTool } from "./contracts/worker-tool.js";
import { registerThreadHooks } from "./contracts/thread-hooks.js";

export type { CodingToolName, PiSessionInfo } from "./tools/coding/coding-settings.js";
export type { CodingWorkspace } from "./tools/coding/workspace.js";
export { withCallScope } from "./tools/coding/call-scope.js";
// What `toolpool doctor`, the servers and the pi extension ask of the machine.
export { fdMinimumVersion } from "./tools/coding/fd-requirement.js";
export {
  type BwrapSandboxOptions,
  defaultHiddenPaths,
  defaultSandboxEnv,
  findExecutable,
  probeSandbox,
  type SandboxOption,
  type SandboxProbe,
} from "./tools/coding/sandbox.js";
export { fdShortfallOf, piCodingAgentEntry, piCodingAgentPackage, piCodingAgentUnavailable, piFdLookup };

/** Options of {@link codingTools}; docs/coding-tools.md has each in full. */
export interface CodingToolsOptions {
  /** The workspace of each session: see {@link CodingWorkspace}. */
  workspace: CodingWorkspace;
  /** Which of pi's tools. @default ["read", "bash", "edit", "write"] (pi's default four) */
  tools?: readonly CodingToolName[];
  /** Path arguments must stay inside the session's workspace, symlinks resolved (a bash command is not confined). @default false */
  confine?: boolean;
  /**
   * `"bwrap"`: every bash command (and grep's and find's ripgrep and fd) runs in a bubblewrap sandbox of its own, and
   * path arguments are confined; throws `TP_ERR_SANDBOX_UNAVAILABLE` where bwrap cannot run (docs/coding-tools.md, "The sandbox").
   * @default "none"
   */
  sandbox?: SandboxOption;
  bash?: {
    /** The deadline of a call without a `timeout` of its own, in milliseconds. @default 120000 */
    timeoutMs?: number;
    /** The latest deadline of any call, its own `timeout` included. @default 600000 */
    maxTimeoutMs?: number;
    /** How long the call's processes have between SIGTERM and SIGKILL. @default 2000 */
    graceMs?: number;
    /** Let the background processes a call started outlive it, as pi does, until their thread or the runtime ends. @default false */
    keepBackground?: boolean;
    /** The total size, in bytes, of the full-output files bash calls leave in the runtime's folder; the oldest go first. @default 268435456 (256 MiB) */
    outputFilesMaxBytes?: number;
  };
  /** Threads of `toolpool:coding-io` (bash, grep, find, ls: they mostly wait). @default twice the cores, 4 to 64 */
  ioThreads?: number;
  /** Most threads of `toolpool:coding-io` one session holds at once. @default the runtime's `pool.maxRunningPerSession` */
  ioThreadsPerSession?: number;
  /** A time limit for calls of the tools other than bash, in milliseconds (`TP_ERR_TIMEOUT`). @default undefined (none) */
  timeoutMs?: number;
  /** pi's `ToolsOptions` as plain data (functions cannot cross to a thread: see `piOptionsModule`). @default {} */
  piOptions?: Record<string, unknown>;
  /** A module whose default export is pi's `ToolsOptions` or `(cwd) => ToolsOptions`, over `piOptions`. @default undefined */
  piOptionsModule?: string | URL;
  /** The folder of the `@earendil-works/pi-coding-agent` whose tools run. @default the one `toolpool` resolves */
  piPackage?: string;
  /** The pi session a call runs for, by its `sessionKey`, which bash tells the command as pi's does. @default undefined (none) */
  piSession?: (sessionKey: string | undefined) => PiSessionInfo | undefined;
}

/** Typed, so that a new option is listed. */
const codingToolsOptionNames = Object.keys({
  workspace: true,
  tools: true,
  confine: true,
  sandbox: true,
  bash: true,
  ioThreads: true,
  ioThreadsPerSession: true,
  timeoutMs: true,
  piOptions: true,
  piOptionsModule: true,
  piPackage: true,
  piSession: true,
} satisfies Record<keyof CodingToolsOptions, true>);
const callScopedOptionNames = codingToolsOptionNames.filter((name) => name !== "workspace" && name !== "piSession");
const bashOptionNames = Object.keys({
  timeoutMs: true,
  maxTimeoutMs: true,
  graceMs: true,
  keepBackground: true,
  outputFilesMaxBytes: true,
} satisfies Record<keyof NonNullable<CodingToolsOptions["bash"]>, true>);

/** An image read returns base64, over the pool's default 1 MiB. */
const codingMaxResultBytes = 16 * 1024 * 1024;

const defaultTools: readonly CodingToolName[] = ["read", "bash", "edit", "write"];
const ioTools: ReadonlySet<CodingToolName> = new Set(["bash", "grep", "find", "ls"]);
const codingPool = "toolpool:coding";
const codingIoPool = "toolpool:coding-io";

/**
 * pi 1.6's coding tools as worker tools: every field of pi's `AgentTool`
 * and every result is pi's. Needs Node >= 22.19 and
 * `@earendil-works/pi-coding-agent` 1.6; throws `TP_ERR_INVALID_OPTION`
 * saying which is missing, and for invalid options.
 * @example
 * ```ts
 * const runtime = createRuntime({ pi: "1.6", tools: codingTools({ workspace: { root: "/srv/sessions", perSession: true }, confine: true }) });
 * await runtime.executeToolCalls(message, { sessionKey: "alice" });
 * ```
 */
export function codingTools(options: CodingToolsOptions): WorkerTool[] {
  if (typeof options !== "object" || options === null) throw invalidOption("options", "an object", options);
  refuseUnknownOptions(options, codingToolsOptionNames);
  return makeCodingTools(options, () => {
    const contextOf = workspaceResolver(options.workspace);
    const piSession = options.piSession;
    if (piSession !== undefined && typeof piSession !== "function") throw invalidOption("piSession", "a function (sessionKey) => session", piSession);
    return (sessionKey) => contextWithSession(contextOf(sessionKey), piSession?.(sessionKey));
  });
}

/** {@link codingTools} whose calls bring their own workspace and pi session (`tools/coding/call-scope.ts`): the pi extension's. */
export function callScopedCodingTools(options: Omit<CodingToolsOptions, "workspace" | "piSession">): WorkerTool[] {
  if (typeof options !== "object" || options === null) throw invalidOption("options", "an object", options);
  refuseUnknownOptions(options, callScopedOptionNames);
  return makeCodingTools(options, undefined);
}

/** `resolveContext`: checks the options that give calls their workspace; absent where calls bring theirs. */
function makeCodingTools(
  options: Omit<CodingToolsOptions, "workspace" | "piSession">,
  resolveContext: (() => (sessionKey: string | undefined) => CodingCallContext) | undefined,
): WorkerTool[] {
  const names = options.tools ?? defaultTools;
  if (!Array.isArray(names) || names.length === 0)
    throw invalidOption("tools", `a non-empty array of names out of ${codingToolNames.join(", ")}`, names);
  for (const name of names) {
    if (!codingToolNames.includes(name)) throw invalidOption("tools", `names out of ${codingToolNames.join(", ")}`, name);
  }
  if (new Set(names).size !== names.length) throw invalidOption("tools", "names without repeats", names);
  const sandbox = resolveSandbox(options.sandbox);
  const confine = options.confine ?? sandbox !== undefined;
  if (typeof confine !== "boolean") throw invalidOption("confine", "a boolean", confine);
  if (sandbox !== undefined && !confine)
    throw invalidOption("confine", "true (or unset) with a sandbox: path arguments stay in the workspace", confine);
  const bash = resolveBashDeadlines(options.bash);
  const ioThreads = options.ioThreads ?? defaultIoThreads();
  if (!(Number.isInteger(ioThreads) && ioThreads >= 1 && ioThreads <= 1024)) throw invalidOption("ioThreads", "an integer from 1 to 1024", ioThreads);
  const ioThreadsPerSession = options.ioThreadsPerSession;
  if (ioThreadsPerSession !== undefined && !(Number.isInteger(ioThreadsPerSession) && ioThreadsPerSession >= 1 && ioThreadsPerSession <= 1024))
    throw invalidOption("ioThreadsPerSession", "an integer from 1 to 1024", ioThreadsPerSession);
  if (options.timeoutMs !== undefined && !isTimer(options.timeoutMs))
    throw invalidOption("timeoutMs", `an integer from 1 to ${maxTimerMs}`, options.timeoutMs);
  const piOptions = plainData(options.piOptions ?? {}, "piOptions");
  const piOptionsModule = options.piOptionsModule === undefined ? undefined : moduleUrlOf(options.piOptionsModule);
  const contextOf = resolveContext?.();

  let piEntry: string | undefined;
  if (options.piPackage !== undefined) {
    if (typeof options.piPackage !== "string" || options.piPackage === "") throw invalidOption("piPackage", "a folder", options.piPackage);
    try {
      piEntry = piCodingAgentEntry(resolve(options.piPackage)).href;
    } catch (error) {
      throw new ToolpoolError(
        "TP_ERR_INVALID_OPTION",
        `Expected \`piPackage\` to be the folder of ${piCodingAgentPackage}: ${(error as Error).message}`,
      );
    }
  }
  const unavailable = piCodingAgentUnavailable(piEntry);
  if (unavailable !== undefined) throw new ToolpoolError("TP_ERR_INVALID_OPTION", `codingTools: ${unavailable}`);
  const pi = requirePiToolModules(piEntry);
  const fdShortfall = names.includes("find") ? fdShortfallOfPi(piEntry) : undefined;
  if (names.includes("bash")) enableProcessSweeps();
  const workerModule = new URL("./tools/coding/coding-tool-worker.js", import.meta.url);
  const outputFolder = names.includes("bash") ? new BashOutputFolder() : undefined;
  const tools = names.map((name) => {
    const ownOptions = (piOptions as Record<string, Record<string, unknown> | undefined>)[name] ?? {};
    const {
      name: piName,
      label,
      description,
      parameters,
      prepareArguments,
      executionMode,
      execute: _execute,
      ...rest
    } = pi.tools.createTool(name, process.cwd(), { [name]: ownOptions });
    const timeoutMs = name === "bash" ? bash.maxTimeoutMs + bash.graceMs + bashBackstopMs : options.timeoutMs;
    return workerTool({
      name: piName,
      label,
      description,
      parameters,
      ...(prepareArguments === undefined ? {} : { prepareArguments }),
      ...(executionMode === undefined ? {} : { executionMode }),
      agentToolFields: definedFields(rest),
      module: toCodingModuleUrl(workerModule, {
        tool: name,
        confine,
        ...(sandbox === undefined ? {} : { sandbox }),
        bash,
        piOptions: ownOptions,
        isCallScoped: contextOf === undefined,
        ...(piOptionsModule === undefined ? {} : { piOptionsModule }),
        ...(piEntry === undefined ? {} : { piEntry }),
        ...(name === "find" && fdShortfall !== undefined ? { fdShortfall } : {}),
      }),
      ...(timeoutMs === undefined || timeoutMs > maxTimerMs ? {} : { timeoutMs }),
      context: ({ sessionKey }) => {
        const folder = hasOutputFiles.has(name) ? outputFolder?.sessionFolder(sessionKey) : undefined;
        const own = folder === undefined ? undefined : { outputFolder: folder };
        return contextOf === undefined ? own : { ...contextOf(sessionKey), ...own };
      },
      maxResultBytes: codingMaxResultBytes,
      // Pools of their own: no user's tool meets what `coding-thread.ts` changes.
      pool: ioTools.has(name)
        ? { name: codingIoPool, maxThreads: ioThreads, ...(ioThreadsPerSession === undefined ? {} : { maxRunningPerSession: ioThreadsPerSession }) }
        : { name: codingPool },
    });
  });
  declareToolNeeds(tools, outputFolder === undefined ? codingToolNeeds : { ...codingToolNeeds, openForRuntime: outputFolder.openForRuntime });
  return tools;
}

/** Warned of already: once per process. */
const fdWarnings = new Set<string>();

/** What pi's fd lacks, warned of now: a server says it as it starts, not at its first find. */
function fdShortfallOfPi(piEntry: string | undefined): FdShortfall | undefined {
  const fd = piFdLookup(piEntry);
  const shortfall = fdShortfallOf(fd.path, fd.binDir);
  if (shortfall !== undefined && !fdWarnings.has(shortfall.message)) {
    fdWarnings.add(shortfall.message);
    process.emitWarning(shortfall.message, "ToolpoolWarning");
  }
  return shortfall;
}

/** pi's wrapper copies every field of its definition, set or not. */
function definedFields(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

const codingToolNeeds: ToolNeeds = {
  pi: {
    version: "1.6",
    why: "pi's coding tools give pi 1.6's results (a failed bash command is `isError: true`), which pi 0.73's rules do not read",
  },
};

// Every pool's threads, not only those of `codingTools()`: a worker tool of
// any pool may edit through `withPathLock`, serialized with every other thread.
registerThreadHooks({
  workerData: () => ({ pathLocks: pathLockTable() }),
  // A lost thread's bash processes end with it (a no-op unless bash turned the sweeps on).
  threadLost: sweepThreadProcesses,
  // A dead thread never releases its own locks.
  threadExited: releasePathLocksOf,
});

/** Why coding tools cannot run under `pi`, or undefined when they can (the command line and `createRuntime` say it alike). */
export function codingToolsPiMismatch(pi: "0.73" | "1.6"): string | undefined {
  return piMismatchOf(codingToolNeeds, pi);
}

/** bash writes its output files in the session's folder; read may read there. */
const hasOutputFiles: ReadonlySet<CodingToolName> = new Set(["bash", "read"]);

/** `ioThreads`' default. */
export function defaultIoThreads(): number {
  return Math.min(64, Math.max(4, 2 * availableParallelism()));
}

/** Past a bash call's latest deadline and grace, its thread is terminated, its processes swept with it. */
const bashBackstopMs = 30_000;

function resolveBashDeadlines(bash: CodingToolsOptions["bash"]): {
  timeoutMs: number;
  maxTimeoutMs: number;
  graceMs: number;
  keepBackground: boolean;
  outputFilesMaxBytes: number;
} {
  if (bash !== undefined && (typeof bash !== "object" || bash === null)) throw invalidOption("bash", "an object", bash);
  if (bash !== undefined) refuseUnknownOptions(bash, bashOptionNames, "bash");
  const timeoutMs = bash?.timeoutMs ?? 120_000;
  const maxTimeoutMs = bash?.maxTimeoutMs ?? Math.max(600_000, timeoutMs);
  const graceMs = bash?.graceMs ?? 2_000;
  if (!isTimer(timeoutMs)) throw invalidOption("bash.timeoutMs", `an integer from 1 to ${maxTimerMs}`, timeoutMs);
  if (!isTimer(maxTimeoutMs)) throw invalidOption("bash.maxTimeoutMs", `an integer from 1 to ${maxTimerMs}`, maxTimeoutMs);
  if (timeoutMs > maxTimeoutMs) throw invalidOption("bash.timeoutMs", `at most bash.maxTimeoutMs (${maxTimeoutMs})`, timeoutMs);
  if (!(Number.isInteger(graceMs) && graceMs >= 0 && graceMs <= 60_000)) throw invalidOption("bash.graceMs", "an integer from 0 to 60000", graceMs);
  const keepBackground = bash?.keepBackground ?? false;
  if (typeof keepBackground !== "boolean") throw invalidOption("bash.keepBackground", "a boolean", keepBackground);
  const outputFilesMaxBytes = bash?.outputFilesMaxBytes ?? 256 * 1024 * 1024;
  if (!(Number.isSafeInteger(outputFilesMaxBytes) && outputFilesMaxBytes >= 0))
    throw invalidOption("bash.outputFilesMaxBytes", "an integer >= 0", outputFilesMaxBytes);
  return { timeoutMs, maxTimeoutMs, graceMs, keepBackground, outputFilesMaxBytes };
}

function isTimer(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 1 && (value as number) <= maxTimerMs;
}

/** `value`, checked to be JSON data (it crosses to worker threads in a URL). */
function plainData(value: unknown, name: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalidOption(name, "an object", value);
  const functionAt = findFunction(value, name);
  if (functionAt !== undefined) {
    throw new ToolpoolError(
      "TP_ERR_INVALID_OPTION",
      `Expected \`${functionAt}\` to be plain data: functions cannot cross to worker threads; export them from \`piOptionsModule\``,
    );
  }
  return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
}

function findFunction(value: unknown, path: string, depth = 0): string | undefined {
  if (typeof value === "function") return path;
  if (typeof value !== "object" || value === null || depth > 8) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const found = findFunction(item, `${path}.${key}`, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

function moduleUrlOf(module: string | URL): string {
  if (module instanceof URL) return module.href;
  if (typeof module !== "string" || module === "") throw invalidOption("piOptionsModule", "a path or a file: URL", module);
  return module.startsWith("file:") ? new URL(module).href : pathToFileURL(resolve(module)).href;
}

function contextWithSession(context: CodingCallContext, piSession: PiSessionInfo | undefined): CodingCallContext {
  return piSession === undefined ? context : { ...context, piSession };
}
