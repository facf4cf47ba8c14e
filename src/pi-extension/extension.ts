/**
 * toolpool as a pi extension (`pi -e /path/to/toolpool`, `pi install`): pi's
 * seven coding tools, with pi's own definitions, on toolpool's pools. pi's
 * modules come from the pi that loads it (`host-pi.ts`). Pools start with
 * the first call and close with pi's session.
 * @module
 */
import { readFileSync, realpathSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

import { callScopedCodingTools, type CodingToolName, type PiSessionInfo, probeSandbox, withCallScope } from "../coding-tools.js";
import { ToolpoolError } from "../errors.js";
import { createRuntime, type Runtime } from "../runtime.js";
import type { AgentTool } from "../types.js";
import { type ExtensionFlagName, extensionFlags, type FlagValue, resolvePiExtensionOptions } from "./extension-options.js";
import { type ExtensionStatus, formatExtensionStatus, type PoolStatus } from "./extension-status.js";
import { findHostPi, hostPiCandidates } from "./host-pi.js";

const toolNames: readonly CodingToolName[] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

const definitionFactories: Record<CodingToolName, string> = {
  read: "createReadToolDefinition",
  bash: "createBashToolDefinition",
  edit: "createEditToolDefinition",
  write: "createWriteToolDefinition",
  grep: "createGrepToolDefinition",
  find: "createFindToolDefinition",
  ls: "createLsToolDefinition",
};

export default async function toolpoolExtension(pi: ExtensionAPI): Promise<void> {
  // Before any `await`: pi's loader, which calls this function, is on the stack.
  const hostPi = findHostPi(hostPiCandidates());
  for (const [name, flag] of Object.entries(extensionFlags)) pi.registerFlag(name, flag);
  const flagOf = (name: ExtensionFlagName): FlagValue => pi.getFlag(name);

  // The very modules pi runs, so that the definitions' renderers share its interface's state.
  const host = (await import(hostPi.entry.href)) as Record<string, (cwd: string) => Record<string, unknown>>;
  let runtime: Runtime | undefined;
  let running: PoolSetup | undefined;
  let pooled: Map<string, AgentTool> | undefined;
  const calls: Record<string, number> = {};

  /** With the flags and settings of this moment. */
  const makeTools = (): PoolSetup => {
    const options = resolvePiExtensionOptions(flagOf, pi.getSettings());
    // Each call brings its folder and session: two of pi's sessions may run at once.
    const bwrapVersion = checkedSandbox(options.sandbox);
    const tools = callScopedCodingTools({
      tools: toolNames,
      confine: options.confine,
      ...(bwrapVersion === undefined ? {} : { sandbox: "bwrap" }),
      bash: { timeoutMs: options.bashTimeoutMs, maxTimeoutMs: options.bashMaxTimeoutMs, keepBackground: options.keepBackground },
      piOptions: options.piOptions,
      ...(options.ioThreads === undefined ? {} : { ioThreads: options.ioThreads }),
      piPackage: hostPi.folder,
    });
    return { tools, threads: options.threads };
  };

  const poolTools = (): Map<string, AgentTool> => {
    if (pooled !== undefined) return pooled;
    const setup = makeTools();
    runtime = createRuntime({ pi: "1.6", tools: setup.tools, pool: { maxThreads: setup.threads, minThreads: 1 } });
    running = setup;
    pooled = new Map(runtime.agentTools().map((tool) => [tool.name, tool]));
    return pooled;
  };

  const poolsNow = (): PoolStatus[] => {
    const { tools, threads } = running ?? makeTools();
    // The runtime names a named pool "pool:NAME" (`RuntimeDiagnosis`); every coding tool names one.
    const started = new Map((runtime?.diagnose().pools ?? []).map((pool) => [pool.pool, pool.generations.at(-1)?.threads.length ?? 0]));
    const pools = new Map<string, PoolStatus>();
    for (const tool of tools) {
      const name = tool.pool?.name ?? "shared";
      const known = pools.get(name);
      pools.set(name, {
        name,
        tools: [...(known?.tools ?? []), tool.name],
        maxThreads: tool.pool?.maxThreads ?? threads,
        threads: started.get(tool.pool === undefined ? "shared" : `pool:${name}`) ?? 0,
      });
    }
    return [...pools.values()];
  };

  const ownPath = realpathSync(fileURLToPath(import.meta.url));
  const statusNow = (): ExtensionStatus => {
    const registered = new Map(pi.getAllTools().map((tool) => [tool.name, tool.sourceInfo]));
    const active = new Set(pi.getActiveTools());
    let pools: ExtensionStatus["pools"];
    try {
      pools = poolsNow();
    } catch (error) {
      pools = { error: (error as Error).message };
    }
    return {
      toolpoolVersion,
      pi: { version: hostPi.version, folder: hostPi.folder },
      sandbox: sandboxNow(),
      tools: toolNames.map((name) => {
        const source = registered.get(name);
        const definedBy =
          source === undefined ? "none" : isPath(source.path, ownPath) ? "toolpool" : source.source === "builtin" ? "pi" : source.path;
        return { name, definedBy, isActive: active.has(name) };
      }),
      pools,
    };
  };
  // pi's stdout carries its answer.
  const showStatus = (ctx: ExtensionContext): void => {
    const text = formatExtensionStatus(statusNow());
    if (ctx.hasUI) ctx.ui.notify(text.trimEnd(), "info");
    else process.stderr.write(text);
  };

  for (const name of toolNames) {
    const definition = host[definitionFactories[name]]!(process.cwd());
    pi.registerTool({
      ...(definition as unknown as Parameters<ExtensionAPI["registerTool"]>[0]),
      // pi activates an extension's tools on registration: these are active where pi's own would be.
      defaultActive: false,
      async execute(toolCallId, params, signal, onUpdate, ctx) {
        calls[name] = (calls[name] ?? 0) + 1;
        const tool = poolTools().get(name)!;
        const args = withCallScope(params, ctx?.cwd ?? process.cwd(), ctx === undefined ? undefined : sessionInfoOf(ctx));
        return tool.execute(toolCallId, args, signal, onUpdate as never) as never;
      },
    });
  }

  pi.registerCommand("toolpool", {
    description: "toolpool: which of pi's tools run on its pools, and the pools' threads",
    handler: async (_args, ctx) => showStatus(ctx),
  });

  const sandboxNow = (): string => {
    try {
      const bwrapVersion = checkedSandbox(resolvePiExtensionOptions(flagOf, pi.getSettings()).sandbox);
      if (bwrapVersion === undefined) return "none (commands run as pi's own bash runs them)";
      return `bwrap, each bash command in a sandbox of its own (network off; ${bwrapVersion})`;
    } catch (error) {
      return `none, and no tool runs (${(error as Error).message})`;
    }
  };

  pi.on("session_start", (_event, ctx) => {
    if (flagOf("toolpool-status") === true) showStatus(ctx);
    let sandbox: "bwrap" | undefined;
    try {
      sandbox = resolvePiExtensionOptions(flagOf, pi.getSettings()).sandbox;
    } catch {
      // Each tool call names what is wrong.
      return;
    }
    // Flags are read only after extensions load: the session's start is the first moment to refuse, in pi's words for an extension's error.
    checkedSandbox(sandbox);
  });

  pi.on("session_shutdown", async () => {
    const closing = runtime;
    runtime = undefined;
    running = undefined;
    pooled = undefined;
    const stats = closing?.poolStats;
    await closing?.close();
    const statsFile = flagOf("toolpool-stats");
    if (typeof statsFile === "string" && statsFile !== "") {
      writeFileSync(statsFile, `${JSON.stringify({ completed: stats?.completed ?? 0, threads: stats?.threads ?? 0, calls })}\n`);
    }
    // The next session's pool counts from zero, and so do these.
    for (const name of Object.keys(calls)) delete calls[name];
  });
}

/** bwrap's version where the sandbox is asked for; asked for where bwrap cannot run, a throw: no tool runs unsandboxed in its place. */
function checkedSandbox(sandbox: "bwrap" | undefined): string | undefined {
  if (sandbox === undefined) return undefined;
  const probe = probeSandbox();
  if (!probe.isAvailable) {
    throw new ToolpoolError(
      "TP_ERR_SANDBOX_UNAVAILABLE",
      `The bwrap sandbox that --toolpool-sandbox (or the toolpool.sandbox setting) asks for cannot run here: ${probe.cause}. To fix: ${probe.fix}. No tool call runs unsandboxed in its place; --toolpool-sandbox none runs them as pi does.`,
    );
  }
  return probe.version;
}

interface PoolSetup {
  readonly tools: ReturnType<typeof callScopedCodingTools>;
  readonly threads: number;
}

const toolpoolVersion = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;

function isPath(path: string, realPath: string): boolean {
  try {
    return realpathSync(path) === realPath;
  } catch {
    return false;
  }
}

/** Plain data, for the pool's threads. */
function sessionInfoOf(ctx: ExtensionContext): PiSessionInfo {
  const file = ctx.sessionManager.getSessionFile();
  return {
    id: ctx.sessionManager.getSessionId(),
    ...(file === undefined ? {} : { file }),
    ...(ctx.model === undefined ? {} : { model: { provider: ctx.model.provider, id: ctx.model.id } }),
    ...(ctx.thinkingLevel === undefined ? {} : { thinkingLevel: ctx.thinkingLevel }),
  };
}
