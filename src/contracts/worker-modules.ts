/** Checked at runtime creation: `npm init -y` (npm 11) writes `"type": "commonjs"`, and an ESM `.js` there fails every call. */
import { closeSync, openSync, readFileSync, readSync, statSync, type Stats } from "node:fs";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { ToolpoolError } from "../errors.js";
import type { WorkerTool } from "./worker-tool.js";

/** Imports and exports are near the top, and the check must stay cheap. */
const sniffBytes = 256 * 1024;

/** `export …` or a static `import`: only an ES module holds such a line. */
const esmSyntax =
  /^[ \t]*(?:export[ \t]+(?:default\b|async\b|function\b|const\b|let\b|var\b|class\b|\{|\*)|import[ \t]*(?:["']|[\w$*{][^;\n]*?[ \t}]from[ \t]*["']))/m;

/** Throws `TP_ERR_INVALID_TOOL` for the first module that is missing, not a file, or ESM in a file Node loads as CommonJS, naming the fix. */
export function checkWorkerModules(tools: Iterable<WorkerTool>): void {
  const checked = new Set<string>();
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

interface PackageJson {
  readonly path: string;
  readonly type: unknown;
}

/** Folder → governing package.json (undefined: none, or unparsable). */
type PackageJsonCache = Map<string, PackageJson | undefined>;

function commonJsReason(path: string, packageJsons: PackageJsonCache): { reason: string; packageJson?: string } | undefined {
  const extension = extname(path);
  if (extension === ".cjs") return { reason: "a .cjs file" };
  if (extension !== ".js") return undefined;
  const packageJson = governingPackageJson(dirname(path), packageJsons);
  if (packageJson === undefined) return undefined;
  return packageJson.type === "commonjs" ? { reason: `${packageJson.path} has "type": "commonjs"`, packageJson: packageJson.path } : undefined;
}

/** Nearest package.json at or above `folder`, as Node finds it; caches every folder walked. */
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
