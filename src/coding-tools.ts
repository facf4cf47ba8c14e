/**
 * `codingTools`: pi's own coding tools (read, bash, edit, write, grep, find,
 * ls of `@earendil-works/pi-coding-agent` 1.6) as worker tools of the pool.
 * This module runs on the main thread; the tools run in
 * `tools/coding/coding-tool-worker.ts`.
 *
 * @module
 */
import { mkdirSync, realpathSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { createHash } from "node:crypto";
import { pathToFileURL } from "node:url";

import { describeValue, ToolpoolError } from "./errors.js";
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
import { workerTool, type WorkerTool } from "./contracts/worker-tool.js";
import { registerThreadHooks } from "./contracts/thread-hooks.js";

export type { CodingToolName, PiSessionInfo } from "./tools/coding/coding-settings.js";

/**
 * Where each session's calls run (pi's `cwd`): one folder for every session;
 * a function of the batch's `sessionKey` (called on the main thread for
 * each call; it must return an existing directory); or `{ root, perSession:
 * true }`: a folder per session under `root` (created on first use; named by
 * the key when it is a plain name of up to 64 letters, digits, `.`, `_`, `-`,
 * else by its SHA-256), and `root` itself for calls without a key.
 */
export type CodingWorkspace = string | ((sessionKey: string | undefined) => string) | { root: string; perSession: true };

/** Options of {@link codingTools}. */
export interface CodingToolsOptions {
  /** The workspace of each session: see {@link CodingWorkspace}. */
  workspace: CodingWorkspace;
  /** Which of pi's tools. @default ["read", "bash", "edit", "write"] (pi's default four) */
  tools?: readonly CodingToolName[];
  /**
   * Path arguments must stay inside the session's workspace, symlinks
   * resolved: one outside is an error result naming it. bash starts in the
   * workspace (a shell command itself is not confined).
   * @default false
   */
  confine?: boolean;
  /** Deadlines of bash calls. */
  bash?: {
    /** The deadline of a call that gives no `timeout` of its own, in milliseconds. @default 120000 */
    timeoutMs?: number;
    /** The latest deadline of any call, its own `timeout` included. @default 600000 */
    maxTimeoutMs?: number;
    /** How long the call's processes have between SIGTERM and SIGKILL. @default 2000 */
    graceMs?: number;
    /**
     * Let the background processes a call started (`server &`) outlive it,
     * as pi does, until the pool terminates their thread, the runtime
     * closes or the process exits. By default a call's processes all end
     * with it, however they detached.
     * @default false
     */
    keepBackground?: boolean;
    /**
     * The total size, in bytes, of the full-output files that bash calls
     * leave (pi saves a call's whole output to a file when it passes 50 KB
     * or 2,000 lines, and names the file in the result). They are kept in a
     * folder of the runtime's own, one subfolder per session, which a
     * confined `read` of the same set may read (its own session's only),
     * and removed when the runtime closes. After each call that left a
     * file, the oldest files of the runtime are removed until the total is
     * within this size; the file of the call that just ended is always kept.
     * @default 268435456 (256 MiB)
     */
    outputFilesMaxBytes?: number;
  };
  /**
   * Threads of the pool that bash, grep, find and ls share (named
   * `toolpool:coding-io`): these wait on child processes and I/O more than
   * they compute, so they get more threads than cores, apart from read, edit
   * and write, which run on the runtime's shared pool.
   * @default twice the machine's cores, at least 4 and at most 64
   */
  ioThreads?: number;
  /**
   * Most threads of `toolpool:coding-io` one session (a batch's `sessionKey`)
   * holds at once: its other bash, grep, find and ls calls wait while other
   * sessions' calls take the free threads, so that one session's long bash
   * calls cannot keep every other session's waiting. `toolpool serve` and
   * `toolpool mcp` set half of `ioThreads` (`--coding-threads-per-session`);
   * a runtime of one session wants every thread, hence no cap here.
   * @default undefined (the runtime's `pool.maxRunningPerSession`: no cap unless it sets one)
   */
  ioThreadsPerSession?: number;
  /**
   * A time limit for calls of the other tools (read, edit, …), in
   * milliseconds: past it the worker is terminated (`TP_ERR_TIMEOUT`).
   * @default undefined (none)
   */
  timeoutMs?: number;
  /**
   * pi's options of each tool, plain data (pi's `ToolsOptions`: `{ read: {
   * autoResizeImages }, bash: { shellPath, commandPrefix }, … }`), given to
   * pi's factories as they are. Functions cannot cross to a worker thread:
   * put those in `piOptionsModule`.
   */
  piOptions?: Record<string, unknown>;
  /**
   * A module (path or `file:` URL) whose default export is pi's
   * `ToolsOptions`, or `(cwd) => ToolsOptions`, loaded in the worker: for
   * options that are functions (bash's `spawnHook`, a tool's `operations`).
   * Its options go over `piOptions`. bash always runs on toolpool's process
   * handling (deadlines, process-tree ends), and edit on its checked file
   * operations: their `operations` are not taken.
   */
  piOptionsModule?: string | URL;
  /**
   * The folder of the `@earendil-works/pi-coding-agent` package whose tools
   * run: a pi that loads toolpool as its extension names its own.
   * @default the one `toolpool` resolves (its peer dependency)
   */
  piPackage?: string;
  /**
   * The pi session each call runs for, called on the main thread for each
   * call with its `sessionKey`: bash exports it to the command as pi's own
   * bash does (`PI_SESSION_ID`, `PI_SESSION_FILE`, `PI_PROVIDER`,
   * `PI_MODEL`, `PI_REASONING_LEVEL`). pi's extension uses it; a runtime
   * that serves no pi session leaves it out.
   * @default undefined (no session: those variables are not set)
   */
  piSession?: (sessionKey: string | undefined) => PiSessionInfo | undefined;
}

/** Every option of {@link CodingToolsOptions}, and of its `bash`: a name not here is refused (typed, so that a new option is listed). */
const codingToolsOptionNames = Object.keys({
  workspace: true,
  tools: true,
  confine: true,
  bash: true,
  ioThreads: true,
  ioThreadsPerSession: true,
  timeoutMs: true,
  piOptions: true,
  piOptionsModule: true,
  piPackage: true,
  piSession: true,
} satisfies Record<keyof CodingToolsOptions, true>);
const bashOptionNames = Object.keys({
  timeoutMs: true,
  maxTimeoutMs: true,
  graceMs: true,
  keepBackground: true,
  outputFilesMaxBytes: true,
} satisfies Record<keyof NonNullable<CodingToolsOptions["bash"]>, true>);

/** The result cap of pi's coding tools: an image read returns the (resized) image as base64, over a megabyte. */
const codingMaxResultBytes = 16 * 1024 * 1024;

const defaultTools: readonly CodingToolName[] = ["read", "bash", "edit", "write"];
/** The tools that mostly wait on child processes and I/O: a pool of their own, with more threads. */
const ioTools: ReadonlySet<CodingToolName> = new Set(["bash", "grep", "find", "ls"]);

/**
 * pi 1.6's coding tools as worker tools: each one's `name`, `label`,
 * `description`, `parameters`, `prepareArguments` and every other field of
 * the `AgentTool` pi's factory makes (`outputSchema`, `constrainedSampling`,
 * bash's `promptSnippet` and `promptGuidelines`: `runtime.agentTools()`
 * gives them as they are) are pi's, and its results are pi's. Needs Node >= 22.19 and
 * `@earendil-works/pi-coding-agent` 1.6 installed (an optional peer
 * dependency); throws `TP_ERR_INVALID_OPTION` saying which is missing, and
 * for invalid options.
 *
 * @example
 * ```ts
 * const runtime = createRuntime({ pi: "1.6", tools: codingTools({ workspace: { root: "/srv/sessions", perSession: true }, confine: true }) });
 * await runtime.executeToolCalls(message, { sessionKey: "alice" });
 * ```
 */
export function codingTools(options: CodingToolsOptions): WorkerTool[] {
  if (typeof options !== "object" || options === null) throw invalidOption("options", "an object", options);
  refuseUnknownOptions(options, codingToolsOptionNames);
  const names = options.tools ?? defaultTools;
  if (!Array.isArray(names) || names.length === 0)
    throw invalidOption("tools", `a non-empty array of names out of ${codingToolNames.join(", ")}`, names);
  for (const name of names) {
    if (!codingToolNames.includes(name)) throw invalidOption("tools", `names out of ${codingToolNames.join(", ")}`, name);
  }
  if (new Set(names).size !== names.length) throw invalidOption("tools", "names without repeats", names);
  const confine = options.confine ?? false;
  if (typeof confine !== "boolean") throw invalidOption("confine", "a boolean", confine);
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
  const contextOf = workspaceResolver(options.workspace);
  const piSession = options.piSession;
  if (piSession !== undefined && typeof piSession !== "function") throw invalidOption("piSession", "a function (sessionKey) => session", piSession);

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
  // bash calls' processes end with a thread the pool terminates, and with the process.
  if (names.includes("bash")) enableProcessSweeps();
  const workerModule = new URL("./tools/coding/coding-tool-worker.js", import.meta.url);
  const outputFolder = names.includes("bash") ? new BashOutputFolder() : undefined;
  const tools = names.map((name) => {
    const ownOptions = (piOptions as Record<string, Record<string, unknown> | undefined>)[name] ?? {};
    // The AgentTool pi's factory makes: it does not depend on the folder.
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
      // Every other field of pi's AgentTool, whatever pi adds (outputSchema, constrainedSampling, bash's promptSnippet…).
      agentToolFields: definedFields(rest),
      module: toCodingModuleUrl(workerModule, {
        tool: name,
        confine,
        bash,
        piOptions: ownOptions,
        ...(piOptionsModule === undefined ? {} : { piOptionsModule }),
        ...(piEntry === undefined ? {} : { piEntry }),
        ...(name === "find" && fdShortfall !== undefined ? { fdShortfall } : {}),
      }),
      ...(timeoutMs === undefined || timeoutMs > maxTimerMs ? {} : { timeoutMs }),
      context: ({ sessionKey }) =>
        contextWithSession(
          contextOf(sessionKey),
          piSession?.(sessionKey),
          hasOutputFiles.has(name) ? outputFolder?.sessionFolder(sessionKey) : undefined,
        ),
      // pi's read returns an image as base64 (a 1,500 × 1,700 screenshot: 1.4 MB), past the pool's default 1 MiB.
      maxResultBytes: codingMaxResultBytes,
      ...(ioTools.has(name)
        ? {
            pool: {
              name: "toolpool:coding-io",
              maxThreads: ioThreads,
              ...(ioThreadsPerSession === undefined ? {} : { maxRunningPerSession: ioThreadsPerSession }),
            },
          }
        : {}),
    });
  });
  declareToolNeeds(tools, outputFolder === undefined ? codingToolNeeds : { ...codingToolNeeds, openForRuntime: outputFolder.openForRuntime });
  return tools;
}

