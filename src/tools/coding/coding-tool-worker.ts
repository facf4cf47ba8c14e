/**
 * One of pi's coding tools on a coding thread (its settings in this
 * module's URL: `coding-settings.ts`). Each call builds pi's own tool for
 * its workspace with pi's factory and runs its `execute`, so results are
 * pi's by construction; toolpool adds the workspace, `confine`, bash's
 * process handling, edit locks and bash's output files around it.
 * @module
 */
import { dirname } from "node:path";

import type { AgentToolResult, WorkerToolContext } from "../../types.js";
import { callScopeOf } from "./call-scope.js";
import { codingSettingsFromUrl, type CodingCallContext } from "./coding-settings.js";
import { prepareThreadFor, threadSpawn, withCallSandbox } from "./coding-thread.js";
import { assertConfined, followLinks } from "./confinement.js";
import { createBashOperations } from "./bash-operations.js";
import { isFindRefused } from "./fd-requirement.js";
import { withBashOutputFolder } from "./bash-output-files.js";
import { checkedEditOperations } from "./checked-file-operations.js";
import { containedFileIo, containedLsOperations, containedReadOperations, containedWriteOperations } from "./contained-files.js";
import { withPathLock } from "./path-locks.js";
import type { CallSandbox } from "./sandbox.js";
import { importPiWorkerModules, type PiWorkerModules } from "./pi-coding-agent.js";

const settings = codingSettingsFromUrl(import.meta.url);

// pi downloads a missing ripgrep or fd unless offline; a pool never does.
process.env.PI_OFFLINE ??= "1";

prepareThreadFor(settings.tool);

// Imported as the module loads, so that pi answers an abort of the first call at once; a failure is each call's error.
const piModules = importPiWorkerModules(settings.piEntry);
await piModules.catch(() => undefined);

let moduleOptions: Promise<ModuleOptions> | undefined;
type ModuleOptions = Record<string, unknown> | ((cwd: string) => Record<string, unknown>) | undefined;

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

export async function execute(callArgs: unknown, ctx: WorkerToolContext<unknown>): Promise<AgentToolResult<unknown>> {
  const pi = await piModules;
  const { args, context } = callOf(callArgs, ctx);
  // A confined read may read its own session's bash output files, which the results name.
  const alsoAllowed =
    settings.confine && settings.tool === "read" && context.outputFolder !== undefined ? [await followLinks(context.outputFolder)] : [];
  if (settings.confine) await assertConfined(settings.tool, args, context.cwd, context.root, pi.paths, alsoAllowed);
  const options = { ...settings.piOptions, ...(await optionsOfModule(context.cwd)) };
  // A sandboxed command beside this call may put a link in the checked path's way: what is opened is checked again.
  const within = settings.sandbox === undefined ? undefined : { root: context.root, alsoAllowed };
  if (within !== undefined && settings.tool === "read") options.operations ??= containedReadOperations(within, pi.detectImageMimeType);
  if (within !== undefined && settings.tool === "write") options.operations ??= containedWriteOperations(within);
  if (within !== undefined && settings.tool === "ls") options.operations ??= containedLsOperations(within, pi.paths.pathExists);
  if (settings.tool === "bash") return runBash(pi, args, ctx, context, options);
  if (settings.tool === "edit" || settings.tool === "write") {
    // One edit or write of a file at a time across every thread.
    const path = (args as { path?: unknown }).path;
    const toolOptions =
      settings.tool === "edit"
        ? {
            ...options,
            operations: checkedEditOperations(
              typeof path === "string" ? path : undefined,
              within === undefined ? undefined : containedFileIo(within),
            ),
          }
        : options;
    const tool = pi.tools.createTool(settings.tool, context.cwd, { [settings.tool]: toolOptions });
    const run = () => tool.execute(ctx.toolCallId, args, ctx.signal, ctx.onUpdate) as Promise<AgentToolResult<unknown>>;
    return typeof path === "string" ? withPathLock(pi.paths.resolveToCwd(path, context.cwd), ctx.signal, run) : run();
  }
  // Say which fd pi's find needs, not fd's usage text; an aborted call is pi's to answer.
  if (
    settings.fdShortfall !== undefined &&
    ctx.signal?.aborted !== true &&
    (options.operations as { glob?: unknown } | undefined)?.glob === undefined
  ) {
    const searchPath = pi.paths.resolveToCwd((args as { path?: string }).path || ".", context.cwd);
    if (await isFindRefused(settings.fdShortfall, searchPath)) throw new Error(settings.fdShortfall.message);
  }
  const tool = pi.tools.createTool(settings.tool, context.cwd, { [settings.tool]: options });
  return withCallSandbox(
    callSandboxOf(context),
    () => tool.execute(ctx.toolCallId, args, ctx.signal, ctx.onUpdate) as Promise<AgentToolResult<unknown>>,
  );
}

/** The call's workspace bound, other sessions' workspaces and output files hidden. */
function callSandboxOf(context: CodingCallContext): CallSandbox | undefined {
  if (settings.sandbox === undefined) return undefined;
  const alsoHidden = [
    ...(context.sessionsFolder === undefined ? [] : [context.sessionsFolder]),
    ...(context.outputFolder === undefined ? [] : [dirname(context.outputFolder)]),
  ];
  return { sandbox: settings.sandbox, place: { workspace: context.cwd, alsoHidden } };
}

/** A call-scoped tool's calls bring their workspace in their arguments (`call-scope.ts`). */
function callOf(callArgs: unknown, ctx: WorkerToolContext<unknown>): { args: unknown; context: CodingCallContext } {
  const given = ctx.context as Partial<CodingCallContext> | undefined;
  if (!settings.isCallScoped) {
    if (given?.cwd === undefined) throw new Error(`The ${settings.tool} tool was called without its workspace: run it through codingTools()`);
    return { args: callArgs, context: given as CodingCallContext };
  }
  const scoped = callScopeOf(callArgs);
  if (scoped === undefined)
    throw new Error(`The ${settings.tool} tool was called without its working folder: run it through toolpool's pi extension`);
  return { args: scoped.args, context: { ...given, ...scoped.scope } };
}

/** A bash call under its own `timeout`, else the default, never past the cap; the runtime's deadlines are marked `TP_ERR_TIMEOUT`. */
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
  const deadline: "own" | "default" | "cap" = ownMs === undefined ? "default" : ownMs <= maxTimeoutMs ? "own" : "cap";
  const effectiveMs = deadline === "own" ? (ownMs as number) : deadline === "default" ? timeoutMs : maxTimeoutMs;
  const runArgs = deadline === "own" || isOwnInvalid ? args : { ...(args as object), timeout: effectiveMs / 1000 };
  const operations = createBashOperations(pi.shell, {
    spawn: threadSpawn(),
    shellPath: options.shellPath as string | undefined,
    graceMs: settings.bash.graceMs,
    keepBackground: settings.bash.keepBackground,
    sandbox: callSandboxOf(context),
  });
  const tool = pi.tools.createTool("bash", context.cwd, { bash: { ...options, operations } });
  try {
    return await withBashOutputFolder(
      context.outputFolder,
      settings.bash.outputFilesMaxBytes,
      () => tool.execute(ctx.toolCallId, runArgs, ctx.signal, ctx.onUpdate, sessionContextOf(context)) as Promise<AgentToolResult<unknown>>,
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

/** What pi's bash reads of its extension context to tell the command its session. */
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
