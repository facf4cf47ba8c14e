/** Loads the `--tools` modules (default export: an array of tools) and the `--hooks` module (`beforeToolCall`, `afterToolCall`). */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

import type { AfterToolCallHook, BeforeToolCallHook, ToolDefinition } from "../index.js";
import { describeThrown } from "../errors.js";
import { UsageError } from "./usage-error.js";

interface LoadedHooks {
  beforeToolCall?: BeforeToolCallHook;
  afterToolCall?: AfterToolCallHook;
}

/** Concatenates the default exports in the order given; `createRuntime` checks the tools themselves. */
export async function loadToolModules(paths: readonly string[]): Promise<ToolDefinition[]> {
  const tools: ToolDefinition[] = [];
  for (const path of paths) {
    const module = await importUserModule(path, "--tools");
    if (!Array.isArray(module.default)) {
      throw new UsageError(`--tools module ${path}: expected its default export to be an array of tools, got ${kindOf(module.default)}`);
    }
    tools.push(...(module.default as ToolDefinition[]));
  }
  return tools;
}

/** Throws a {@link UsageError} when it fails to import, exports neither hook, or a hook that is not a function. */
export async function loadHooksModule(path: string): Promise<LoadedHooks> {
  const module = await importUserModule(path, "--hooks");
  const beforeToolCall = pickHook(module, "beforeToolCall", path) as BeforeToolCallHook | undefined;
  const afterToolCall = pickHook(module, "afterToolCall", path) as AfterToolCallHook | undefined;
  if (beforeToolCall === undefined && afterToolCall === undefined) {
    throw new UsageError(`--hooks module ${path}: expected a named export "beforeToolCall" and/or "afterToolCall"`);
  }
  return {
    ...(beforeToolCall === undefined ? {} : { beforeToolCall }),
    ...(afterToolCall === undefined ? {} : { afterToolCall }),
  };
}

function pickHook(module: Record<string, unknown>, name: keyof LoadedHooks, path: string): unknown {
  const hook = module[name];
  if (hook === undefined || typeof hook === "function") return hook;
  throw new UsageError(`--hooks module ${path}: expected export "${name}" to be a function, got ${kindOf(hook)}`);
}

/** Relative to the working directory, as users type it. */
async function importUserModule(path: string, flag: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(resolve(path)).href;
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === "ERR_MODULE_NOT_FOUND" && isMissingModule(error, url) ? "no such file" : describeThrown(error);
    throw new UsageError(`cannot import ${flag} module ${path}: ${reason}`, { cause: error });
  }
}

/** True when the module itself is missing, not one of its own imports. */
function isMissingModule(error: unknown, url: string): boolean {
  return describeThrown(error).includes(new URL(url).pathname);
}

function kindOf(value: unknown): string {
  if (value === undefined) return "undefined (no default export)";
  if (value === null) return "null";
  return Array.isArray(value) ? "an array" : typeof value === "object" ? "an object" : `a ${typeof value}`;
}
