import { realpathSync, statSync } from "node:fs";
import { resolve } from "node:path";

import type { ErrorObject } from "ajv";

import { compiledValidator } from "./compiled-validators.js";
import { describeValue, ToolpoolError } from "./errors.js";
import { invalidOption, invalidOptionFromSchema, maxTimerMs } from "./option-checks.js";
import { diffSpec } from "./tools/diff-spec.js";
import { grepSpec } from "./tools/grep/grep-spec.js";
import { hashSpec } from "./tools/hash.js";
import { patchSpec } from "./tools/patch-spec.js";
import { toWorkspaceModuleUrl, workspaceFromModuleUrl } from "./tools/workspace.js";
import { isWorkerTool, workerTool, type WorkerTool } from "./contracts/worker-tool.js";

export type BuiltinToolName = "grep" | "hash" | "diff" | "patch";

export interface BuiltinToolsOptions {
  /** An existing directory; a path argument resolving outside it is an error result. @default process.cwd() */
  root?: string;
  /** Whether `patch` may write files (see docs/builtin-tools.md). @default false */
  allowWrite?: boolean;
  /** Milliseconds per call; past it the worker is terminated (`TP_ERR_TIMEOUT`), as only that stops catastrophic backtracking. @default 30000 */
  timeoutMs?: number;
}

const allBuiltinNames: readonly BuiltinToolName[] = ["grep", "hash", "diff", "patch"];
const builtinSpecs = { grep: grepSpec, hash: hashSpec, diff: diffSpec, patch: patchSpec } as const;
const builtinModules: Record<BuiltinToolName, string> = {
  grep: "./tools/grep/grep.js",
  hash: "./tools/hash.js",
  diff: "./tools/diff.js",
  patch: "./tools/patch.js",
};

/** Compiled at build time (compiled-validators.ts). */
export const builtinToolsOptionsSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    root: { type: "string", minLength: 1 },
    allowWrite: { type: "boolean", default: false },
    timeoutMs: { type: "integer", minimum: 1, maximum: maxTimerMs, default: 30_000 },
  },
} as const;

/** `grep`, `hash`, `diff`, `patch` confined to `root`; `names` takes a subset. Throws `TP_ERR_INVALID_OPTION`. */
export function builtinTools(options?: BuiltinToolsOptions): WorkerTool[];
export function builtinTools(names: readonly BuiltinToolName[], options?: BuiltinToolsOptions): WorkerTool[];
export function builtinTools(namesOrOptions?: readonly BuiltinToolName[] | BuiltinToolsOptions, maybeOptions?: BuiltinToolsOptions): WorkerTool[] {
  const names: readonly BuiltinToolName[] = Array.isArray(namesOrOptions) ? namesOrOptions : allBuiltinNames;
  const options = Array.isArray(namesOrOptions) ? maybeOptions : (namesOrOptions as BuiltinToolsOptions | undefined);
  for (const name of names) {
    if (!(allBuiltinNames as readonly unknown[]).includes(name)) {
      throw invalidOption("names", `built-in tool names (${allBuiltinNames.join(", ")})`, name);
    }
  }
  const resolved = resolveBuiltinToolsOptions(options);
  return names.map((name) =>
    workerTool({
      ...builtinSpecs[name],
      parameters: builtinSpecs[name].parameters as Record<string, unknown>,
      module: toWorkspaceModuleUrl(new URL(builtinModules[name], import.meta.url), resolved),
      timeoutMs: resolved.timeoutMs,
    }),
  );
}

interface ResolvedBuiltinToolsOptions {
  readonly realRoot: string;
  readonly root: string;
  readonly allowWrite: boolean;
  readonly timeoutMs: number;
}

function resolveBuiltinToolsOptions(options: BuiltinToolsOptions | undefined): ResolvedBuiltinToolsOptions {
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw invalidOption("options", "an object", options);
  }
  const data: Record<string, unknown> = Object.fromEntries(Object.entries(options ?? {}).filter(([, value]) => value !== undefined));
  const validateOptions = compiledValidator("builtin-tools-options");
  if (!validateOptions(data)) {
    throw invalidOptionFromSchema((validateOptions.errors as ErrorObject[])[0]!, options as Record<string, unknown>, "builtinTools option");
  }
  const root = resolve((data.root as string | undefined) ?? process.cwd());
  let realRoot: string;
  try {
    realRoot = realpathSync(root);
    if (!statSync(realRoot).isDirectory()) throw new Error("not a directory");
  } catch (error) {
    throw new ToolpoolError(
      "TP_ERR_INVALID_OPTION",
      `Expected \`root\` to be an existing directory, got ${describeValue(data.root ?? root)} (${(error as Error).message})`,
    );
  }
  return Object.freeze({ realRoot, root, allowWrite: data.allowWrite as boolean, timeoutMs: data.timeoutMs as number });
}

/** How the CLI applies `--root`/`--allow-write` to built-ins of a `--tools` module; `undefined` for other tools. */
export function rebaseBuiltinTool(tool: unknown, change: { root?: string | undefined; allowWrite?: boolean | undefined }): WorkerTool | undefined {
  if (!isWorkerTool(tool)) return undefined;
  const bare = new URL(tool.moduleUrl);
  bare.search = "";
  bare.hash = "";
  const name = allBuiltinNames.find((builtin) => builtin === tool.name && new URL(builtinModules[builtin], import.meta.url).href === bare.href);
  if (name === undefined) return undefined;
  const own = workspaceFromModuleUrl(tool.moduleUrl);
  const [rebased] = builtinTools([name], {
    root: change.root ?? own.root ?? own.realRoot,
    allowWrite: change.allowWrite ?? own.allowWrite,
    ...(tool.timeoutMs === undefined ? {} : { timeoutMs: tool.timeoutMs }),
  });
  return rebased;
}
