/**
 * Built-in worker tool `grep`: regex search over a directory tree.
 *
 * Loaded inside a worker thread, so it imports nothing from the coordinator or
 * the worker runtime; it only uses Node built-ins and the `ignore` package.
 *
 * @module
 */

import { closeSync, readdirSync, statSync, type Dirent } from "node:fs";
import { basename, join, sep } from "node:path";
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import ignore, { type Ignore } from "ignore";
import type { AgentToolResult, SpreadOutcome, WorkerToolContext } from "../types.js";
import { createLineMatcher, requiredLiterals, type LineMatcher } from "./line-matcher.js";
import { escapeControlCharacters, messageOf, quotePath } from "./quote-path.js";
import { openRegularFile, readRegularFile, readRegularFileInto, type ReadScratch } from "./regular-file.js";
import { isTemporaryFileName } from "./temporary-file.js";
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
    throw new Error(`grep: invalid pattern ${JSON.stringify(pattern)}: ${messageOf(err)}`);
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
 *   spreads the search over the pool's idle threads (see `searchSpread`); the
 *   result is the one this thread alone would give.
 */
export const execute = createGrepTool(workspaceFromModuleUrl(import.meta.url));

/** `grep`'s execute function confined to `workspace`. */
export function createGrepTool(
  workspace: Workspace,
): (args: GrepArgs, ctx: WorkerToolContext<GrepDetails>) => Promise<AgentToolResult<GrepDetails>> {
  return (args, ctx) => executeGrep(workspace, args, ctx);
}

/** Files searched per chunk: the unit a thread takes at a time when one call spreads over threads. */
export const GREP_CHUNK_FILES = 64;
/** A tree with fewer files than this is searched on the call's own thread. */
const MIN_FILES_TO_SPREAD = 4 * GREP_CHUNK_FILES;
/** At most this many parts are asked for (the pool runs as many as it has idle threads). */
const MAX_SPREAD_PARTS = 63;

/** The bytes of the file being searched; one per thread, grown to the largest file read. */
const scratch: ReadScratch = { buffer: Buffer.allocUnsafe(64 * 1024) };

/** What searching one file found: null when it was skipped (unreadable, binary, too large), else its output lines. */
type FileOutcome = string[] | null;

/** How much of the result is still open: a search records no more than merging could use. */
interface Budget {
  lines: number;
  bytes: number;
}

/** The search of one call: its compiled pattern and what a file's search needs. */
interface Search {
  readonly matcher: LineMatcher;
  /** Bytes every matching line holds: a file without one of them is not decoded. */
  readonly needles: readonly Buffer[];
  readonly signal: AbortSignal;
  linesSinceCheck: number;
}

function createSearch(regex: RegExp, signal: AbortSignal): Search {
  const needles = requiredLiterals(regex.source, regex.flags).map((literal) => Buffer.from(literal, "latin1"));
  // The longest first: usually the rarest.
  needles.sort((a, b) => b.length - a.length);
  return { matcher: createLineMatcher(regex), needles, signal, linesSinceCheck: 0 };
}

/**
 * Searches one file. Records at most `budget.lines` lines, and stops after
 * the line that takes its bytes past `budget.bytes`: merging would stop there.
 */
function searchFile(search: Search, absPath: string, relPath: string, budget: Budget): FileOutcome {
  let length: number;
  try {
    length = readRegularFileInto(absPath, relPath, GREP_MAX_FILE_BYTES, scratch);
  } catch {
    // Oversized, vanished, or not a regular file after all: skipped.
    return null;
  }
  const buf = scratch.buffer;
  if (buf.subarray(0, Math.min(length, BINARY_SNIFF_BYTES)).includes(0)) return null;
  const found: string[] = [];
  if (budget.lines <= 0) return found;
  for (const needle of search.needles) {
    // The first occurrence ending past the file's bytes means none inside them.
    const at = buf.indexOf(needle);
    if (at === -1 || at + needle.length > length) return found;
  }
  let bytes = 0;
  const shownPath = quotePath(relPath);
  search.matcher.forEachMatch(
    buf.toString("utf8", 0, length),
    (lineNumber, line) => {
      const out = `${shownPath}:${lineNumber}: ${escapeControlCharacters(clipLine(line))}`;
      found.push(out);
      bytes += Buffer.byteLength(out, "utf8") + 1;
      return found.length < budget.lines && bytes <= budget.bytes;
    },
    (lines) => {
      search.linesSinceCheck += lines;
      if (search.linesSinceCheck >= LINES_PER_ABORT_CHECK) {
        search.linesSinceCheck = 0;
        search.signal.throwIfAborted();
      }
    },
  );
  return found;
}

