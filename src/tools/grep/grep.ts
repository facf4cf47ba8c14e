/**
 * Built-in worker tool `grep`: regex search over a directory tree.
 *
 * Loaded inside a worker thread, so it imports nothing from the coordinator or
 * the worker runtime; it only uses Node built-ins and the `ignore` package.
 * Its parts: the walk (`walk.ts`), one file's search and the merge
 * (`search-file.ts`), and a search spread over the pool's idle threads
 * (`spread-search.ts`, on the shared-memory protocol of `shared-file-list.ts`).
 *
 * @module
 */
import { closeSync, statSync } from "node:fs";
import { basename } from "node:path";
import { setImmediate as yieldToEventLoop } from "node:timers/promises";

import type { AgentToolResult, WorkerToolContext } from "../../types.js";
import { escapeControlCharacters, messageOf, quotePath } from "../quote-path.js";
import { openRegularFile } from "../regular-file.js";
import { resolveInWorkspace, workspaceFromModuleUrl, type Workspace } from "../workspace.js";
import { GREP_DEFAULT_MAX_RESULTS, GREP_MAX_RESULTS_LIMIT } from "./grep-spec.js";
import { compilePattern, createSearch, Merge, searchFile } from "./search-file.js";
import { createGrepPart, minFilesToSpread, searchSpread, startSpread, type SharedSearch, type SpreadFunction } from "./spread-search.js";
import { globToRegExp, walkTree, type FileList } from "./walk.js";

export { GREP_DEFAULT_MAX_RESULTS, GREP_MAX_RESULTS_LIMIT, grepSpec } from "./grep-spec.js";
export { GREP_MAX_FILE_BYTES, GREP_MAX_LINE_CHARS, GREP_MAX_OUTPUT_BYTES } from "./search-file.js";
export { chunkFiles as GREP_CHUNK_FILES } from "./shared-file-list.js";
export type { GrepChunk, GrepPartInput, GrepPartOutput } from "./spread-search.js";
export { createGrepPart } from "./spread-search.js";
export { globToRegExp } from "./walk.js";

/** Minimum interval between two progress updates. */
const PROGRESS_INTERVAL_MS = 200;

