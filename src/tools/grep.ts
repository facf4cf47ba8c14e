/**
 * Built-in worker tool `grep`: regex search over a directory tree.
 *
 * Loaded inside a worker thread, so it imports nothing from the coordinator or
 * the worker runtime; it only uses Node built-ins and the `ignore` package.
 *
 * @module
 */

import { closeSync, readdirSync, statSync, type Dirent } from "node:fs";
import { basename, join } from "node:path";
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import ignore, { type Ignore } from "ignore";
import type { AgentToolResult, WorkerToolContext } from "../types.js";
import { openRegularFile, readRegularFile } from "./regular-file.js";
import { resolveInWorkspace, workspaceFromModuleUrl, type Workspace } from "./workspace.js";

import { GREP_DEFAULT_MAX_RESULTS, GREP_MAX_RESULTS_LIMIT } from "./grep-spec.js";
export { GREP_DEFAULT_MAX_RESULTS, GREP_MAX_RESULTS_LIMIT, grepSpec } from "./grep-spec.js";
/** Files larger than this are skipped, not searched. */
export const GREP_MAX_FILE_BYTES = 4 * 1024 * 1024;
/** Cap on the UTF-8 size of the result text. */
export const GREP_MAX_OUTPUT_BYTES = 64 * 1024;
/** Matched lines longer than this (in UTF-16 code units) are cut and end with "…". */
export const GREP_MAX_LINE_CHARS = 300;

/** A .gitignore larger than this is treated as absent. */
const MAX_GITIGNORE_BYTES = 1024 * 1024;
/** How many bytes are inspected for a NUL byte to decide that a file is binary. */
const BINARY_SNIFF_BYTES = 8 * 1024;
/** Lines searched between abort checks inside one file. */
const LINES_PER_ABORT_CHECK = 4096;
/** Minimum interval between two progress updates. */
const PROGRESS_INTERVAL_MS = 200;
/** Entries never descended into, whatever the .gitignore files say. */
const ALWAYS_SKIPPED = new Set([".git", "node_modules"]);
/** Git defaults core.ignorecase to true on the usual case-insensitive file systems. */
const caseInsensitiveFs = process.platform === "darwin" || process.platform === "win32";

/** Arguments of the `grep` tool. */
export interface GrepArgs {
  /** JavaScript regular expression source, matched against each line separately. */
  pattern: string;
  /** File or directory to search, inside the workspace root; relative paths resolve against the root. Default ".". */
  path?: string;
  /** RegExp flags from "imsuv"; "g" and "y" are accepted and ignored. */
  flags?: string;
  /** Basename filter with `*` and `?` wildcards, e.g. "*.ts". */
  glob?: string;
  /** Maximum matching lines returned: integer 1..5000, default 200. */
  maxResults?: number;
}

/** Structured details of a `grep` result (and of its progress updates). */
export interface GrepDetails {
  /** Matching lines included in the text. */
  matches: number;
  /** Text files actually searched (skipped binary/oversized/ignored files are not counted). */
  filesScanned: number;
  /** True when the search stopped at `maxResults` or at the output cap. */
  truncated: boolean;
}

/**
 * Returns a function that answers "is a progress update due now?": false until
 * `intervalMs` has passed since creation, then true at most once per
 * `intervalMs`. Pure apart from the injected clock, so it can be tested without
 * sleeping.
 *
 * @param intervalMs Minimum time between two `true` answers.
 * @param now Clock in milliseconds; defaults to `performance.now()`, read at each call.
 */
export function createProgressThrottle(
  intervalMs: number = PROGRESS_INTERVAL_MS,
  now: () => number = () => performance.now(),
): () => boolean {
  let due = now() + intervalMs;
  return () => {
    const t = now();
    if (t < due) return false;
    due = t + intervalMs;
    return true;
  };
}

/**
 * Converts a basename glob (`*` = any run of characters, `?` = one character,
 * everything else literal) into an anchored RegExp.
 */
export function globToRegExp(glob: string): RegExp {
  let source = "";
  for (const ch of glob) {
    if (ch === "*") source += ".*";
    else if (ch === "?") source += ".";
    else source += ch.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&");
  }
  return new RegExp(`^${source}$`, "su");
}

/** One .gitignore file's rules, anchored at the directory that holds it. */
interface IgnoreLayer {
  /** Directory of the .gitignore, relative to the search root ("" for the root). */
  base: string;
  rules: Ignore;
}

