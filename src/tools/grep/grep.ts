/**
 * Built-in worker tool `grep`: regex search over a directory tree. Runs in a
 * worker, so it imports nothing from the coordinator.
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

const PROGRESS_INTERVAL_MS = 200;

interface GrepArgs {
  pattern: string;
  path?: string;
  flags?: string;
  glob?: string;
  maxResults?: number;
}

interface GrepDetails {
  matches: number;
  filesScanned: number;
  truncated: boolean;
}

/** "Is a progress update due now?": false for the first `intervalMs`, then true at most once per `intervalMs`. */
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
 * Searches non-ignored text files under `args.path` in sorted order, so the
 * output is stable. No file can forge an output line: names and matched
 * lines have control characters escaped (quote-path.ts). Only regular files
 * are read, so devices and FIFOs never hang a call. A single pathological
 * regex match cannot be interrupted: the pool's timeout covers it. Given
 * `ctx.spread`, a large walk is spread over idle threads with the result
 * this thread alone would give.
 */
export const execute = createGrepTool(workspaceFromModuleUrl(import.meta.url));

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
  // An explicit path must be searchable: a FIFO is an error, not "no matches".
  if (!rootIsDir) closeSync(openRegularFile(root, `grep: path ${quotePath(rootArg)}`).fd);

  const merge = new Merge(maxResults);
  const search = createSearch(regex, signal);
  const progressDue = createProgressThrottle();
  let filesSearched = 0;

  const reportProgress = async (): Promise<void> => {
    if (!progressDue()) return;
    ctx.onUpdate({
      content: [{ type: "text", text: `grep: scanned ${Math.max(filesSearched, merge.filesScanned)} files, ${merge.lines.length} matches so far` }],
      details: { matches: merge.lines.length, filesScanned: Math.max(filesSearched, merge.filesScanned), truncated: false },
    });
    // The search is synchronous: yield so the update is flushed.
    await yieldToEventLoop();
  };

  if (!rootIsDir) {
    merge.add(searchFile(search, root, basename(rootArg), merge.budget()));
  } else {
    const spread = ctx.spread as SpreadFunction | undefined;
    // Spread as soon as the walk has found enough files; parts search listed chunks while the walk goes on.
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

/** A part of a spread `grep` call, run on an idle thread through `ctx.spread`; not a tool of its own. */
export const searchPart = createGrepPart(workspaceFromModuleUrl(import.meta.url));
