/**
 * One `grep` call spread over the pool's idle threads (`ctx.spread`): the
 * call's own thread walks and lists files (see `shared-file-list.ts`), parts
 * and the call's thread search chunks of 64 files as they are listed, and the
 * call's thread merges the chunks in walk order. The result is the one this
 * thread alone would give.
 *
 * @module
 */
import { sep } from "node:path";

import type { SpreadOutcome, WorkerToolContext } from "../../types.js";
import type { Workspace } from "../workspace.js";
import { compilePattern, createSearch, GREP_MAX_OUTPUT_BYTES, searchFile, type FileOutcome, type Merge, type Search } from "./search-file.js";
import { chunkFiles, countFound, createControl, FileListReader, FileListWriter, isControl, stopAll, takeChunk } from "./shared-file-list.js";
import type { FileList } from "./walk.js";

/** `ctx.spread`, as `grep` calls it. */
export type SpreadFunction = (exportName: string, inputs: readonly unknown[]) => Promise<SpreadOutcome[]>;

/** A tree with fewer files than this is searched on the call's own thread. */
export const minFilesToSpread = 4 * chunkFiles;
/** At most this many parts are asked for (the pool runs as many as it has idle threads). */
const maxSpreadParts = 63;
/** Bytes of the shared file list: room for the paths of ~300,000 files; a longer list's tail is searched by the call's own thread. */
const pathsBytes = 8 * 1024 * 1024;
/** How long a part waits at most for the walk to list more files before it looks at its signal again. */
const listWaitMs = 20;
/** A part that waited this long for one chunk gives its thread back (a slow walk): the call's own thread searches that chunk. */
const maxListWaitMs = 250;

/** What each part of a spread search gets: where to find the files, the pattern, and the shared control array. */
export interface GrepPartInput {
  /** The search root's real path. */
  root: string;
  /** The files' paths relative to `root`, in walk order (see `shared-file-list.ts`); shared, filled as the walk goes. */
  paths: SharedArrayBuffer;
  pattern: string;
  flags: string;
  maxResults: number;
  /** Shared: the slots of `shared-file-list.ts`. */
  control: Int32Array;
}

/** One chunk's outcome: which of its files were skipped, and the output lines with the file each came from. */
export interface GrepChunk {
  index: number;
  /** Indexes (within the chunk) of the files skipped. */
  skipped: number[];
  /** Per output line, the index (within the chunk) of its file. */
  hitFiles: number[];
  hits: string[];
}

/** What a part returns: the chunks it searched. */
export interface GrepPartOutput {
  chunks: GrepChunk[];
}

/** A spread search under way: the shared list the walk fills, and the parts' pending outcomes. */
export interface SharedSearch {
  readonly list: FileListWriter;
  readonly outcomes: Promise<SpreadOutcome[]>;
}

/**
 * Searches chunk `index` of `rel` (files `index * 64` onwards). Every file
 * records as much as merging could use if it came first; the lines and
 * bytes found go to the shared totals, and past the result's limits the
 * stop flag is set, so no one takes another chunk.
 */
function searchChunk(search: Search, root: string, rel: readonly string[], index: number, maxResults: number, control: Int32Array): GrepChunk;
function searchChunk(
  search: Search,
  root: string,
  rel: readonly string[],
  index: number,
  maxResults: number,
  control: Int32Array,
  shouldStop: () => boolean,
): GrepChunk | undefined;
/** With `shouldStop`: asked before each file; when it says so, the chunk is left unfinished (`undefined`), for the call's own thread to search. */
function searchChunk(
  search: Search,
  root: string,
  rel: readonly string[],
  index: number,
  maxResults: number,
  control: Int32Array,
  shouldStop?: () => boolean,
): GrepChunk | undefined {
  const chunk: GrepChunk = { index, skipped: [], hitFiles: [], hits: [] };
  const start = index * chunkFiles;
  const end = Math.min(rel.length, start + chunkFiles);
  const prefix = root.endsWith(sep) ? root : root + sep;
  for (let i = start; i < end; i++) {
    search.signal.throwIfAborted();
    if (shouldStop?.() === true) return undefined;
    // The walk's paths are clean (no "." or ".." parts): joined without normalizing.
    const relPath = rel[i]!;
    const outcome = searchFile(search, prefix + (sep === "/" ? relPath : relPath.replaceAll("/", sep)), relPath, {
      lines: maxResults + 1,
      bytes: GREP_MAX_OUTPUT_BYTES,
    });
    if (outcome === null) {
      chunk.skipped.push(i - start);
      continue;
    }
    if (outcome.length === 0) continue;
    let bytes = 0;
    for (const out of outcome) {
      chunk.hitFiles.push(i - start);
      chunk.hits.push(out);
      bytes += Buffer.byteLength(out, "utf8") + 1;
    }
    countFound(control, outcome.length, bytes, maxResults, GREP_MAX_OUTPUT_BYTES);
  }
  return chunk;
}

