/**
 * A runtime's worker modules, checked when it is created rather than at the
 * first call: each must exist as a file, and must load as an ES module.
 *
 * The trap this catches: `npm init -y` (npm 11) writes `"type": "commonjs"`
 * into package.json, and a worker module written with `export` in such a
 * project's `.js` file then fails every call with "Unexpected token
 * 'export'" while Node prints its hint to the host's stderr. Worker modules
 * are ES modules: `.mjs`, or `.js` under `"type": "module"` (or under no
 * `type` at all, which Node 20.19 and later detect from the syntax).
 *
 * @module
 */
import { closeSync, openSync, readFileSync, readSync, statSync, type Stats } from "node:fs";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { ToolpoolError } from "../errors.js";
import type { WorkerTool } from "./worker-tool.js";

/** How much of a module the syntax check reads: its imports and exports are near the top, and a check must stay cheap. */
const sniffBytes = 256 * 1024;

/** A line that only an ES module can hold: `export …` or a static `import`. */
const esmSyntax =
  /^[ \t]*(?:export[ \t]+(?:default\b|async\b|function\b|const\b|let\b|var\b|class\b|\{|\*)|import[ \t]*(?:["']|[\w$*{][^;\n]*?[ \t}]from[ \t]*["']))/m;

/**
 * Throws `TP_ERR_INVALID_TOOL` for the first of `tools` whose module does not
 * exist, is not a file, or is written as an ES module in a file Node loads
 * as CommonJS (`.cjs`, or `.js` under `"type": "commonjs"`), naming the tool,
 * the path and the fix.
 */
export function checkWorkerModules(tools: Iterable<WorkerTool>): void {
  const checked = new Set<string>();
  // Many modules share a folder: each folder's package.json is looked up once per check.
  const packageJsons: PackageJsonCache = new Map();
  for (const tool of tools) {
    const path = fileURLToPath(tool.moduleUrl);
    if (checked.has(path)) continue;
    checked.add(path);
    let stats: Stats;
    try {
      stats = statSync(path);
    } catch {
      throw new ToolpoolError("TP_ERR_INVALID_TOOL", `Tool "${tool.name}": its module ${path} does not exist`);
    }
    if (!stats.isFile()) throw new ToolpoolError("TP_ERR_INVALID_TOOL", `Tool "${tool.name}": its module ${path} is not a file`);
    const commonJsBy = commonJsReason(path, packageJsons);
    if (commonJsBy !== undefined && esmSyntax.test(readStart(path, stats.size))) {
      throw new ToolpoolError(
        "TP_ERR_INVALID_TOOL",
        `Tool "${tool.name}": its module ${path} is written as an ES module (import/export) but Node loads it as CommonJS (${commonJsBy.reason}); worker modules are ES modules: name the file .mjs, or set "type": "module" in ${commonJsBy.packageJson ?? "the package.json that governs it"}`,
      );
    }
  }
}

/** A package.json as the check reads it: its path and its `type`. */
interface PackageJson {
  readonly path: string;
  readonly type: unknown;
}

/** Folder → the package.json that governs the files in it (undefined: none, or one Node cannot parse). */
type PackageJsonCache = Map<string, PackageJson | undefined>;

/** Why Node loads `path` as CommonJS whatever its syntax, if it does. */
function commonJsReason(path: string, packageJsons: PackageJsonCache): { reason: string; packageJson?: string } | undefined {
  const extension = extname(path);
  if (extension === ".cjs") return { reason: "a .cjs file" };
  if (extension !== ".js") return undefined;
  const packageJson = governingPackageJson(dirname(path), packageJsons);
  if (packageJson === undefined) return undefined;
  return packageJson.type === "commonjs" ? { reason: `${packageJson.path} has "type": "commonjs"`, packageJson: packageJson.path } : undefined;
}

/**
 * The nearest package.json at or above `folder` (as Node finds it), with its
 * `type`; every folder walked through is cached with the answer.
 */
function governingPackageJson(folder: string, cache: PackageJsonCache): PackageJson | undefined {
  const walked: string[] = [];
  let found: PackageJson | undefined;
  for (let current = folder; ; current = dirname(current)) {
    if (cache.has(current)) {
      found = cache.get(current);
      break;
    }
    walked.push(current);
    const candidate = join(current, "package.json");
    let text: string | undefined;
    try {
      text = readFileSync(candidate, "utf8");
    } catch {
      text = undefined;
    }
    if (text !== undefined) {
      try {
        found = { path: candidate, type: (JSON.parse(text) as { type?: unknown }).type };
      } catch {
        found = undefined; // Node fails on it too, with its own message.
      }
      break;
    }
    if (dirname(current) === current) break;
  }
  for (const walkedFolder of walked) cache.set(walkedFolder, found);
  return found;
}

/** The first {@link sniffBytes} of a file of `fileSize` bytes, as UTF-8. */
function readStart(path: string, fileSize: number): string {
  const fd = openSync(path, "r");
  try {
    const size = Math.min(fileSize, sniffBytes);
    const buffer = Buffer.alloc(size);
    const read = readSync(fd, buffer, 0, size, 0);
    return buffer.toString("utf8", 0, read);
  } finally {
    closeSync(fd);
  }
}
