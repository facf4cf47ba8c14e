import { diffSpec } from "./tools/diff.js";
import { grepSpec } from "./tools/grep.js";
import { hashSpec } from "./tools/hash.js";
import { patchSpec } from "./tools/patch.js";
import { workerTool, type WorkerTool } from "./workers/worker-tool.js";

/** The names of the built-in tools. */
export type BuiltinToolName = "grep" | "hash" | "diff" | "patch";

const builtinSpecs = { grep: grepSpec, hash: hashSpec, diff: diffSpec, patch: patchSpec } as const;

/**
 * The built-in worker tools (`grep`, `hash`, `diff`, `patch`), each running on
 * the pool. Pass `names` to take a subset.
 *
 * @example
 * ```ts
 * const runtime = createRuntime({ tools: builtinTools() });
 * ```
 */
export function builtinTools(names: readonly BuiltinToolName[] = ["grep", "hash", "diff", "patch"]): WorkerTool[] {
  return names.map((name) =>
    workerTool({
      ...builtinSpecs[name],
      parameters: builtinSpecs[name].parameters as Record<string, unknown>,
      module: new URL(`./tools/${name}.js`, import.meta.url),
    }),
  );
}
