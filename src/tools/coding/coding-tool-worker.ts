/**
 * One of pi's coding tools, run on a worker thread: the module `codingTools`
 * points each tool at (its settings in this module's URL, see
 * `coding-settings.ts`). Each call builds pi's own tool with pi's own factory
 * for the call's workspace (`createTool(name, cwd, options)`, which is
 * cheap) and runs its `execute`, so results are pi's by construction.
 *
 * What toolpool adds around pi's code: the session's workspace as `cwd`;
 * `confine`; bash deadlines that end the call's whole process tree
 * (`bash-deadline.ts`); and edits and writes of one path serialized across
 * every thread, with edits refused when the file changed on disk after they
 * read it (`path-locks.ts`, `checked-file-operations.ts`); and bash's
 * full-output files kept in the runtime's folder of them, bounded, where a
 * confined read of the same session may read them (`bash-output-files.ts`).
 *
 * @module
 */
import childProcess from "node:child_process";
import { readlinkSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { getPriority, setPriority } from "node:os";
import workerThreads from "node:worker_threads";

import type { AgentToolResult, WorkerToolContext } from "../../types.js";
import { codingSettingsFromUrl, type CodingCallContext } from "./coding-settings.js";
import { assertConfined, followLinks } from "./confinement.js";
import { createBashOperations } from "./bash-operations.js";
import { isFindRefused } from "./fd-requirement.js";
import { withBashOutputFolder } from "./bash-output-files.js";
import { checkedEditOperations } from "./checked-file-operations.js";
import { withPathLock } from "./path-locks.js";
import { importPiWorkerModules, type PiWorkerModules } from "./pi-coding-agent.js";
import { routedSpawn } from "./remote-spawn.js";
import { rememberingProbes } from "./tool-probes.js";

const settings = codingSettingsFromUrl(import.meta.url);

// pi's grep and find run ripgrep and fd; pi downloads them when they are
// missing, unless offline. A pool never downloads binaries.
process.env.PI_OFFLINE ??= "1";

/** Marks the `spawn` this thread routes already (one module instance per tool and settings loads on each thread). */
const routedMark = Symbol.for("toolpool.routedSpawn");
/** Marks a thread whose priority was lowered already. */
const loweredMark = Symbol.for("toolpool.threadPriorityLowered");

/** How much lower than the main thread's a pool thread's priority is (nice levels). */
const threadNiceness = 5;
lowerThreadPriority();
resizeImagesOnThisThread();
rememberToolProbes();
startChildrenThroughHelper();

/**
 * pi's modules, imported while this module loads: a thread's first call of
 * the tool then starts with pi at hand, and an abort that came with it is
 * answered by pi at once (the pool's grace for an abort counts from the
 * module's load, not before). A failure (pi cannot run here) is each call's
 * error result, as the reason the import gives.
 */
const piModules = importPiWorkerModules(settings.piEntry);
await piModules.catch(() => undefined);

/**
 * pi's read resizes an image (Photon, WebAssembly) on a new worker thread of
 * its own, started for that one image and terminated after it, so that the
 * work leaves its caller's event loop; when that worker cannot start, pi
 * falls back to the same resize in process (`resizeImageInProcess`, the
 * function its worker runs). A pool thread is off the main thread already:
 * here the worker of pi's resize refuses to start, so pi takes its own
 * fallback, with the same result. Measured: a screenshot's resize took
 * 323 ms of CPU through the worker (a thread start and a WebAssembly
 * compile each time) against 20 ms in process (`bench:coding`'s images mix).
 * Any other worker starts as it would.
 */
function resizeImagesOnThisThread(): void {
  const { Worker } = workerThreads;
  class PoolThreadWorker extends Worker {
    constructor(filename: string | URL, options?: workerThreads.WorkerOptions) {
      if (/\/utils\/image-resize-worker\.[jt]s$/.test(String(filename))) throw new Error("pi's image resizes run on the pool thread itself");
      super(filename, options);
    }
  }
  workerThreads.Worker = PoolThreadWorker;
  // pi imports { Worker } from "node:worker_threads": its binding follows the module object once synced.
  syncBuiltinESMExports();
}

/** pi's probes for ripgrep and fd, one process per grep or find call, are remembered a while (`tool-probes.ts`). */
function rememberToolProbes(): void {
  childProcess.spawnSync = rememberingProbes(childProcess.spawnSync, () => performance.now());
  // pi imports { spawnSync } from "child_process": its binding follows the module object once synced.
  syncBuiltinESMExports();
}

/**
 * The child processes of this thread's tools (bash's shell, ripgrep, fd)
 * are started by a spawn helper process (`spawn-helper.ts` says why), not
 * forked from the pool's process: pi's `spawn` calls, and toolpool's own,
 * go through {@link routedSpawn}. Once per thread, whichever coding tool
 * loads first; `TOOLPOOL_SPAWN_HELPER=0` leaves `spawn` as it is.
 */
function startChildrenThroughHelper(): void {
  if (process.platform === "win32" || process.env.TOOLPOOL_SPAWN_HELPER === "0") return;
  const spawn = childProcess.spawn as typeof childProcess.spawn & { [routedMark]?: true };
  if (spawn[routedMark]) return;
  const routed = Object.assign(routedSpawn(spawn), { [routedMark]: true as const });
  childProcess.spawn = routed;
  // pi imports { spawn } from "child_process" (and toolpool's bash from "node:child_process"): their bindings follow once synced.
  syncBuiltinESMExports();
}

let moduleOptions: Promise<ModuleOptions> | undefined;
type ModuleOptions = Record<string, unknown> | ((cwd: string) => Record<string, unknown>) | undefined;

/** Options of this tool from `piOptionsModule`, for `cwd`. */
async function optionsOfModule(cwd: string): Promise<Record<string, unknown>> {
  if (settings.piOptionsModule === undefined) return {};
  moduleOptions ??= import(settings.piOptionsModule).then((module: { default?: unknown }) => {
    const value = module.default;
    if (value !== undefined && typeof value !== "function" && (typeof value !== "object" || value === null)) {
      throw new Error(
        `The default export of piOptionsModule ${settings.piOptionsModule} must be pi's ToolsOptions or a function (cwd) => ToolsOptions`,
      );
    }
    return value as ModuleOptions;
  });
  const value = await moduleOptions;
  const all = typeof value === "function" ? value(cwd) : value;
  const own = (all as Record<string, unknown> | undefined)?.[settings.tool];
  return typeof own === "object" && own !== null ? (own as Record<string, unknown>) : {};
}

/**
 * Gives this thread (and the processes it starts, which inherit it) a lower
 * scheduling priority than the main thread's: on a machine whose cores the
 * tools keep busy, the coordinator still gets its turns at once, so the
 * main thread's event loop is not delayed by the very work it hands off.
 * Linux only (`/proc/thread-self` names the thread's own id); a failure
 * (a container that forbids it) leaves the priority as it was.
 */
function lowerThreadPriority(): void {
  if (process.platform !== "linux") return;
  // Once per thread: each tool (and each codingTools call) is a module instance of its own on every thread.
  const thread = globalThis as { [loweredMark]?: true };
  if (thread[loweredMark]) return;
  thread[loweredMark] = true;
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, Math.min(19, getPriority(tid) + threadNiceness));
  } catch {}
}