/** Arguments of the `grep` tool. */
interface GrepArgs {
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
interface GrepDetails {
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
export function createProgressThrottle(intervalMs: number = PROGRESS_INTERVAL_MS, now: () => number = () => performance.now()): () => boolean {
  let due = now() + intervalMs;
  return () => {
    const t = now();
    if (t < due) return false;
    due = t + intervalMs;
    return true;
  };
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
 *   No file can forge a line: a name holding control characters is quoted,
 *   and control characters in a matched line (tab excepted) are escaped
 *   (see quote-path.ts).
 * - Honors `.gitignore` files at the root of `path` and below (not those above
 *   it); never enters `.git/` or `node_modules/`; skips `patch`'s temporary
 *   files (`.*.toolpool.tmp`); does not follow symlinks;
 *   skips files with a NUL byte in their first 8 KiB and files over 4 MiB;
 *   silently skips entries it cannot read.
 * - Checks `ctx.signal` for every file and every 4096 lines passed (a file
 *   scanned whole at once counts its lines up to its last match), and sends
 *   a progress update at most every 200 ms (never in the first 200 ms).
 *   A single pathological regex match cannot be interrupted.
 * - Reads only regular files, at most 4 MiB of each, whatever their size
 *   says (devices, FIFOs and `/proc` files never hang or balloon a call).
 * - Throws on an invalid pattern or flags, a bad `maxResults`, a path outside
 *   the workspace root, a missing path, or a path that is neither a
 *   directory nor a regular file.
 * - Given `ctx.spread` (a toolpool pool), a walk that finds 256 files or more
 *   spreads the search over the pool's idle threads (see `spread-search.ts`); the
 *   result is the one this thread alone would give.
 */
export const execute = createGrepTool(workspaceFromModuleUrl(import.meta.url));

/** `grep`'s execute function confined to `workspace`. */
export function createGrepTool(workspace: Workspace): (args: GrepArgs, ctx: WorkerToolContext<GrepDetails>) => Promise<AgentToolResult<GrepDetails>> {
  return (args, ctx) => executeGrep(workspace, args, ctx);
}

async function executeGrep(workspace: Workspace, args: GrepArgs, ctx: WorkerToolContext<GrepDetails>): Promise<AgentToolResult<GrepDetails>> {
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
    if (code === "ENOENT" || code === "ENOTDIR") throw new Error(`grep: path not found: ${quotePath(rootArg)}`);
    throw new Error(`grep: cannot read path ${quotePath(rootArg)}: ${messageOf(err)}`);
  }
  // A path given explicitly must be searchable: a FIFO or device is an error,
  // not a silent "no matches".
  if (!rootIsDir) closeSync(openRegularFile(root, `grep: path ${quotePath(rootArg)}`).fd);

  const merge = new Merge(maxResults);
  const search = createSearch(regex, signal);
  const progressDue = createProgressThrottle();
  /** Files searched so far, merged or not (progress only). */
  let filesSearched = 0;

  const reportProgress = async (): Promise<void> => {
    if (!progressDue()) return;
    ctx.onUpdate({
      content: [{ type: "text", text: `grep: scanned ${Math.max(filesSearched, merge.filesScanned)} files, ${merge.lines.length} matches so far` }],
      details: { matches: merge.lines.length, filesScanned: Math.max(filesSearched, merge.filesScanned), truncated: false },
    });
    // The search is synchronous I/O; let the worker's event loop run so the
    // update is flushed and any incoming messages are handled.
    await yieldToEventLoop();
  };

  if (!rootIsDir) {
    merge.add(searchFile(search, root, basename(rootArg), merge.budget()));
  } else {
    const spread = ctx.spread as SpreadFunction | undefined;
    // A tree big enough is spread over the pool as soon as the walk has found
    // that many files: parts search the chunks already listed while the walk goes on.
    let shared: SharedSearch | undefined;
    let files: FileList;
    try {
      files = await walkTree(root, nameFilter, signal, reportProgress, (list) => {
        if (shared !== undefined) return shared.list.publish(list.rel);
        if (list.rel.length >= minFilesToSpread && typeof spread === "function") {
          shared = startSpread(spread.bind(ctx), root, args.pattern, args.flags ?? "", maxResults);
          return shared.list.publish(list.rel);
        }
        return true;
      });
    } catch (error) {
      (shared as SharedSearch | undefined)?.list.end(undefined);
      throw error;
    }
    (shared as SharedSearch | undefined)?.list.end(files.rel);
    if (shared === undefined) {
      // On this thread alone: each file merged as soon as it is searched, as the walk gave it.
      for (let i = 0; i < files.rel.length; i++) {
        signal.throwIfAborted();
        const outcome = searchFile(search, files.abs[i]!, files.rel[i]!, merge.budget());
        if (outcome !== null) filesSearched++;
        if (!merge.add(outcome)) break;
        await reportProgress();
      }
    } else {
      await searchSpread(shared, root, files, maxResults, search, merge, reportProgress, (n) => (filesSearched += n));
    }
  }
  signal.throwIfAborted();

  const { lines, filesScanned, truncated } = merge;
  let text: string;
  if (lines.length === 0) {
    text = `No matches for /${escapeControlCharacters(args.pattern)}/ in ${quotePath(rootArg)} (${filesScanned} files scanned).`;
  } else {
    text = lines.join("\n");
    if (truncated) {
      text +=
        `\n[truncated: showing the first ${lines.length} matches (limit: ${maxResults} matches or 64 KiB); ` +
        "narrow the pattern, path or glob, or raise maxResults]";
    }
  }
  return { content: [{ type: "text", text }], details: { matches: lines.length, filesScanned, truncated } };
}

/**
 * A part of a spread `grep` call (see `spread-search.ts`), run by the pool
 * on an idle thread through `ctx.spread`: takes chunks from the shared
 * counter until none is left. Not a tool of its own.
 */
export const searchPart = createGrepPart(workspaceFromModuleUrl(import.meta.url));
