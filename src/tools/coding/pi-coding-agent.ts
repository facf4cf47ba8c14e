/**
 * Where pi's coding tools come from: `@earendil-works/pi-coding-agent`
 * 1.6, an optional peer dependency, loaded only by a runtime that asks for
 * these tools. Both threads use this module: the main thread loads pi's
 * tools synchronously (`codingTools` is synchronous, and needs their names,
 * descriptions and schemas), a worker thread imports them.
 *
 * Only pi's tool modules are loaded (`dist/core/tools/index.js`), not the
 * whole package (its terminal UI, its providers): a thread that runs these
 * tools starts faster and holds less. The package's `exports` name only its
 * entry, so the tools' module is found beside the resolved entry; the
 * version is pinned (1.6.x), so that path holds.
 *
 * @module
 */
import { accessSync, constants, existsSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import type { PiShellUtils } from "./bash-operations.js";

/** The package name of pi's coding agent. */
export const piCodingAgentPackage = "@earendil-works/pi-coding-agent";
/** The versions `codingTools` runs: the 1.6 line, whose tools toolpool's tests compare against. */
const piCodingAgentRange = "1.6";
/** The first Node that pi-coding-agent 1.6 runs on. */
const piCodingAgentMinimumNode = "22.19.0";

/** What toolpool uses of pi's tool modules. */
interface PiToolModules {
  tools: PiToolsIndex;
  paths: PiPathUtils;
}

/** What a worker thread uses of pi: its tools, and the shell helpers its bash runs on. */
export interface PiWorkerModules extends PiToolModules {
  shell: PiShellUtils;
}

/** A pi `AgentTool`, as pi's factories make it. */
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
}

/**
 * The entry module of pi-coding-agent: of the package folder `packageFolder`
 * (a pi that hosts toolpool as its extension names its own), else the one
 * this module resolves. Throws when there is none.
 */
export function piCodingAgentEntry(packageFolder?: string): URL {
  if (packageFolder === undefined) return new URL(import.meta.resolve(piCodingAgentPackage));
  const manifest = JSON.parse(readFileSync(join(packageFolder, "package.json"), "utf8")) as { name?: string; exports?: { ".": { import?: string } } };
  if (manifest.name !== piCodingAgentPackage) throw new Error(`${packageFolder} holds ${String(manifest.name)}, not ${piCodingAgentPackage}`);
  return pathToFileURL(join(packageFolder, manifest.exports?.["."]?.import ?? "dist/index.js"));
}

/** Why pi's tools cannot run in this process, or undefined when they can. `entry`: see {@link piCodingAgentEntry}. */
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

function moduleUrls(entryHref: string | undefined): { tools: URL; paths: URL; shell: URL; childProcess: URL; config: URL } {
  const entry = entryHref === undefined ? piCodingAgentEntry() : new URL(entryHref);
  return {
    tools: new URL("./core/tools/index.js", entry),
    paths: new URL("./core/tools/path-utils.js", entry),
    shell: new URL("./utils/shell.js", entry),
    childProcess: new URL("./utils/child-process.js", entry),
    config: new URL("./config.js", entry),
  };
}

const loaded = new Map<string | undefined, PiToolModules>();

/**
 * pi's tool modules, loaded synchronously (`require` of an ES module, which
 * every Node that runs pi 1.6 has). Call {@link piCodingAgentUnavailable} first.
 */
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
 * The fd pi's find runs, found as pi's `getToolPath("fd")` finds it (pi's
 * folder of tools, then `fd`, then `fdfind` on PATH), undefined where there
 * is none; and that folder. pi's lookup runs each candidate's `--version`
 * without a time limit, which would hold the main thread forever on an
 * `fd` that never answers (Debian's fdclone installs a file manager as
 * `fd`): this one only looks for executable files. Main thread.
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

/** Whether an executable file `name` is in a folder of PATH. */
function isExecutableOnPath(name: string): boolean {
  for (const folder of (process.env.PATH ?? "").split(delimiter)) {
    if (folder === "") continue;
    try {
      const file = join(folder, name);
      accessSync(file, constants.X_OK);
      if (statSync(file).isFile()) return true;
    } catch {
      // Not here.
    }
  }
  return false;
}

const importing = new Map<string | undefined, Promise<PiWorkerModules>>();

/** pi's modules a worker thread runs, imported. Rejects with the reason they cannot run here. */
export function importPiWorkerModules(entryHref?: string): Promise<PiWorkerModules> {
  let modules = importing.get(entryHref);
  if (modules !== undefined) return modules;
  modules = (async () => {
    const unavailable = piCodingAgentUnavailable(entryHref);
    if (unavailable !== undefined) throw new Error(unavailable);
    const urls = moduleUrls(entryHref);
    const [tools, paths, shell, childProcess] = await Promise.all([
      import(urls.tools.href),
      import(urls.paths.href),
      import(urls.shell.href),
      import(urls.childProcess.href),
    ]);
    return {
      tools: tools as PiToolsIndex,
      paths: paths as PiPathUtils,
      shell: { getShellConfig: shell.getShellConfig, getShellEnv: shell.getShellEnv, waitForChildProcess: childProcess.waitForChildProcess },
    };
  })();
  importing.set(entryHref, modules);
  return modules;
}

/** Whether dotted version `actual` is at least `minimum`. */
function isNodeAtLeast(actual: string, minimum: string): boolean {
  const a = actual.split(".").map(Number);
  const b = minimum.split(".").map(Number);
  for (let index = 0; index < 3; index++) {
    const difference = (a[index] ?? 0) - (b[index] ?? 0);
    if (difference !== 0) return difference > 0;
  }
  return true;
}