/** The messages of {@link fdShortfallOfPi} this process has warned of already. */
const fdWarnings = new Set<string>();

/**
 * What the fd pi's find runs lacks (`fd-requirement.ts`), said now as a
 * `ToolpoolWarning` (once per process), so that a server says it when it
 * starts rather than at its first find call.
 */
function fdShortfallOfPi(piEntry: string | undefined): FdShortfall | undefined {
  const fd = piFdLookup(piEntry);
  const shortfall = fdShortfallOf(fd.path, fd.binDir);
  if (shortfall !== undefined && !fdWarnings.has(shortfall.message)) {
    fdWarnings.add(shortfall.message);
    process.emitWarning(shortfall.message, "ToolpoolWarning");
  }
  return shortfall;
}

/** `fields` without those whose value is undefined (pi's wrapper copies every field of its definition, set or not). */
function definedFields(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

/** What every set of coding tools needs of its runtime. */
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

/**
 * Why coding tools cannot run under `pi`, or undefined when they can: the
 * command line asks before it builds them, `createRuntime` on every runtime
 * given them; both say it in these words.
 */
export function codingToolsPiMismatch(pi: "0.73" | "1.6"): string | undefined {
  return piMismatchOf(codingToolNeeds, pi);
}

/** The tools whose calls learn the session's folder of bash's output files: bash writes there, read may read there. */
const hasOutputFiles: ReadonlySet<CodingToolName> = new Set(["bash", "read"]);

/** `ioThreads`' default: twice the machine's cores, at least 4 and at most 64. */
export function defaultIoThreads(): number {
  return Math.min(64, Math.max(4, 2 * availableParallelism()));
}

/**
 * How long past a bash call's latest deadline and grace its worker is
 * terminated, should the call not have ended by then (its processes are
 * swept with the thread).
 */
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

/** A call's context with the pi session it runs for and its folder of bash's output files, if any. */
function contextWithSession(context: CodingCallContext, piSession: PiSessionInfo | undefined, outputFolder: string | undefined): CodingCallContext {
  if (piSession === undefined && outputFolder === undefined) return context;
  return { ...context, ...(piSession === undefined ? {} : { piSession }), ...(outputFolder === undefined ? {} : { outputFolder }) };
}

/** The function that gives each call its {@link CodingCallContext}. */
function workspaceResolver(workspace: CodingWorkspace): (sessionKey: string | undefined) => CodingCallContext {
  if (typeof workspace === "string") {
    const fixed = workspaceAt(workspace, "workspace");
    return () => fixed;
  }
  if (typeof workspace === "function") {
    return (sessionKey) => {
      const folder = workspace(sessionKey);
      if (typeof folder !== "string" || folder === "") {
        throw new Error(`The workspace function gave ${describeValue(folder)} for session ${describeValue(sessionKey)}, not a folder`);
      }
      return workspaceAt(folder, `The workspace of session ${JSON.stringify(sessionKey)}`, callFailure);
    };
  }
  if (typeof workspace === "object" && workspace !== null && workspace.perSession === true && typeof workspace.root === "string") {
    const root = workspaceAt(workspace.root, "workspace.root");
    const folders = new Map<string, CodingCallContext>();
    return (sessionKey) => {
      if (sessionKey === undefined) return root;
      let context = folders.get(sessionKey);
      if (context === undefined) {
        const folder = join(root.cwd, sessionFolderName(sessionKey));
        mkdirSync(folder, { recursive: true });
        context = workspaceAt(folder, `The workspace of session ${JSON.stringify(sessionKey)}`, callFailure);
        // Bounded: a server with many sessions recomputes old ones.
        if (folders.size >= 1024) folders.delete(folders.keys().next().value as string);
        folders.set(sessionKey, context);
      }
      return context;
    };
  }
  throw invalidOption("workspace", "a folder, a function (sessionKey) => folder, or { root, perSession: true }", workspace);
}

/** A session's folder name under a per-session root. */
function sessionFolderName(sessionKey: string): string {
  if (/^[A-Za-z0-9._-]{1,64}$/.test(sessionKey) && sessionKey !== "." && sessionKey !== "..") return sessionKey;
  return `session-${createHash("sha256").update(sessionKey).digest("hex").slice(0, 32)}`;
}

/** `folder` as a call's context; it must be an existing directory. `fail` makes the error from what was wrong. */
function workspaceAt(folder: string, name: string, fail: (name: string, folder: string, reason: string) => Error = optionFailure): CodingCallContext {
  const cwd = isAbsolute(folder) ? folder : resolve(folder);
  try {
    const root = realpathSync(cwd);
    if (!statSync(root).isDirectory()) throw new Error("not a directory");
    return Object.freeze({ cwd, root });
  } catch (error) {
    throw fail(name, folder, (error as Error).message);
  }
}

/** Misuse found when `codingTools` is called. */
const optionFailure = (name: string, folder: string, reason: string): Error =>
  new ToolpoolError("TP_ERR_INVALID_OPTION", `Expected \`${name}\` to be an existing directory, got ${describeValue(folder)} (${reason})`);
/** A session's workspace found wanting when its call comes: that call's error result. */
const callFailure = (name: string, folder: string, reason: string): Error => new Error(`${name} is not an existing directory: ${folder} (${reason})`);