/**
 * Git semantics: the deepest .gitignore with a matching rule decides, so a
 * nested `!pattern` can re-include what a parent excluded.
 */
function isIgnored(relPath: string, layers: readonly IgnoreLayer[]): boolean {
  for (let i = layers.length - 1; i >= 0; i--) {
    const layer = layers[i]!;
    const local = layer.base === "" ? relPath : relPath.slice(layer.base.length + 1);
    const verdict = layer.rules.test(local);
    if (verdict.ignored) return true;
    if (verdict.unignored) return false;
  }
  return false;
}

/** Cuts a long line without splitting a surrogate pair. */
function clipLine(line: string): string {
  if (line.length <= GREP_MAX_LINE_CHARS) return line;
  let end = GREP_MAX_LINE_CHARS;
  const last = line.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${line.slice(0, end)}…`;
}

function compilePattern(pattern: string, flags: string | undefined): RegExp {
  // Line-by-line `test()` with a global or sticky RegExp would carry
  // `lastIndex` from one line to the next and miss matches.
  const effective = (flags ?? "").replace(/[gy]/g, "");
  if (!/^[imsuvd]*$/.test(effective)) {
    throw new Error(`grep: invalid flags ${JSON.stringify(flags)}: use letters from "dimsuv"`);
  }
  try {
    return new RegExp(pattern, effective);
  } catch (err) {
    throw new Error(`grep: invalid pattern ${JSON.stringify(pattern)}: ${(err as Error).message}`);
  }
}

/**
 * Searches every non-ignored text file under `args.path` for lines matching
 * `args.pattern`, walking directories in sorted (code point) order so the
 * output is stable.
 *
 * Contract:
 * - Result text: one `file:line: text` line per match (file relative to
 *   `path` with `/` separators; the basename when `path` is a file), or a
 *   "no matches" sentence; a truncated result ends with a note saying so.
 * - Honors `.gitignore` files at the root of `path` and below (not those above
 *   it); never enters `.git/` or `node_modules/`; does not follow symlinks;
 *   skips files with a NUL byte in their first 8 KiB and files over 4 MiB;
 *   silently skips entries it cannot read.
 * - Checks `ctx.signal` for every file and every 4096 lines, and sends a
 *   progress update at most every 200 ms (never in the first 200 ms).
 *   A single pathological regex match cannot be interrupted.
 * - Reads only regular files, at most 4 MiB of each, whatever their size
 *   says (devices, FIFOs and `/proc` files never hang or balloon a call).
 * - Throws on an invalid pattern or flags, a bad `maxResults`, a path outside
 *   the workspace root, a missing path, or a path that is neither a
 *   directory nor a regular file.
 */
export const execute = createGrepTool(workspaceFromModuleUrl(import.meta.url));

/** `grep`'s execute function confined to `workspace`. */
export function createGrepTool(
  workspace: Workspace,
): (args: GrepArgs, ctx: WorkerToolContext<GrepDetails>) => Promise<AgentToolResult<GrepDetails>> {
  return (args, ctx) => executeGrep(workspace, args, ctx);
}

async function executeGrep(
  workspace: Workspace,
  args: GrepArgs,
  ctx: WorkerToolContext<GrepDetails>,
): Promise<AgentToolResult<GrepDetails>> {
  const { signal } = ctx;
  signal.throwIfAborted();

  if (typeof args.pattern !== "string" || args.pattern === "") {
    throw new Error('grep: "pattern" must be a non-empty string');
  }
  const regex = compilePattern(args.pattern, args.flags);
  const maxResults = args.maxResults ?? GREP_DEFAULT_MAX_RESULTS;
  if (!Number.isInteger(maxResults) || maxResults < 1 || maxResults > GREP_MAX_RESULTS_LIMIT) {
    throw new Error(`grep: maxResults must be an integer from 1 to ${GREP_MAX_RESULTS_LIMIT}, got ${String(maxResults)}`);
  }
  const nameFilter = args.glob === undefined || args.glob === "" ? undefined : globToRegExp(args.glob);

  const rootArg = args.path === undefined || args.path === "" ? "." : args.path;
  const root = resolveInWorkspace(workspace, "grep", "path", rootArg);
  let rootIsDir: boolean;
  try {
    rootIsDir = statSync(root).isDirectory();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") throw new Error(`grep: path not found: ${rootArg}`);
    throw new Error(`grep: cannot read path ${rootArg}: ${(err as Error).message}`);
  }
  // A path given explicitly must be searchable: a FIFO or device is an error,
  // not a silent "no matches".
  if (!rootIsDir) closeSync(openRegularFile(root, `grep: path ${rootArg}`).fd);

  const lines: string[] = [];
  let outputBytes = 0;
  let filesScanned = 0;
  let truncated = false;
  let linesSinceCheck = 0;
  const progressDue = createProgressThrottle();

  const details = (): GrepDetails => ({ matches: lines.length, filesScanned, truncated });

  const reportProgress = async (): Promise<void> => {
    if (!progressDue()) return;
    ctx.onUpdate({
      content: [{ type: "text", text: `grep: scanned ${filesScanned} files, ${lines.length} matches so far` }],
      details: details(),
    });
    // The walk is synchronous I/O; let the worker's event loop run so the
    // update is flushed and any incoming messages are handled.
    await yieldToEventLoop();
  };

  /** Returns false once the search must stop (result limits reached). */
  const searchFile = (absPath: string, relPath: string): boolean => {
    let buf: Buffer;
    try {
      buf = readRegularFile(absPath, relPath, GREP_MAX_FILE_BYTES);
    } catch {
      // Oversized, vanished, or not a regular file after all: skipped.
      return true;
    }
    if (buf.subarray(0, BINARY_SNIFF_BYTES).includes(0)) return true;
    filesScanned++;
    const fileLines = buf.toString("utf8").split("\n");
    for (let i = 0; i < fileLines.length; i++) {
      if (++linesSinceCheck >= LINES_PER_ABORT_CHECK) {
        linesSinceCheck = 0;
        signal.throwIfAborted();
      }
      let line = fileLines[i]!;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (!regex.test(line)) continue;
      if (lines.length >= maxResults) {
        truncated = true;
        return false;
      }
      const out = `${relPath}:${i + 1}: ${clipLine(line)}`;
      const size = Buffer.byteLength(out, "utf8") + 1;
      if (outputBytes + size > GREP_MAX_OUTPUT_BYTES) {
        truncated = true;
        return false;
      }
      outputBytes += size;
      lines.push(out);
    }
    return true;
  };

  const walk = async (absDir: string, relDir: string, parentLayers: readonly IgnoreLayer[]): Promise<boolean> => {
    signal.throwIfAborted();
    let entries: Dirent[];
    try {
      entries = readdirSync(absDir, { withFileTypes: true });
    } catch {
      return true;
    }
    let layers = parentLayers;
    if (entries.some((e) => e.name === ".gitignore" && e.isFile())) {
      try {
        const text = readRegularFile(join(absDir, ".gitignore"), ".gitignore", MAX_GITIGNORE_BYTES).toString("utf8");
        const rules = ignore({ ignorecase: caseInsensitiveFs }).add(text);
        layers = [...parentLayers, { base: relDir, rules }];
      } catch {
        // An unreadable .gitignore is treated as absent, as git does.
      }
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (ALWAYS_SKIPPED.has(entry.name)) continue;
      const rel = relDir === "" ? entry.name : `${relDir}/${entry.name}`;
      const abs = join(absDir, entry.name);
      if (entry.isDirectory()) {
        if (isIgnored(`${rel}/`, layers)) continue;
        if (!(await walk(abs, rel, layers))) return false;
      } else if (entry.isFile()) {
        if (nameFilter && !nameFilter.test(entry.name)) continue;
        if (isIgnored(rel, layers)) continue;
        signal.throwIfAborted();
        if (!searchFile(abs, rel)) return false;
        await reportProgress();
      }
      // Symlinks, sockets and the like are skipped: following links could loop.
    }
    return true;
  };

  if (rootIsDir) {
    await walk(root, "", []);
  } else {
    searchFile(root, basename(rootArg));
  }
  signal.throwIfAborted();

  let text: string;
  if (lines.length === 0) {
    text = `No matches for /${args.pattern}/ in ${rootArg} (${filesScanned} files scanned).`;
  } else {
    text = lines.join("\n");
    if (truncated) {
      text +=
        `\n[truncated: showing the first ${lines.length} matches (limit: ${maxResults} matches or 64 KiB); ` +
        "narrow the pattern, path or glob, or raise maxResults]";
    }
  }
  return { content: [{ type: "text", text }], details: details() };
}