/** The result as it is merged, file by file in walk order. */
class Merge {
  readonly lines: string[] = [];
  outputBytes = 0;
  filesScanned = 0;
  truncated = false;
  readonly #maxResults: number;

  constructor(maxResults: number) {
    this.#maxResults = maxResults;
  }

  /** What a file's search may still record (one line more than fits, to tell that the result is truncated). */
  budget(): Budget {
    return { lines: this.#maxResults - this.lines.length + 1, bytes: GREP_MAX_OUTPUT_BYTES - this.outputBytes };
  }

  /** Adds one file's outcome; returns false once the result is complete (truncated). */
  add(outcome: FileOutcome): boolean {
    if (outcome === null) return true;
    this.filesScanned++;
    for (const out of outcome) {
      if (this.lines.length >= this.#maxResults) {
        this.truncated = true;
        return false;
      }
      const size = Buffer.byteLength(out, "utf8") + 1;
      if (this.outputBytes + size > GREP_MAX_OUTPUT_BYTES) {
        this.truncated = true;
        return false;
      }
      this.outputBytes += size;
      this.lines.push(out);
    }
    return true;
  }
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
        if (shared !== undefined) return shared.publish(list);
        if (list.rel.length >= MIN_FILES_TO_SPREAD && typeof spread === "function") {
          shared = startSpread(spread.bind(ctx), root, args, maxResults);
          return shared.publish(list);
        }
        return true;
      });
    } catch (error) {
      (shared as SharedSearch | undefined)?.endWalk(undefined);
      throw error;
    }
    (shared as SharedSearch | undefined)?.endWalk(files);
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

/** Thrown through the walk's recursion to end it early. */
const walkStopped = new Error("walk stopped");

/** The files to search, in walk order: absolute paths and paths relative to the search root. */
interface FileList {
  abs: string[];
  rel: string[];
}

/**
 * Lists every file to search under `root`, in sorted (code point) order,
 * honoring .gitignore files; checks the signal for every directory.
 */
