/**
 * `grep`'s search of one file (whole text, literal prefilter, line clipping
 * and escaping), the pattern's compilation, and the merge of file outcomes
 * in walk order under the result's limits.
 *
 * @module
 */
import { escapeControlCharacters, messageOf, quotePath } from "../quote-path.js";
import { readRegularFileInto, type ReadScratch } from "../regular-file.js";
import { createLineMatcher, requiredLiterals, type LineMatcher } from "./line-matcher.js";

/** Files larger than this are skipped, not searched. */
export const GREP_MAX_FILE_BYTES = 4 * 1024 * 1024;
/** Cap on the UTF-8 size of the result text. */
export const GREP_MAX_OUTPUT_BYTES = 64 * 1024;
/** Matched lines longer than this (in UTF-16 code units) are cut and end with "…". */
export const GREP_MAX_LINE_CHARS = 300;

/** How many bytes are inspected for a NUL byte to decide that a file is binary. */
const BINARY_SNIFF_BYTES = 8 * 1024;
/** Lines searched between abort checks inside one file. */
const LINES_PER_ABORT_CHECK = 4096;

/** Cuts a long line without splitting a surrogate pair. */
function clipLine(line: string): string {
  if (line.length <= GREP_MAX_LINE_CHARS) return line;
  let end = GREP_MAX_LINE_CHARS;
  const last = line.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${line.slice(0, end)}…`;
}

export function compilePattern(pattern: string, flags: string | undefined): RegExp {
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

/** The bytes of the file being searched; one per thread, grown to the largest file read. */
const scratch: ReadScratch = { buffer: Buffer.allocUnsafe(64 * 1024) };

/** What searching one file found: null when it was skipped (unreadable, binary, too large), else its output lines. */
export type FileOutcome = string[] | null;

/** How much of the result is still open: a search records no more than merging could use. */
interface Budget {
  lines: number;
  bytes: number;
}

/** The search of one call: its compiled pattern and what a file's search needs. */
export interface Search {
  readonly matcher: LineMatcher;
  /** Bytes every matching line holds: a file without one of them is not decoded. */
  readonly needles: readonly Buffer[];
  readonly signal: AbortSignal;
  linesSinceCheck: number;
}

export function createSearch(regex: RegExp, signal: AbortSignal): Search {
  const needles = requiredLiterals(regex.source, regex.flags).map((literal) => Buffer.from(literal, "latin1"));
  // The longest first: usually the rarest.
  needles.sort((a, b) => b.length - a.length);
  return { matcher: createLineMatcher(regex), needles, signal, linesSinceCheck: 0 };
}

/**
 * What the literal prefilter scanned on this thread, in bytes (every needle
 * scans the file once): a guard, by count, that no file costs more than its
 * own size (test/tools.test.ts).
 */
export const prefilterStats = { bytesScanned: 0 };

/**
 * Searches one file. Records at most `budget.lines` lines, and stops after
 * the line that takes its bytes past `budget.bytes`: merging would stop there.
 */
export function searchFile(search: Search, absPath: string, relPath: string, budget: Budget): FileOutcome {
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
  // The file's bytes only: the scratch buffer keeps the largest file read so far, and
  // scanning all of it for every small file after a large one made grep many times slower.
  const haystack = buf.subarray(0, length);
  for (const needle of search.needles) {
    prefilterStats.bytesScanned += haystack.length;
    if (haystack.indexOf(needle) === -1) return found;
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
export class Merge {
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
