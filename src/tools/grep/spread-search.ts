/**
 * One `grep` call spread over the pool's idle threads: the call's thread walks
 * and lists files, everyone searches chunks as they are listed, and the
 * call's thread merges chunks in walk order, so the result equals a
 * single-thread search.
 *
 * @module
 */
import { sep } from "node:path";

import type { SpreadOutcome, WorkerToolContext } from "../../types.js";
import type { Workspace } from "../workspace.js";
import { compilePattern, createSearch, GREP_MAX_OUTPUT_BYTES, searchFile, type FileOutcome, type Merge, type Search } from "./search-file.js";
import { chunkFiles, countFound, createControl, FileListReader, FileListWriter, isControl, stopAll, takeChunk } from "./shared-file-list.js";
import type { FileList } from "./walk.js";

export type SpreadFunction = (exportName: string, inputs: readonly unknown[]) => Promise<SpreadOutcome[]>;

export const minFilesToSpread = 4 * chunkFiles;
const maxSpreadParts = 63;
/** A longer list's tail is searched by the call's own thread. */
const pathsBytes = 8 * 1024 * 1024;
/** Poll interval: a part looks at its signal between waits. */
const listWaitMs = 20;
/** A part that waited this long for one chunk (a slow walk) gives its thread back. */
const maxListWaitMs = 250;

export interface GrepPartInput {
  root: string;
  /** Relative to `root`, in walk order, filled as the walk goes. */
  paths: SharedArrayBuffer;
  pattern: string;
  flags: string;
  maxResults: number;
  control: Int32Array;
}

export interface GrepChunk {
  index: number;
  skipped: number[];
  hitFiles: number[];
  hits: string[];
}

export interface GrepPartOutput {
  chunks: GrepChunk[];
}

export interface SharedSearch {
  readonly list: FileListWriter;
  readonly outcomes: Promise<SpreadOutcome[]>;
}

/** Every file records as much as merging could use if it came first; past the result's limits the stop flag is set. */
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
/** With `shouldStop`, a chunk left unfinished is `undefined`: the call's own thread searches it. */
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

export function startSpread(spread: SpreadFunction, root: string, pattern: string, flags: string, maxResults: number): SharedSearch {
  const control = createControl();
  const list = new FileListWriter(control, new SharedArrayBuffer(pathsBytes));
  const input: GrepPartInput = { root, paths: list.paths, pattern, flags, maxResults, control };
  const outcomes = spread("searchPart", new Array<GrepPartInput>(maxSpreadParts).fill(input));
  // Awaited by the merge; a throw before then must not be unhandled.
  outcomes.catch(() => {});
  return { list, outcomes };
}

/**
 * The call's thread after its walk: takes chunks like every part, then merges
 * in walk order, searching any chunk no part returned. The stop flag only
 * skips chunks after the merge's end, so every chunk taken is searched whole.
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
 * Takes chunks until none is left or the pool wants its thread back
 * (`ctx.shouldYield()`). A part stuck in one file is terminated by the pool
 * after `abortGraceMs`; the call's own thread then searches its chunks.
 */
export function createGrepPart(workspace: Workspace): (input: GrepPartInput, ctx: WorkerToolContext) => GrepPartOutput {
  return (input, ctx) => {
    const { root, paths, pattern, flags, maxResults, control } = input;
    if (typeof root !== "string" || !(paths instanceof SharedArrayBuffer) || !Number.isInteger(maxResults) || !isControl(control)) {
      throw new Error("grep: a search part needs { root, paths, pattern, flags, maxResults, control }");
    }
    // The part resolves nothing itself: the root must lie inside the workspace.
    const base = workspace.realRoot.endsWith(sep) ? workspace.realRoot : workspace.realRoot + sep;
    if (root !== workspace.realRoot && !root.startsWith(base)) throw new Error(`grep: a search part's root ${root} is outside the workspace root`);
    const search = createSearch(compilePattern(pattern, flags), ctx.signal);
    const list = new FileListReader(control, paths);
    const chunks: GrepChunk[] = [];
    const shouldYield = (): boolean => ctx.shouldYield?.() === true;
    for (;;) {
      if (shouldYield()) break;
      const index = takeChunk(control, Number.POSITIVE_INFINITY);
      if (index === -1) break;
      const listed = list.waitForChunk(index, ctx.signal, listWaitMs, performance.now() + maxListWaitMs);
      if (listed === undefined) return { chunks };
      if (index * chunkFiles >= listed) break;
      list.update();
      // Asked again before each file: a chunk of large files is a long step.
      const chunk = searchChunk(search, root, list.paths, index, maxResults, control, shouldYield);
      if (chunk === undefined) break;
      chunks.push(chunk);
    }
    return { chunks };
  };
}