async function walkTree(
  root: string,
  nameFilter: RegExp | undefined,
  signal: AbortSignal,
  reportProgress: () => Promise<void>,
  onFile: (files: FileList) => boolean,
): Promise<FileList> {
  const files: FileList = { abs: [], rel: [] };
  const walk = async (absDir: string, relDir: string, parentLayers: readonly IgnoreLayer[]): Promise<void> => {
    signal.throwIfAborted();
    let entries: Dirent[];
    try {
      entries = readdirSync(absDir, { withFileTypes: true });
    } catch {
      return;
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
    // absDir is normalized and a name holds no separator: joined without normalizing again.
    const prefix = absDir.endsWith(sep) ? absDir : absDir + sep;
    for (const entry of entries) {
      if (ALWAYS_SKIPPED.has(entry.name)) continue;
      const rel = relDir === "" ? entry.name : `${relDir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (isIgnored(`${rel}/`, layers)) continue;
        await walk(prefix + entry.name, rel, layers);
      } else if (entry.isFile()) {
        // patch's temporary files, complete or cut short: never search results.
        if (isTemporaryFileName(entry.name)) continue;
        if (nameFilter && !nameFilter.test(entry.name)) continue;
        if (isIgnored(rel, layers)) continue;
        files.abs.push(prefix + entry.name);
        files.rel.push(rel);
        // Enough found already (a spread search): the files after these cannot be in the result.
        if (!onFile(files)) throw walkStopped;
      }
      // Symlinks, sockets and the like are skipped: following links could loop.
    }
    await reportProgress();
  };
  try {
    await walk(root, "", []);
  } catch (error) {
    if (error !== walkStopped) throw error;
  }
  return files;
}

type SpreadFunction = (exportName: string, inputs: readonly unknown[]) => Promise<SpreadOutcome[]>;

/** Slots of a spread search's shared control array. */
const NEXT_CHUNK = 0;
const LINES_FOUND = 1;
const BYTES_FOUND = 2;
/** Set once enough was found, or the call's own thread stopped: no one takes another chunk. */
const STOP = 3;
/** Files listed so far (a multiple of the chunk size until the walk ends). */
const FILES_LISTED = 4;
/** Bytes of `paths` holding them. */
const BYTES_LISTED = 5;
/** Set once no more files will be listed. */
const LIST_DONE = 6;
/** Bumped whenever any of the above changes that a waiting part needs to see: what parts wait on. */
const VERSION = 7;
const CONTROL_SLOTS = 8;

/** Bytes of the shared file list: room for the paths of ~300,000 files; a longer list's tail is searched by the call's own thread. */
const PATHS_BYTES = 8 * 1024 * 1024;
/** How long a part waits at most for the walk to list more files before it looks at its signal again. */
const LIST_WAIT_MS = 20;
/** A part that waited this long for one chunk gives its thread back (a slow walk): the call's own thread searches that chunk. */
const MAX_LIST_WAIT_MS = 250;

/** What each part of a spread search gets: where to find the files, the pattern, and the shared control array. */
export interface GrepPartInput {
  /** The search root's real path. */
  root: string;
  /** The files' paths relative to `root`, in walk order, UTF-8, each ended by a NUL (no path holds one); shared, filled as the walk goes. */
  paths: SharedArrayBuffer;
  pattern: string;
  flags: string;
  maxResults: number;
  /** Shared: the next chunk to take, lines and bytes found so far, the stop flag, and how much of `paths` is listed. */
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

/**
 * Searches chunk `index` of `rel` (files `index * 64` onwards). Every file
 * records as much as merging could use if it came first; the lines and
 * bytes found go to the shared counters, and past the result's limits the
 * stop flag is set, so no one takes another chunk.
 */
function searchChunk(search: Search, root: string, rel: readonly string[], index: number, maxResults: number, control: Int32Array): GrepChunk {
  const chunk: GrepChunk = { index, skipped: [], hitFiles: [], hits: [] };
  const start = index * GREP_CHUNK_FILES;
  const end = Math.min(rel.length, start + GREP_CHUNK_FILES);
  const prefix = root.endsWith(sep) ? root : root + sep;
  for (let i = start; i < end; i++) {
    search.signal.throwIfAborted();
    // The walk's paths are clean (no "." or ".." parts): joined without normalizing.
    const relPath = rel[i]!;
    const outcome = searchFile(search, prefix + (sep === "/" ? relPath : relPath.replaceAll("/", sep)), relPath, { lines: maxResults + 1, bytes: GREP_MAX_OUTPUT_BYTES });
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
    const lines = Atomics.add(control, LINES_FOUND, outcome.length) + outcome.length;
    const totalBytes = Atomics.add(control, BYTES_FOUND, bytes) + bytes;
    if (lines > maxResults || totalBytes > GREP_MAX_OUTPUT_BYTES) stopAll(control);
  }
  return chunk;
}

/** Sets the stop flag and wakes the parts waiting for the walk. */
function stopAll(control: Int32Array): void {
  Atomics.store(control, STOP, 1);
  Atomics.add(control, VERSION, 1);
  Atomics.notify(control, VERSION);
}

/** The next chunk from the shared counter, or -1 when none is left or the stop flag is set. */
function takeChunk(control: Int32Array, chunks: number): number {
  if (Atomics.load(control, STOP) !== 0) return -1;
  const index = Atomics.add(control, NEXT_CHUNK, 1);
  return index < chunks ? index : -1;
}

/** A spread search under way: the shared list the walk fills, and the parts' pending outcomes. */
interface SharedSearch {
  readonly control: Int32Array;
  readonly outcomes: Promise<SpreadOutcome[]>;
  /** Lists the files found since the last call (whole chunks only); false once enough was found and the walk may stop. */
  publish(files: FileList): boolean;
  /** The walk has ended: the rest of `files` is listed (none when the walk failed), and parts stop waiting. */
  endWalk(files: FileList | undefined): void;
}

/** Starts the parts of a spread search; the walk then lists files for them as it finds them. */
function startSpread(spread: SpreadFunction, root: string, args: GrepArgs, maxResults: number): SharedSearch {
  const control = new Int32Array(new SharedArrayBuffer(CONTROL_SLOTS * Int32Array.BYTES_PER_ELEMENT));
  const paths = new SharedArrayBuffer(PATHS_BYTES);
  const bytes = Buffer.from(paths);
  const input: GrepPartInput = { root, paths, pattern: args.pattern, flags: args.flags ?? "", maxResults, control };
  const outcomes = spread("searchPart", new Array<GrepPartInput>(MAX_SPREAD_PARTS).fill(input));
  // Awaited by the merge; a throw before then must not leave it unhandled.
  outcomes.catch(() => {});
  let listed = 0;
  let written = 0;
  let isFull = false;
  const publishUpTo = (files: FileList, end: number): void => {
    for (let i = listed; i < end; i++) {
      const rel = files.rel[i]!;
      if (written + Buffer.byteLength(rel, "utf8") + 1 > PATHS_BYTES) {
        // The rest is not listed: the call's own thread searches it.
        isFull = true;
        end = i - (i % GREP_CHUNK_FILES);
        break;
      }
      written += bytes.write(rel, written, "utf8");
      bytes[written++] = 0;
    }
    listed = Math.max(listed, end);
    Atomics.store(control, BYTES_LISTED, written);
    Atomics.store(control, FILES_LISTED, listed);
    Atomics.add(control, VERSION, 1);
    Atomics.notify(control, VERSION);
  };
  return {
    control,
    outcomes,
    publish: (files) => {
      if (Atomics.load(control, STOP) !== 0) return false;
      const whole = files.rel.length - (files.rel.length % GREP_CHUNK_FILES);
      if (!isFull && whole > listed) publishUpTo(files, whole);
      return true;
    },
    endWalk: (files) => {
      if (files !== undefined && !isFull && files.rel.length > listed) publishUpTo(files, files.rel.length);
      Atomics.store(control, LIST_DONE, 1);
      Atomics.add(control, VERSION, 1);
      Atomics.notify(control, VERSION);
    },
  };
}

/**
 * One call's search spread over the pool's idle threads: the files are cut
 * into chunks of 64, which this thread (once its walk is over) and every
 * part take from a shared counter. Then the chunks are merged in walk
 * order; a chunk no part returned (a part that failed, was not run, was
 * stopped, or found the file list full) is searched here. The stop flag
 * only ever skips chunks after enough was found for the merge to end
 * before them: every chunk taken and listed is searched to the end.
 */
async function searchSpread(
  shared: SharedSearch,
  root: string,
  files: FileList,
  maxResults: number,
  search: Search,
  merge: Merge,
  reportProgress: () => Promise<void>,
  countSearched: (files: number) => void,
): Promise<void> {
  const { control } = shared;
  const rel = files.rel;
  const chunkCount = Math.ceil(rel.length / GREP_CHUNK_FILES);
  const chunks = new Map<number, GrepChunk>();
  try {
    for (let index = takeChunk(control, chunkCount); index !== -1; index = takeChunk(control, chunkCount)) {
      chunks.set(index, searchChunk(search, root, rel, index, maxResults, control));
      countSearched(Math.min(GREP_CHUNK_FILES, rel.length - index * GREP_CHUNK_FILES));
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
    const size = Math.min(GREP_CHUNK_FILES, rel.length - index * GREP_CHUNK_FILES);
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
 * A part of a spread `grep` call (see {@link searchSpread}), run by the pool
 * on an idle thread through `ctx.spread`: takes chunks from the shared
 * counter until none is left. Not a tool of its own.
 */
export const searchPart = createGrepPart(workspaceFromModuleUrl(import.meta.url));

/** `grep`'s part function confined to `workspace`. */
export function createGrepPart(workspace: Workspace): (input: GrepPartInput, ctx: WorkerToolContext) => GrepPartOutput {
  return (input, ctx) => {
    const { root, paths, pattern, flags, maxResults, control } = input;
    if (
      typeof root !== "string" ||
      !(paths instanceof SharedArrayBuffer) ||
      !Number.isInteger(maxResults) ||
      !(control instanceof Int32Array) ||
      !(control.buffer instanceof SharedArrayBuffer) ||
      control.length !== CONTROL_SLOTS
    ) {
      throw new Error("grep: a search part needs { root, paths, pattern, flags, maxResults, control }");
    }
    // The part resolves nothing itself: the root must be the workspace's real root or below it.
    const base = workspace.realRoot.endsWith(sep) ? workspace.realRoot : workspace.realRoot + sep;
    if (root !== workspace.realRoot && !root.startsWith(base)) throw new Error(`grep: a search part's root ${root} is outside the workspace root`);
    const search = createSearch(compilePattern(pattern, flags), ctx.signal);
    const rel: string[] = [];
    let decoded = 0;
    const chunks: GrepChunk[] = [];
    for (;;) {
      if (Atomics.load(control, STOP) !== 0) break;
      const index = Atomics.add(control, NEXT_CHUNK, 1);
      // Wait until the walk has listed the chunk, or ended.
      let listed: number;
      const waitUntil = performance.now() + MAX_LIST_WAIT_MS;
      for (;;) {
        const version = Atomics.load(control, VERSION);
        const isDone = Atomics.load(control, LIST_DONE) !== 0;
        listed = Atomics.load(control, FILES_LISTED);
        if (isDone || listed >= (index + 1) * GREP_CHUNK_FILES || Atomics.load(control, STOP) !== 0) break;
        ctx.signal.throwIfAborted();
        if (performance.now() >= waitUntil) return { chunks };
        Atomics.wait(control, VERSION, version, LIST_WAIT_MS);
      }
      if (index * GREP_CHUNK_FILES >= listed) break;
      const listedBytes = Atomics.load(control, BYTES_LISTED);
      if (listedBytes > decoded) {
        const names = Buffer.from(paths, decoded, listedBytes - decoded).toString("utf8").split("\0");
        // The last piece is what follows the last NUL: nothing.
        for (let i = 0; i < names.length - 1; i++) rel.push(names[i]!);
        decoded = listedBytes;
      }
      chunks.push(searchChunk(search, root, rel, index, maxResults, control));
    }
    return { chunks };
  };
}
