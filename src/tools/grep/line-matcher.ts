/**
 * `grep`'s matching rule: a line lies between two `\n` (a trailing `\r`
 * dropped) and matches when `regex.test(line)` does. Most lines match
 * nothing, so where the answers are the same ({@link canScanWholeText}) the
 * regex runs over the whole text and only lines with a match are cut out
 * and tested; other patterns run line by line.
 *
 * @module
 */

/** Gets each matching line (1-based number, no line break); returns false to stop. */
type LineVisitor = (lineNumber: number, line: string) => boolean;

/** Told how many lines were passed since last told; may throw (an abort). */
type LineTicker = (lines: number) => void;

export interface LineMatcher {
  readonly isWholeText: boolean;
  /** Returns false when the visitor stopped the search. */
  forEachMatch(text: string, visit: LineVisitor, tick: LineTicker): boolean;
}

const linesPerTick = 1024;

/**
 * Conservative: false for anything that could match `\n` or `\r` (negated
 * class, `\s`, `\W`, `\D`, code point escapes, ranges from a control
 * character, `s` flag), lookaround (it sees past the line), backreferences
 * and `v`-mode sets (not analysed).
 */
export function canScanWholeText(source: string, flags: string): boolean {
  if (flags.includes("s") || flags.includes("v")) return false;
  const n = source.length;
  let i = 0;
  while (i < n) {
    const ch = source.charCodeAt(i);
    if (isLineBreak(ch)) return false;
    if (ch === 0x5c /* \ */) {
      if (!isSafeEscape(source, i)) return false;
      i += 2;
    } else if (ch === 0x5b /* [ */) {
      const end = safeClassEnd(source, i);
      if (end === -1) return false;
      i = end + 1;
    } else if (ch === 0x28 /* ( */ && source.charCodeAt(i + 1) === 0x3f /* ? */) {
      const next = source[i + 2];
      if (next === ":") i += 3;
      else if (next === "<" && source[i + 3] !== "=" && source[i + 3] !== "!") i += 3;
      else return false;
    } else {
      i += 1;
    }
  }
  return true;
}

function isLineBreak(code: number): boolean {
  return code === 0x0a || code === 0x0d || code === 0x2028 || code === 0x2029;
}