/** Runs one call of pi's tool `settings.tool` in the call's workspace. */
export async function execute(args: unknown, ctx: WorkerToolContext<unknown>): Promise<AgentToolResult<unknown>> {
  const pi = await piModules;
  const context = ctx.context as CodingCallContext | undefined;
  if (context === undefined) throw new Error(`The ${settings.tool} tool was called without its workspace: run it through codingTools()`);
  if (settings.confine) {
    // A confined read may read its own session's bash output files, which the results name.
    const alsoAllowed = settings.tool === "read" && context.outputFolder !== undefined ? [await followLinks(context.outputFolder)] : [];
    await assertConfined(settings.tool, args, context.cwd, context.root, pi.paths, alsoAllowed);
  }
  const options = { ...settings.piOptions, ...(await optionsOfModule(context.cwd)) };
  if (settings.tool === "bash") return runBash(pi, args, ctx, context, options);
  if (settings.tool === "edit" || settings.tool === "write") {
    // One edit or write of a file at a time across every thread; an edit refuses a file changed since it read it.
    const path = (args as { path?: unknown }).path;
    const toolOptions =
      settings.tool === "edit" ? { ...options, operations: checkedEditOperations(typeof path === "string" ? path : undefined) } : options;
    const tool = pi.tools.createTool(settings.tool, context.cwd, { [settings.tool]: toolOptions });
    const run = () => tool.execute(ctx.toolCallId, args, ctx.signal, ctx.onUpdate) as Promise<AgentToolResult<unknown>>;
    return typeof path === "string" ? withPathLock(pi.paths.resolveToCwd(path, context.cwd), ctx.signal, run) : run();
  }
  // pi's find would run an fd that cannot serve this search (unless `operations.glob` replaces fd): say which fd it needs, not fd's usage text.
  // An aborted call is pi's to answer ("Operation aborted"), as pi checks that before it runs fd.
  if (
    settings.fdShortfall !== undefined &&
    ctx.signal?.aborted !== true &&
    (options.operations as { glob?: unknown } | undefined)?.glob === undefined
  ) {
    const searchPath = pi.paths.resolveToCwd((args as { path?: string }).path || ".", context.cwd);
    if (await isFindRefused(settings.fdShortfall, searchPath)) throw new Error(settings.fdShortfall.message);
  }
  const tool = pi.tools.createTool(settings.tool, context.cwd, { [settings.tool]: options });
  return (await tool.execute(ctx.toolCallId, args, ctx.signal, ctx.onUpdate)) as AgentToolResult<unknown>;
}

