/** The one way the commands turn their flags into tools and a runtime; invalid values are usage errors with the runtime's message. */
import {
  builtinTools,
  codingTools,
  createRuntime,
  type CodingToolName,
  type PiVersion,
  type PoolOptions,
  type Runtime,
  type SandboxOption,
  type ToolDefinition,
  type ToolExecutionMode,
} from "../index.js";
import { rebaseBuiltinTool } from "../builtin-tools.js";
import { codingToolsPiMismatch } from "../coding-tools.js";
import { withCallTimeout } from "./call-timeout.js";
import { type FleetCliOptions, fleetFromCli } from "./cli-options.js";
import { loadHooksModule, loadToolModules } from "./load-modules.js";
import { inputErrors, UsageError } from "./usage-error.js";

interface ToolFlags {
  /** None means the built-in tools. */
  tools: readonly string[];
  root?: string | undefined;
  allowWrite?: boolean | undefined;
  /** Time limit (ms) of every worker tool that has none of its own. */
  callTimeout?: number | undefined;
  /** True: pi's default four; beside any `--tools` modules, instead of the built-ins. */
  codingTools?: true | string[] | undefined;
  bashTimeout?: number | undefined;
  /** The coding tools' `ioThreadsPerSession`. */
  codingThreadsPerSession?: number | undefined;
  /** The coding tools' `sandbox`, as a server chose it (`resolveServedSandbox`). */
  sandbox?: SandboxOption | undefined;
}

interface RuntimeFlags extends ToolFlags, FleetCliOptions {
  hooks?: string | undefined;
  threads?: number | undefined;
  mode?: ToolExecutionMode | undefined;
  pi?: PiVersion | undefined;
  maxConcurrency?: Readonly<Record<string, number>> | undefined;
}

export async function toolsFromFlags(flags: ToolFlags): Promise<ToolDefinition[]> {
  if (flags.bashTimeout !== undefined && flags.codingTools === undefined) throw new UsageError("--bash-timeout needs --coding-tools");
  if (flags.codingTools !== undefined) {
    // --root is the coding tools' workspace root here, whether or not the modules hold built-ins.
    const modules =
      flags.tools.length > 0 ? withCallTimeout(withWorkspaceFlags(await loadToolModules(flags.tools), flags, false), flags.callTimeout) : [];
    const coding = inputErrors(() =>
      codingTools({
        // Each session (an HTTP batch's sessionKey, an MCP session) in a folder of its own.
        workspace: { root: flags.root ?? process.cwd(), perSession: true },
        confine: true,
        ...(flags.codingTools === true ? {} : { tools: flags.codingTools as CodingToolName[] }),
        ...(flags.bashTimeout === undefined ? {} : { bash: { timeoutMs: flags.bashTimeout, maxTimeoutMs: Math.max(flags.bashTimeout, 600_000) } }),
        ...(flags.callTimeout === undefined ? {} : { timeoutMs: flags.callTimeout }),
        ...(flags.codingThreadsPerSession === undefined ? {} : { ioThreadsPerSession: flags.codingThreadsPerSession }),
        ...(flags.sandbox === undefined ? {} : { sandbox: flags.sandbox }),
      }),
    );
    return [...modules, ...coding];
  }
  if (flags.tools.length > 0) return withCallTimeout(withWorkspaceFlags(await loadToolModules(flags.tools), flags), flags.callTimeout);
  return inputErrors(() =>
    builtinTools({
      ...(flags.root === undefined ? {} : { root: flags.root }),
      allowWrite: flags.allowWrite === true,
      ...(flags.callTimeout === undefined ? {} : { timeoutMs: flags.callTimeout }),
    }),
  );
}

/**
 * Applies `--root` and `--allow-write` to the built-ins among the modules' tools. Either flag with no built-in there is a
 * usage error (it would do nothing), unless `--root` also serves the coding tools (`isOnlyUse` false).
 */
function withWorkspaceFlags(tools: ToolDefinition[], flags: ToolFlags, isOnlyUse = true): ToolDefinition[] {
  if (flags.root === undefined && flags.allowWrite !== true) return tools;
  let builtins = 0;
  const rebased = inputErrors(() =>
    tools.map((tool) => {
      const builtin = rebaseBuiltinTool(tool, { root: flags.root, ...(flags.allowWrite === true ? { allowWrite: true } : {}) });
      if (builtin !== undefined) builtins += 1;
      return builtin ?? tool;
    }),
  );
  if (builtins === 0 && isOnlyUse) {
    const flag = flags.root === undefined ? "--allow-write" : "--root";
    throw new UsageError(
      `${flag} applies to the built-in tools, and the --tools modules hold none (a module's own tools take their workspace from the module)`,
    );
  }
  return rebased;
}

/** `pool` adds a serve config's pool options, which `--threads` overrides. */
export async function runtimeFromFlags(flags: RuntimeFlags, pool: PoolOptions = {}): Promise<Runtime> {
  // Asked before the tools are built, in createRuntime's words: a usage error even where they cannot be built.
  const mismatch = flags.codingTools === undefined || flags.pi === undefined ? undefined : codingToolsPiMismatch(flags.pi);
  if (mismatch !== undefined) throw new UsageError(`--coding-tools: ${mismatch} (--pi ${flags.pi})`);
  const tools = await toolsFromFlags(flags);
  const hooks = flags.hooks === undefined ? {} : await loadHooksModule(flags.hooks);
  const fleet = fleetFromCli(flags);
  const pi = flags.pi ?? (flags.codingTools === undefined ? undefined : "1.6");
  return inputErrors(() =>
    createRuntime({
      tools,
      ...hooks,
      pool: { ...pool, ...(flags.threads === undefined ? {} : { maxThreads: flags.threads, minThreads: flags.threads }) },
      ...(flags.mode === undefined ? {} : { toolExecution: flags.mode }),
      ...(pi === undefined ? {} : { pi }),
      ...(fleet === undefined ? {} : { fleet }),
      ...(flags.maxConcurrency === undefined ? {} : { maxConcurrency: flags.maxConcurrency }),
    }),
  );
}