/** May match a line break, name a code point, or refer back: not analysed. */
const unsafeEscapes = new Set(["s", "W", "D", "n", "r", "x", "u", "c", "p", "P", "k", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);

function isSafeEscape(source: string, at: number): boolean {
  const next = source[at + 1];
  if (next === undefined) return false;
  if (isLineBreak(next.charCodeAt(0))) return false;
  return !unsafeEscapes.has(next);
}

/** Index of the class's closing `]`, or -1 when the class could match a line break or does not close. */
function safeClassEnd(source: string, at: number): number {
  let i = at + 1;
  if (source[i] === "^") return -1;
  let previous: "none" | "char" | "escape" = "none";
  let previousCode = 0;
  while (i < source.length) {
    const ch = source.charCodeAt(i);
    if (ch === 0x5d /* ] */) return i;
    if (isLineBreak(ch)) return -1;
    if (ch === 0x5c /* \ */) {
      if (!isSafeEscape(source, i)) return -1;
      previous = "escape";
      i += 2;
    } else if (ch === 0x2d /* - */ && previous !== "none" && i + 1 < source.length && source[i + 1] !== "]") {
      // A range: its low end decides whether \n (10) or \r (13) can fall inside.
      if (previous === "escape" || previousCode <= 0x0d) return -1;
      i += 1;
      if (source.charCodeAt(i) === 0x5c) {
        if (!isSafeEscape(source, i)) return -1;
        i += 2;
      } else {
        if (isLineBreak(source.charCodeAt(i))) return -1;
        i += 1;
      }
      previous = "none";
    } else {
      previous = "char";
      previousCode = ch;
      i += 1;
    }
  }
  return -1;
}

/** `g` to resume at a line, `m` so `^` and `$` hold at every line break. */
function scanFlags(flags: string): string {
  let out = `${flags.replace(/[gy]/g, "")}g`;
  if (!out.includes("m")) out += "m";
  return out;
}

/** `g` and `y` flags of `regex` are ignored. */
export function createLineMatcher(regex: RegExp): LineMatcher {
  const test = regex.global || regex.sticky ? new RegExp(regex.source, regex.flags.replace(/[gy]/g, "")) : regex;
  if (!canScanWholeText(regex.source, test.flags)) {
    return { isWholeText: false, forEachMatch: (text, visit, tick) => forEachMatchingLine(test, text, visit, tick) };
  }
  const scan = new RegExp(regex.source, scanFlags(test.flags));
  return { isWholeText: true, forEachMatch: (text, visit, tick) => scanWholeText(scan, test, text, visit, tick) };
}

/** The reference rule: split at `\n`, drop a trailing `\r`, test each line. */
export function forEachMatchingLine(regex: RegExp, text: string, visit: LineVisitor, tick: LineTicker): boolean {
  let start = 0;
  let lineNumber = 0;
  let sinceTick = 0;
  for (;;) {
    const end = text.indexOf("\n", start);
    lineNumber += 1;
    if (++sinceTick === linesPerTick) {
      tick(sinceTick);
      sinceTick = 0;
    }
    let line = end === -1 ? text.slice(start) : text.slice(start, end);
    if (line.endsWith("\r")) line = line.slice(0, -1);
    if (regex.test(line) && !visit(lineNumber, line)) {
      tick(sinceTick);
      return false;
    }
    if (end === -1) break;
    start = end + 1;
  }
  tick(sinceTick);
  return true;
}

function scanWholeText(scan: RegExp, test: RegExp, text: string, visit: LineVisitor, tick: LineTicker): boolean {
  let lineStart = 0;
  let lineNumber = 1;
  let ticked = 1;
  scan.lastIndex = 0;
  for (;;) {
    const found = scan.exec(text);
    if (found === null) break;
    const at = found.index;
    let lineEnd = text.indexOf("\n", lineStart);
    while (lineEnd !== -1 && lineEnd < at) {
      lineNumber += 1;
      lineStart = lineEnd + 1;
      lineEnd = text.indexOf("\n", lineStart);
    }
    if (lineNumber - ticked >= linesPerTick) {
      tick(lineNumber - ticked);
      ticked = lineNumber;
    }
    let line = lineEnd === -1 ? text.slice(lineStart) : text.slice(lineStart, lineEnd);
    if (line.endsWith("\r")) line = line.slice(0, -1);
    // The scan may find a match the line alone lacks; the line's own test decides.
    if (test.test(line) && !visit(lineNumber, line)) {
      tick(lineNumber - ticked + 1);
      return false;
    }
    if (lineEnd === -1) {
      tick(lineNumber - ticked + 1);
      return true;
    }
    lineStart = lineEnd + 1;
    lineNumber += 1;
    scan.lastIndex = lineStart;
  }
  // Lines after the last match are not ticked: no check could have run in between.
  tick(lineNumber - ticked + 1);
  return true;
}

const identityEscapes = new Set("^$\\.*+?()[]{}|/-".split(""));
const classEscapes = new Set("wWdDsSbB".split(""));

/** Index after the quantifier at `at`, `at` when there is none, -1 for a `{` that is not one. */
function skipQuantifier(source: string, at: number): number {
  const ch = source[at];
  let end: number;
  if (ch === "*" || ch === "+" || ch === "?") end = at + 1;
  else if (ch === "{") {
    const counted = /^\{\d+(,\d*)?\}/.exec(source.slice(at));
    if (counted === null) return -1;
    end = at + counted[0].length;
  } else return at;
  return source[end] === "?" ? end + 1 : end;
}

/**
 * ASCII runs every matching line must contain (top-level literals not made
 * optional), so a file's bytes can be searched before decoding. Conservative:
 * a top-level `|` gives none, with `i` only letterless runs are kept, and the
 * scan stops at the first construct it does not analyse.
 */
export function requiredLiterals(source: string, flags: string): string[] {
  const ignoreCase = flags.includes("i");
  const isV = flags.includes("v");
  const runs: string[] = [];
  let run = "";
  const endRun = (): void => {
    if (run !== "" && (!ignoreCase || !/[a-z]/i.test(run))) runs.push(run);
    run = "";
  };
  const skipClass = (at: number): number => {
    if (isV) return -1;
    let i = at + 1;
    for (; i < source.length && source[i] !== "]"; i++) if (source[i] === "\\") i++;
    return i < source.length ? i + 1 : -1;
  };
  const n = source.length;
  // A top-level `|` anywhere makes every run optional.
  let depth = 0;
  for (let j = 0; j < n; j++) {
    const c = source[j];
    if (c === "\\") j++;
    else if (c === "[") {
      const end = skipClass(j);
      if (end === -1) return [];
      j = end - 1;
    } else if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "|" && depth === 0) return [];
  }
  let i = 0;
  while (i < n) {
    const ch = source[i]!;
    let atomEnd = -1;
    let literal: string | undefined;
    if (ch === "\\") {
      const next = source[i + 1];
      if (next === undefined) break;
      if (identityEscapes.has(next)) literal = next;
      else if (classEscapes.has(next)) atomEnd = i + 2;
      else break;
    } else if (ch === "|") {
      return [];
    } else if (ch === "(") {
      let depth = 0;
      let j = i;
      for (; j < n; j++) {
        const c = source[j];
        if (c === "\\") j++;
        else if (c === "[") {
          const end = skipClass(j);
          if (end === -1) break;
          j = end - 1;
        } else if (c === "(") depth++;
        else if (c === ")" && --depth === 0) break;
      }
      if (j >= n || source[j] !== ")") break;
      atomEnd = j + 1;
    } else if (ch === "[") {
      atomEnd = skipClass(i);
      if (atomEnd === -1) break;
    } else if (ch === "." || ch === "^" || ch === "$") {
      atomEnd = i + 1;
    } else if ("*+?{}])".includes(ch)) {
      break;
    } else {
      literal = ch;
    }
    if (literal === undefined) {
      endRun();
      i = skipQuantifier(source, atomEnd);
      if (i === -1) break;
      continue;
    }
    const code = literal.charCodeAt(0);
    if (code >= 0x80 || code < 0x20) break;
    const after = i + (ch === "\\" ? 2 : 1);
    const next = skipQuantifier(source, after);
    if (next === -1) break;
    if (next === after) {
      run += literal;
    } else if (source[after] === "+") {
      run += literal;
      endRun();
    } else {
      endRun();
    }
    i = next;
  }
  endRun();
  return runs;
}
