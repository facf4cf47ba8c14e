/** `grep`'s search of one file, the pattern's compilation, and the merge of outcomes in walk order. */
import { escapeControlCharacters, messageOf, quotePath } from "../quote-path.js";
import { readRegularFileInto, type ReadScratch } from "../regular-file.js";
import { createLineMatcher, requiredLiterals, type LineMatcher } from "./line-matcher.js";

export const GREP_MAX_FILE_BYTES = 4 * 1024 * 1024;
export const GREP_MAX_OUTPUT_BYTES = 64 * 1024;
export const GREP_MAX_LINE_CHARS = 300;

const BINARY_SNIFF_BYTES = 8 * 1024;
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
  // A global or sticky RegExp would carry `lastIndex` from one line to the next.
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

/** One per thread, grown to the largest file read. */
const scratch: ReadScratch = { buffer: Buffer.allocUnsafe(64 * 1024) };

/** Null when the file was skipped (unreadable, binary, too large). */
export type FileOutcome = string[] | null;

/** How much of the result is still open: a search records no more than merging could use. */
interface Budget {
  lines: number;
  bytes: number;
}

export interface Search {
  readonly matcher: LineMatcher;
  /** Bytes every matching line holds: a file without one is not decoded. */
  readonly needles: readonly Buffer[];
  readonly signal: AbortSignal;
  linesSinceCheck: number;
}

export function createSearch(regex: RegExp, signal: AbortSignal): Search {
  const needles = requiredLiterals(regex.source, regex.flags).map((literal) => Buffer.from(literal, "latin1"));
  needles.sort((a, b) => b.length - a.length);
  return { matcher: createLineMatcher(regex), needles, signal, linesSinceCheck: 0 };
}

/** Bytes the literal prefilter scanned on this thread: lets a test check no file costs more than its size. */
export const prefilterStats = { bytesScanned: 0 };

/** Stops after the line that takes it past `budget`: merging would stop there. */
export function searchFile(search: Search, absPath: string, relPath: string, budget: Budget): FileOutcome {
  let length: number;
  try {
    length = readRegularFileInto(absPath, relPath, GREP_MAX_FILE_BYTES, scratch);
  } catch {
    return null;
  }
  const buf = scratch.buffer;
  if (buf.subarray(0, Math.min(length, BINARY_SNIFF_BYTES)).includes(0)) return null;
  const found: string[] = [];
  if (budget.lines <= 0) return found;
  // The file's bytes only: the scratch buffer may be larger.
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

export class Merge {
  readonly lines: string[] = [];
  outputBytes = 0;
  filesScanned = 0;
  truncated = false;
  readonly #maxResults: number;

  constructor(maxResults: number) {
    this.#maxResults = maxResults;
  }

  /** One line more than fits, to tell that the result is truncated. */
  budget(): Budget {
    return { lines: this.#maxResults - this.lines.length + 1, bytes: GREP_MAX_OUTPUT_BYTES - this.outputBytes };
  }

  /** False once the result is complete. */
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