/** Starts the parts of a spread search; the walk then lists files for them as it finds them. */
export function startSpread(spread: SpreadFunction, root: string, pattern: string, flags: string, maxResults: number): SharedSearch {
  const control = createControl();
  const list = new FileListWriter(control, new SharedArrayBuffer(pathsBytes));
  const input: GrepPartInput = { root, paths: list.paths, pattern, flags, maxResults, control };
  const outcomes = spread("searchPart", new Array<GrepPartInput>(maxSpreadParts).fill(input));
  // Awaited by the merge; a throw before then must not leave it unhandled.
  outcomes.catch(() => {});
  return { list, outcomes };
}

/**
 * The call's own thread, once its walk is over: takes chunks from the shared
 * counter like every part, then merges the chunks in walk order; a chunk no
 * part returned (a part that failed, was not run, was stopped, or found the
 * file list full) is searched here. The stop flag only ever skips chunks
 * after enough was found for the merge to end before them: every chunk
 * taken and listed is searched to the end.
 */
export async function searchSpread(
  shared: SharedSearch,
  root: string,
  files: FileList,
  maxResults: number,
  search: Search,
  merge: Merge,
  reportProgress: () => Promise<void>,
  countSearched: (files: number) => void,
): Promise<void> {
  const { control } = shared.list;
  const rel = files.rel;
  const chunkCount = Math.ceil(rel.length / chunkFiles);
  const chunks = new Map<number, GrepChunk>();
  try {
    for (let index = takeChunk(control, chunkCount); index !== -1; index = takeChunk(control, chunkCount)) {
      chunks.set(index, searchChunk(search, root, rel, index, maxResults, control));
      countSearched(Math.min(chunkFiles, rel.length - index * chunkFiles));
      await reportProgress();
    }
  } finally {
    // Nothing more to take for anyone, whether this thread finished or threw.
    stopAll(control);
  }
  let outcomes: SpreadOutcome[] = [];
  try {
    outcomes = await shared.outcomes;
  } catch {
    // No part ran: every chunk is searched here.
  }
  for (const outcome of outcomes) {
    if (!outcome.ok) continue;
    for (const chunk of (outcome.value as GrepPartOutput).chunks) chunks.set(chunk.index, chunk);
  }
  search.signal.throwIfAborted();
  for (let index = 0; index < chunkCount; index++) {
    const chunk = chunks.get(index) ?? searchChunk(search, root, rel, index, maxResults, control);
    const size = Math.min(chunkFiles, rel.length - index * chunkFiles);
    let skipAt = 0;
    let hitAt = 0;
    for (let file = 0; file < size; file++) {
      let outcome: FileOutcome;
      if (chunk.skipped[skipAt] === file) {
        skipAt++;
        outcome = null;
      } else {
        const from = hitAt;
        while (chunk.hitFiles[hitAt] === file) hitAt++;
        outcome = from === hitAt ? noLines : chunk.hits.slice(from, hitAt);
      }
      if (!merge.add(outcome)) return;
    }
  }
}

const noLines: string[] = [];

/**
 * `grep`'s part function confined to `workspace`: takes chunks from the
 * shared counter until none is left, or until the pool asks for its thread
 * back (`ctx.shouldYield()`, checked before each file). A part stuck in one
 * file (a pattern that backtracks for ever) is terminated by the pool once
 * it has not yielded within `abortGraceMs`; its chunks are then searched by
 * the call's own thread.
 */
export function createGrepPart(workspace: Workspace): (input: GrepPartInput, ctx: WorkerToolContext) => GrepPartOutput {
  return (input, ctx) => {
    const { root, paths, pattern, flags, maxResults, control } = input;
    if (typeof root !== "string" || !(paths instanceof SharedArrayBuffer) || !Number.isInteger(maxResults) || !isControl(control)) {
      throw new Error("grep: a search part needs { root, paths, pattern, flags, maxResults, control }");
    }
    // The part resolves nothing itself: the root must be the workspace's real root or below it.
    const base = workspace.realRoot.endsWith(sep) ? workspace.realRoot : workspace.realRoot + sep;
    if (root !== workspace.realRoot && !root.startsWith(base)) throw new Error(`grep: a search part's root ${root} is outside the workspace root`);
    const search = createSearch(compilePattern(pattern, flags), ctx.signal);
    const list = new FileListReader(control, paths);
    const chunks: GrepChunk[] = [];
    const shouldYield = (): boolean => ctx.shouldYield?.() === true;
    for (;;) {
      // Calls of another session wait for a thread: this one goes back to the pool, and the call's own thread searches the rest.
      if (shouldYield()) break;
      const index = takeChunk(control, Number.POSITIVE_INFINITY);
      if (index === -1) break;
      // Wait until the walk has listed the chunk, or ended.
      const listed = list.waitForChunk(index, ctx.signal, listWaitMs, performance.now() + maxListWaitMs);
      if (listed === undefined) return { chunks };
      if (index * chunkFiles >= listed) break;
      list.update();
      // Asked again before each file: a chunk of large files is a long step. A chunk left unfinished is the call's own thread's.
      const chunk = searchChunk(search, root, list.paths, index, maxResults, control, shouldYield);
      if (chunk === undefined) break;
      chunks.push(chunk);
    }
    return { chunks };
  };
}
