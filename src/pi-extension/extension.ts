/**
 * toolpool as a pi extension: `pi -e npm:toolpool` (or `pi -e
 * /path/to/toolpool`) replaces pi's built-in coding tools — read, bash,
 * edit, write, grep, find, ls — with the same tools run on a worker pool
 * shared by the process (see `codingTools`). Each tool keeps everything of
 * pi's own definition (name, description, parameters, prompt snippet and
 * guidelines, renderers); only where it runs changes: off pi's main
 * thread, with bash deadlines that end the whole process tree, and edits of
 * one file serialized across the pool's threads.
 *
 * Options: pi flags registered here (`--toolpool-threads N`, `--toolpool-io-threads N`,
 * `--toolpool-bash-timeout MS`, `--toolpool-bash-max-timeout MS`,
 * `--toolpool-confine`, `--toolpool-keep-background`, `--toolpool-stats FILE`) over the `toolpool` key of
 * pi's settings (see `extension-options.ts`). pi's own settings of its tools
 * (`shellPath`, `shellCommandPrefix`, `images.autoResize`) apply as they do
 * to pi's built-in tools.
 *
 * The pool starts with the first tool call, with the options of that moment,
 * and closes when pi's session ends (a new session, a reload or pi's exit
 * starts a fresh one on its next call).
 *
 * @module
 */
import { existsSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

import { codingTools, type CodingToolName, type PiSessionInfo } from "../coding-tools.js";
import { createRuntime, type Runtime } from "../runtime.js";
import type { AgentTool } from "../types.js";
import { type ExtensionFlagName, extensionFlags, type FlagValue, resolvePiExtensionOptions } from "./extension-options.js";

const toolNames: readonly CodingToolName[] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/** pi's factories of each tool's definition, as the host pi exports them. */
const definitionFactories: Record<CodingToolName, string> = {
  read: "createReadToolDefinition",
  bash: "createBashToolDefinition",
  edit: "createEditToolDefinition",
  write: "createWriteToolDefinition",
  grep: "createGrepToolDefinition",
  find: "createFindToolDefinition",
  ls: "createLsToolDefinition",
};

/**
 * The folder of the pi-coding-agent running this extension: the package
 * holding pi's entry script. Its tools are the ones the pool runs, whatever
 * copy toolpool itself would resolve.
 */
function hostPiPackage(): string | undefined {
  const script = process.argv[1];
  if (script === undefined) return undefined;
  let folder = dirname(realpathSync(script));
  for (let depth = 0; depth < 8; depth++) {
    const manifest = join(folder, "package.json");
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, "utf8")) as { name?: string }).name === "@earendil-works/pi-coding-agent") return folder;
      } catch {}
    }
    const parent = dirname(folder);
    if (parent === folder) break;
    folder = parent;
  }
  return undefined;
}

/** The extension: pi calls it once per process with its API. */
export default async function toolpoolExtension(pi: ExtensionAPI): Promise<void> {
  for (const [name, flag] of Object.entries(extensionFlags)) pi.registerFlag(name, flag);
  const flagOf = (name: ExtensionFlagName): FlagValue => pi.getFlag(name);

  const host = (await import("@earendil-works/pi-coding-agent")) as unknown as Record<string, (cwd: string) => Record<string, unknown>>;
  const piPackage = hostPiPackage();
  let runtime: Runtime | undefined;
  let pooled: Map<string, AgentTool> | undefined;
  let cwd = process.cwd();
  let session: PiSessionInfo | undefined;
  const calls: Record<string, number> = {};

  /** The pool and its tools, made on first use with the flags and settings of that moment. */
  const poolTools = (): Map<string, AgentTool> => {
    if (pooled !== undefined) return pooled;
    const options = resolvePiExtensionOptions(flagOf, pi.getSettings());
    runtime = createRuntime({
      pi: "1.6",
      tools: codingTools({
        // The folder pi runs in at the time of each call.
        workspace: () => cwd,
        // Its session, which bash tells the command as pi's own bash does.
        piSession: () => session,
        tools: toolNames,
        confine: options.confine,
        bash: { timeoutMs: options.bashTimeoutMs, maxTimeoutMs: options.bashMaxTimeoutMs, keepBackground: options.keepBackground },
        piOptions: options.piOptions,
        ...(options.ioThreads === undefined ? {} : { ioThreads: options.ioThreads }),
        ...(piPackage === undefined ? {} : { piPackage }),
      }),
      pool: { maxThreads: options.threads, minThreads: 1 },
    });
    pooled = new Map(runtime.agentTools().map((tool) => [tool.name, tool]));
    return pooled;
  };

  for (const name of toolNames) {
    // pi's own definition (prompt snippet, guidelines, renderers, output schema…), executed on the pool.
    const definition = host[definitionFactories[name]]!(process.cwd());
    pi.registerTool({
      ...(definition as unknown as Parameters<ExtensionAPI["registerTool"]>[0]),
      // pi activates an extension's tools on registration; these take the place of pi's own, so
      // they are active exactly where pi's would be (its default four, `--tools`, settings'
      // `defaultTools`), and the model is offered the same tools as without toolpool.
      defaultActive: false,
      async execute(toolCallId, params, signal, onUpdate, ctx) {
        if (ctx !== undefined) {
          cwd = ctx.cwd;
          session = sessionInfoOf(ctx);
        }
        calls[name] = (calls[name] ?? 0) + 1;
        const tool = poolTools().get(name)!;
        return tool.execute(toolCallId, params, signal, onUpdate as never) as never;
      },
    });
  }

  pi.on("session_shutdown", async () => {
    const closing = runtime;
    runtime = undefined;
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

/** What pi's bash tells a command of its session, out of pi's context of the call (plain data, for the pool's threads). */
function sessionInfoOf(ctx: ExtensionContext): PiSessionInfo {
  const file = ctx.sessionManager.getSessionFile();
  return {
    id: ctx.sessionManager.getSessionId(),
    ...(file === undefined ? {} : { file }),
    ...(ctx.model === undefined ? {} : { model: { provider: ctx.model.provider, id: ctx.model.id } }),
    ...(ctx.thinkingLevel === undefined ? {} : { thinkingLevel: ctx.thinkingLevel }),
  };
}
