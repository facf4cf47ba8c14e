/**
 * Finding the lines of a text that a regular expression matches, one line at
 * a time: `grep`'s matching rule. A line is what lies between two `\n`, a
 * trailing `\r` removed, and it matches when `regex.test(line)` says so.
 *
 * Splitting a whole file into lines and testing each one costs a string per
 * line; most lines of most files match nothing. So, where it gives the same
 * answers, the regular expression runs over the whole text instead (with the
 * `g` and `m` flags), and only the lines where it finds a match are cut out
 * and tested on their own. That is exact when every match of a line on its
 * own is also a match of the whole text at the same place, which holds when
 * the pattern cannot match a line break and cannot look at what lies
 * outside its line (see {@link canScanWholeText}); any other pattern is
 * matched line by line.
 *
 * Loaded inside a worker thread; imports nothing.
 *
 * @module
 */

/**
 * Receives each matching line in order: its 1-based number and its text
 * (without the line break). Returns false to stop.
 */
type LineVisitor = (lineNumber: number, line: string) => boolean;

/** Told how many lines were passed since it was last told; may throw (an abort) to stop the search. */
type LineTicker = (lines: number) => void;

/** The lines of a text that one regular expression matches. */
export interface LineMatcher {
  /** Whether the whole text is scanned at once (false: line by line). */
  readonly isWholeText: boolean;
  /**
   * Visits the matching lines of `text` in order; returns false when the
   * visitor stopped the search. `tick` hears of the lines passed, at least
   * every few thousand lines searched.
   */
  forEachMatch(text: string, visit: LineVisitor, tick: LineTicker): boolean;
}

/** Lines passed between two ticks in the line-by-line search. */
const linesPerTick = 1024;

/**
 * Whether a pattern, with `flags`, is matched the same over a whole text as
 * line by line (see the module's note). Conservative: no construct that can
 * match `\n` or `\r` (a negated class, `\s`, `\W`, `\D`, an escape naming a
 * code point, a range from a control character, `.` with the `s` flag), no
 * lookaround (it could see past the line), no backreference or `v`-mode set
 * notation (not analysed).
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

/** Escapes that may match a line break, name a code point, or refer back: not analysed. */
const unsafeEscapes = new Set(["s", "W", "D", "n", "r", "x", "u", "c", "p", "P", "k", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);

function isSafeEscape(source: string, at: number): boolean {
  const next = source[at + 1];
  if (next === undefined) return false;
  if (isLineBreak(next.charCodeAt(0))) return false;
  return !unsafeEscapes.has(next);
}

/**
 * The index of the `]` closing the class opened at `at`, or -1 when the class
 * could match a line break (negated, an unsafe escape, a range starting at a
 * control character or at an escape) or does not close.
 */
function safeClassEnd(source: string, at: number): number {
  let i = at + 1;
  if (source[i] === "^") return -1;
  /** What came last: nothing (or a whole range), a literal character, an escape. */
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

/** The flags of the whole-text scan: `g` to resume at a line, `m` so that `^` and `$` hold at every line break. */
function scanFlags(flags: string): string {
  let out = `${flags.replace(/[gy]/g, "")}g`;
  if (!out.includes("m")) out += "m";
  return out;
}

/**
 * A matcher for `regex` (whose `g` and `y` flags, if any, are ignored): whole
 * text where that is exact, line by line otherwise.
 */
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
    // Move to the line holding the match.
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
    // The scan may find a match that the line alone does not have (one
    // that starts here and runs on, say); the line's own test decides.
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
  // The lines after the last match are not counted: one scan found no
  // match there, and nothing could have been checked in between.
  tick(lineNumber - ticked + 1);
  return true;
}

/** Characters that stand for themselves after a backslash. */
const identityEscapes = new Set("^$\\.*+?()[]{}|/-".split(""));
/** Two-character escapes of a class or an assertion: no literal. */
const classEscapes = new Set("wWdDsSbB".split(""));

/**
 * The index after the quantifier at `at` (`*`, `+`, `?`, `{n}`, `{n,}`,
 * `{n,m}`, each perhaps lazy), `at` itself when there is none, or -1 for a
 * `{` that is not a quantifier.
 */
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
 * ASCII strings that every line the pattern matches must contain: the runs
 * of literal characters of its top level (not inside a group or class, not
 * made optional by a quantifier). A text without one of them has no
 * matching line, whatever the rest of the pattern says, so a file's bytes
 * can be searched for them before it is decoded. Conservative: a top-level
 * `|` gives none; with the `i` flag only runs without letters are kept; the
 * scan stops at the first construct it does not analyse, keeping what it
 * found before.
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
  /** Index after the class opened at `at`, or -1. */
  const skipClass = (at: number): number => {
    if (isV) return -1;
    let i = at + 1;
    for (; i < source.length && source[i] !== "]"; i++) if (source[i] === "\\") i++;
    return i < source.length ? i + 1 : -1;
  };
  const n = source.length;
  // A top-level alternative anywhere, even past what the scan below reaches, makes every run optional.
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
    // A zero-width or non-literal atom ends the run; a quantifier after it is skipped.
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
      // At least once: required, but what follows is not next to it.
      run += literal;
      endRun();
    } else {
      // Perhaps absent: not required, and it splits the run.
      endRun();
    }
    i = next;
  }
  endRun();
  return runs;
}
