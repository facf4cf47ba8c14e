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
 * Flags (pi's, registered here): `--toolpool-threads N` (default: the
 * machine's cores, at most 8), `--toolpool-bash-timeout MS` (the deadline of
 * a bash call without its own timeout; default 120000), `--toolpool-confine`
 * (paths must stay in pi's working folder), `--toolpool-stats FILE` (writes
 * the pool's counts as JSON when the session ends).
 *
 * The pool starts with the first tool call and closes when pi's session
 * ends.
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { realpathSync, existsSync, readFileSync } from "node:fs";

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import { codingTools, type CodingToolName } from "../coding-tools.js";
import { createRuntime, type Runtime } from "../runtime.js";
import type { AgentTool } from "../types.js";

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
  pi.registerFlag("toolpool-threads", { description: "toolpool: worker threads of the pool (default: cores, at most 8)", type: "string" });
  pi.registerFlag("toolpool-bash-timeout", {
    description: "toolpool: deadline (ms) of a bash call without a timeout of its own (default 120000)",
    type: "string",
  });
  pi.registerFlag("toolpool-confine", { description: "toolpool: refuse paths outside pi's working folder", type: "boolean", default: false });
  pi.registerFlag("toolpool-stats", { description: "toolpool: write the pool's counts as JSON to this file when the session ends", type: "string" });

  const host = (await import("@earendil-works/pi-coding-agent")) as unknown as Record<string, (cwd: string) => Record<string, unknown>>;
  const piPackage = hostPiPackage();
  let runtime: Runtime | undefined;
  let pooled: Map<string, AgentTool> | undefined;
  let cwd = process.cwd();
  const calls: Record<string, number> = {};

  /** The pool and its tools, made on first use with the flags pi parsed by then. */
  const poolTools = (): Map<string, AgentTool> => {
    if (pooled !== undefined) return pooled;
    const threads = numberFlag(pi.getFlag("toolpool-threads"), "--toolpool-threads") ?? Math.min(8, availableParallelism());
    const bashTimeout = numberFlag(pi.getFlag("toolpool-bash-timeout"), "--toolpool-bash-timeout");
    runtime = createRuntime({
      pi: "1.6",
      tools: codingTools({
        // The folder pi runs in at the time of each call.
        workspace: () => cwd,
        tools: toolNames,
        confine: pi.getFlag("toolpool-confine") === true,
        ...(bashTimeout === undefined ? {} : { bash: { timeoutMs: bashTimeout, maxTimeoutMs: Math.max(bashTimeout, 600_000) } }),
        ...(piPackage === undefined ? {} : { piPackage }),
      }),
      pool: { maxThreads: threads, minThreads: Math.min(threads, 1) },
    });
    pooled = new Map(runtime.agentTools().map((tool) => [tool.name, tool]));
    return pooled;
  };

  for (const name of toolNames) {
    // pi's own definition (prompt snippet, guidelines, renderers, output schema…), executed on the pool.
    const definition = host[definitionFactories[name]]!(process.cwd());
    pi.registerTool({
      ...(definition as unknown as Parameters<ExtensionAPI["registerTool"]>[0]),
      async execute(toolCallId, params, signal, onUpdate, ctx) {
        cwd = ctx?.cwd ?? cwd;
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
    const statsFile = pi.getFlag("toolpool-stats");
    if (closing !== undefined) {
      const stats = closing.poolStats;
      await closing.close();
      if (typeof statsFile === "string" && statsFile !== "") {
        writeFileSync(statsFile, `${JSON.stringify({ completed: stats?.completed ?? 0, threads: stats?.threads ?? 0, calls })}\n`);
      }
    } else if (typeof statsFile === "string" && statsFile !== "") {
      writeFileSync(statsFile, `${JSON.stringify({ completed: 0, threads: 0, calls })}\n`);
    }
  });
}

function numberFlag(value: boolean | string | undefined, name: string): number | undefined {
  if (value === undefined || value === false || value === "") return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new Error(`${name} expects a positive integer, got ${String(value)}`);
  return number;
}
