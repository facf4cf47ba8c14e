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
import { closeSync, openSync, readFileSync, readSync, statSync } from "node:fs";
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
  for (const tool of tools) {
    const path = fileURLToPath(tool.moduleUrl);
    if (checked.has(path)) continue;
    checked.add(path);
    let isFile: boolean;
    try {
      isFile = statSync(path).isFile();
    } catch {
      throw new ToolpoolError("TP_ERR_INVALID_TOOL", `Tool "${tool.name}": its module ${path} does not exist`);
    }
    if (!isFile) throw new ToolpoolError("TP_ERR_INVALID_TOOL", `Tool "${tool.name}": its module ${path} is not a file`);
    const commonJsBy = commonJsReason(path);
    if (commonJsBy !== undefined && esmSyntax.test(readStart(path))) {
      throw new ToolpoolError(
        "TP_ERR_INVALID_TOOL",
        `Tool "${tool.name}": its module ${path} is written as an ES module (import/export) but Node loads it as CommonJS (${commonJsBy.reason}); worker modules are ES modules: name the file .mjs, or set "type": "module" in ${commonJsBy.packageJson ?? "the package.json that governs it"}`,
      );
    }
  }
}

/** Why Node loads `path` as CommonJS whatever its syntax, if it does. */
function commonJsReason(path: string): { reason: string; packageJson?: string } | undefined {
  const extension = extname(path);
  if (extension === ".cjs") return { reason: "a .cjs file" };
  if (extension !== ".js") return undefined;
  const packageJson = governingPackageJson(path);
  if (packageJson === undefined) return undefined;
  return packageJson.type === "commonjs" ? { reason: `${packageJson.path} has "type": "commonjs"`, packageJson: packageJson.path } : undefined;
}

/** The nearest package.json above `path` (as Node finds it), with its `type`. */
function governingPackageJson(path: string): { path: string; type: unknown } | undefined {
  for (let folder = dirname(path); ; folder = dirname(folder)) {
    const candidate = join(folder, "package.json");
    let text: string | undefined;
    try {
      text = readFileSync(candidate, "utf8");
    } catch {
      text = undefined;
    }
    if (text !== undefined) {
      try {
        return { path: candidate, type: (JSON.parse(text) as { type?: unknown }).type };
      } catch {
        return undefined; // Node fails on it too, with its own message.
      }
    }
    if (dirname(folder) === folder) return undefined;
  }
}

/** The first {@link sniffBytes} of a file, as UTF-8. */
function readStart(path: string): string {
  const fd = openSync(path, "r");
  try {
    const size = Math.min(statSync(path).size, sniffBytes);
    const buffer = Buffer.alloc(size);
    const read = readSync(fd, buffer, 0, size, 0);
    return buffer.toString("utf8", 0, read);
  } finally {
    closeSync(fd);
  }
}