/**
 * A bash call under its deadline: its own `timeout` (seconds), else the
 * runtime's default, never past the cap. When the runtime's deadline rather
 * than the call's own `timeout` ended it, the result (pi's timeout text) is
 * marked `details: { code: "TP_ERR_TIMEOUT", deadline: "default" | "cap" }`.
 */
async function runBash(
  pi: PiWorkerModules,
  args: unknown,
  ctx: WorkerToolContext<unknown>,
  context: CodingCallContext,
  options: Record<string, unknown>,
): Promise<AgentToolResult<unknown>> {
  const { timeoutMs, maxTimeoutMs } = settings.bash;
  const own = (args as { timeout?: unknown }).timeout;
  const ownMs = typeof own === "number" && Number.isFinite(own) && own > 0 ? own * 1000 : undefined;
  // A `timeout` pi refuses is pi's to answer (its "Invalid timeout" error): the call runs as it came.
  const isOwnInvalid = own !== undefined && ownMs === undefined;
  // codingTools keeps the default within the cap.
  const deadline: "own" | "default" | "cap" = ownMs === undefined ? "default" : ownMs <= maxTimeoutMs ? "own" : "cap";
  const effectiveMs = deadline === "own" ? (ownMs as number) : deadline === "default" ? timeoutMs : maxTimeoutMs;
  const callArgs = deadline === "own" || isOwnInvalid ? args : { ...(args as object), timeout: effectiveMs / 1000 };
  const operations = createBashOperations(pi.shell, {
    shellPath: options.shellPath as string | undefined,
    graceMs: settings.bash.graceMs,
    keepBackground: settings.bash.keepBackground,
  });
  const tool = pi.tools.createTool("bash", context.cwd, { bash: { ...options, operations } });
  try {
    return await withBashOutputFolder(
      context.outputFolder,
      settings.bash.outputFilesMaxBytes,
      () => tool.execute(ctx.toolCallId, callArgs, ctx.signal, ctx.onUpdate, sessionContextOf(context)) as Promise<AgentToolResult<unknown>>,
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (deadline === "own" || isOwnInvalid || !/Command timed out after [\d.]+ seconds/.test(message)) throw error;
    return {
      content: [{ type: "text", text: message }],
      details: { code: "TP_ERR_TIMEOUT", deadline, timeoutMs: effectiveMs },
      isError: true,
    } as AgentToolResult<unknown>;
  }
}

/**
 * The part of pi's extension context that pi's bash reads to tell the
 * command its session (`PI_SESSION_ID` and the rest), out of the call's
 * plain-data {@link PiSessionInfo}; undefined without one, as when pi's bash
 * runs outside a session.
 */
function sessionContextOf(context: CodingCallContext): unknown {
  const session = context.piSession;
  if (session === undefined) return undefined;
  return {
    cwd: context.cwd,
    sessionManager: { getSessionId: () => session.id, getSessionFile: () => session.file },
    model: session.model,
    thinkingLevel: session.thinkingLevel,
  };
}
