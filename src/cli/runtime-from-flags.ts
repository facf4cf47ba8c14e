/**
 * The one way the commands (`run`, `serve`, `mcp`, `node`) turn their flags
 * into tools and a runtime: `--tools` modules or the built-in tools (confined
 * to `--root`, writing only with `--allow-write`), `--call-timeout`,
 * `--hooks`, `--threads`, `--mode`, `--pi`, `--fleet` and `--remote`.
 * Invalid values are usage errors (exit 2), with the runtime's message.
 *
 * @module
 */
import {
  builtinTools,
  createRuntime,
  type PiVersion,
  type PoolOptions,
  type Runtime,
  type ToolDefinition,
  type ToolExecutionMode,
} from "../index.js";
import { withCallTimeout } from "./call-timeout.js";
import { type FleetCliOptions, fleetFromCli } from "./cli-options.js";
import { loadHooksModule, loadToolModules } from "./load-modules.js";
import { inputErrors } from "./usage-error.js";

/** The flags that say which tools run, and how. */
export interface ToolFlags {
  /** `--tools` modules; none means the built-in tools. */
  tools: readonly string[];
  /** The built-in tools' workspace root. */
  root?: string | undefined;
  /** Whether the built-in `patch` may write. */
  allowWrite?: boolean | undefined;
  /** Time limit (ms) of every worker tool that has none of its own; the built-ins' limit. */
  callTimeout?: number | undefined;
}

/** The flags a runtime is made from. */
export interface RuntimeFlags extends ToolFlags, FleetCliOptions {
  hooks?: string | undefined;
  threads?: number | undefined;
  mode?: ToolExecutionMode | undefined;
  pi?: PiVersion | undefined;
}

/** The tools the flags name. */
export async function toolsFromFlags(flags: ToolFlags): Promise<ToolDefinition[]> {
  if (flags.tools.length > 0) return withCallTimeout(await loadToolModules(flags.tools), flags.callTimeout);
  return inputErrors(() =>
    builtinTools({
      ...(flags.root === undefined ? {} : { root: flags.root }),
      allowWrite: flags.allowWrite === true,
      ...(flags.callTimeout === undefined ? {} : { timeoutMs: flags.callTimeout }),
    }),
  );
}

/**
 * The runtime the flags describe; `pool` adds pool options (a serve
 * config's), which `--threads` overrides for the thread counts.
 */
export async function runtimeFromFlags(flags: RuntimeFlags, pool: PoolOptions = {}): Promise<Runtime> {
  const tools = await toolsFromFlags(flags);
  const hooks = flags.hooks === undefined ? {} : await loadHooksModule(flags.hooks);
  const fleet = fleetFromCli(flags);
  return inputErrors(() =>
    createRuntime({
      tools,
      ...hooks,
      pool: { ...pool, ...(flags.threads === undefined ? {} : { maxThreads: flags.threads, minThreads: flags.threads }) },
      ...(flags.mode === undefined ? {} : { toolExecution: flags.mode }),
      ...(flags.pi === undefined ? {} : { pi: flags.pi }),
      ...(fleet === undefined ? {} : { fleet }),
    }),
  );
}
