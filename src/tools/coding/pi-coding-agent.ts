/**
 * Loads pi 1.6's coding tools (an optional peer dependency): synchronously on
 * the main thread (`codingTools` needs the schemas), by import on a worker.
 * Only `dist/core/tools` is loaded, beside the resolved entry (pinned 1.6.x).
 * @module
 */
import { accessSync, constants, existsSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import type { PiShellUtils } from "./bash-operations.js";

export const piCodingAgentPackage = "@earendil-works/pi-coding-agent";
const piCodingAgentRange = "1.6";
const piCodingAgentMinimumNode = "22.19.0";

/** What toolpool uses of pi's tool modules. */
interface PiToolModules {
  tools: PiToolsIndex;
  paths: PiPathUtils;
}

export interface PiWorkerModules extends PiToolModules {
  shell: PiShellUtils;
  /** pi's read's own image check, for the sandbox's read operations. */
  detectImageMimeType(path: string): Promise<string | null | undefined>;
}

export interface PiAgentTool {
  name: string;
  label: string;
  description: string;
  parameters: Record<string, unknown>;
  prepareArguments?: (args: unknown) => unknown;
  executionMode?: "sequential" | "parallel";
  /** `ctx`: pi's extension context of the call, which pi's wrapper hands to the tool's definition (bash reads its session from it). */
  execute(toolCallId: string, params: unknown, signal?: AbortSignal, onUpdate?: (partial: never) => void, ctx?: unknown): Promise<unknown>;
  /** Its other fields (`outputSchema`, `constrainedSampling`, bash's `promptSnippet`…), which `codingTools` carries as they are. */
  [field: string]: unknown;
}

/** `dist/core/tools/index.js` of pi-coding-agent. */
interface PiToolsIndex {
  createTool(name: string, cwd: string, options?: Record<string, unknown>): PiAgentTool;
  createLocalBashOperations(options?: { shellPath?: string }): unknown;
}

/** `dist/core/tools/path-utils.js` of pi-coding-agent: how its tools turn a path argument into an absolute path. */
export interface PiPathUtils {
  resolveToCwd(filePath: string, cwd: string): string;
  resolveReadPathAsync(filePath: string, cwd: string): Promise<string>;
  pathExists(filePath: string): Promise<boolean>;
}

/** Of `packageFolder` (a pi hosting the extension names its own), else resolved here. Throws when none. */
export function piCodingAgentEntry(packageFolder?: string): URL {
  if (packageFolder === undefined) return new URL(import.meta.resolve(piCodingAgentPackage));
  const manifest = JSON.parse(readFileSync(join(packageFolder, "package.json"), "utf8")) as { name?: string; exports?: { ".": { import?: string } } };
  if (manifest.name !== piCodingAgentPackage) throw new Error(`${packageFolder} holds ${String(manifest.name)}, not ${piCodingAgentPackage}`);
  return pathToFileURL(join(packageFolder, manifest.exports?.["."]?.import ?? "dist/index.js"));
}

/** Why pi's tools cannot run in this process; undefined when they can. */
export function piCodingAgentUnavailable(entryHref?: string): string | undefined {
  if (!isNodeAtLeast(process.versions.node, piCodingAgentMinimumNode)) {
    return `pi's coding tools (${piCodingAgentPackage} ${piCodingAgentRange}) need Node >= ${piCodingAgentMinimumNode}; this is Node ${process.versions.node}`;
  }
  let entry: URL;
  try {
    entry = entryHref === undefined ? piCodingAgentEntry() : new URL(entryHref);
  } catch {
    return `pi's coding tools need the package ${piCodingAgentPackage} ${piCodingAgentRange}, which is not installed: npm install ${piCodingAgentPackage}@1.6.0`;
  }
  let version: unknown;
  try {
    version = JSON.parse(readFileSync(new URL("../package.json", entry), "utf8")).version;
  } catch (error) {
    return `could not read the version of ${piCodingAgentPackage} (${(error as Error).message})`;
  }
  if (typeof version !== "string" || !version.startsWith(`${piCodingAgentRange}.`)) {
    return `pi's coding tools need ${piCodingAgentPackage} ${piCodingAgentRange}.x; the installed one is ${String(version)}`;
  }
  return undefined;
}

function moduleUrls(entryHref: string | undefined): { tools: URL; paths: URL; shell: URL; childProcess: URL; config: URL; mime: URL } {
  const entry = entryHref === undefined ? piCodingAgentEntry() : new URL(entryHref);
  return {
    tools: new URL("./core/tools/index.js", entry),
    paths: new URL("./core/tools/path-utils.js", entry),
    shell: new URL("./utils/shell.js", entry),
    childProcess: new URL("./utils/child-process.js", entry),
    config: new URL("./config.js", entry),
    mime: new URL("./utils/mime.js", entry),
  };
}

const loaded = new Map<string | undefined, PiToolModules>();

/** Synchronous `require` of ES modules. Call {@link piCodingAgentUnavailable} first. */
export function requirePiToolModules(entryHref?: string): PiToolModules {
  let modules = loaded.get(entryHref);
  if (modules === undefined) {
    const urls = moduleUrls(entryHref);
    const require = createRequire(import.meta.url);
    modules = { tools: require(fileURLToPath(urls.tools)) as PiToolsIndex, paths: require(fileURLToPath(urls.paths)) as PiPathUtils };
    loaded.set(entryHref, modules);
  }
  return modules;
}

/**
 * The fd pi's find runs, as pi's `getToolPath("fd")` finds it but without
 * running `--version` (an `fd` that never answers would hang the main thread).
 */
export function piFdLookup(entryHref?: string): { path: string | undefined; binDir: string } {
  const require = createRequire(import.meta.url);
  const { getBinDir } = require(fileURLToPath(moduleUrls(entryHref).config)) as { getBinDir(): string };
  const binDir = getBinDir();
  const local = join(binDir, "fd");
  if (existsSync(local)) return { path: local, binDir };
  // pi runs the bare name, which the shell-less spawn finds on PATH.
  const onPath = ["fd", "fdfind"].find((name) => isExecutableOnPath(name));
  return { path: onPath, binDir };
}

function isExecutableOnPath(name: string): boolean {
  for (const folder of (process.env.PATH ?? "").split(delimiter)) {
    if (folder === "") continue;
    try {
      const file = join(folder, name);
      accessSync(file, constants.X_OK);
      if (statSync(file).isFile()) return true;
    } catch {}
  }
  return false;
}

const importing = new Map<string | undefined, Promise<PiWorkerModules>>();

/** Rejects with the reason they cannot run here. */
export function importPiWorkerModules(entryHref?: string): Promise<PiWorkerModules> {
  let modules = importing.get(entryHref);
  if (modules !== undefined) return modules;
  modules = (async () => {
    const unavailable = piCodingAgentUnavailable(entryHref);
    if (unavailable !== undefined) throw new Error(unavailable);
    const urls = moduleUrls(entryHref);
    const [tools, paths, shell, childProcess, mime] = await Promise.all([
      import(urls.tools.href),
      import(urls.paths.href),
      import(urls.shell.href),
      import(urls.childProcess.href),
      import(urls.mime.href),
    ]);
    return {
      tools: tools as PiToolsIndex,
      paths: paths as PiPathUtils,
      shell: { getShellConfig: shell.getShellConfig, getShellEnv: shell.getShellEnv, waitForChildProcess: childProcess.waitForChildProcess },
      detectImageMimeType: mime.detectSupportedImageMimeTypeFromFile,
    };
  })();
  importing.set(entryHref, modules);
  return modules;
}

function isNodeAtLeast(actual: string, minimum: string): boolean {
  const a = actual.split(".").map(Number);
  const b = minimum.split(".").map(Number);
  for (let index = 0; index < 3; index++) {
    const difference = (a[index] ?? 0) - (b[index] ?? 0);
    if (difference !== 0) return difference > 0;
  }
  return true;
}
