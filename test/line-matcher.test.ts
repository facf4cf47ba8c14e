import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { canScanWholeText, createLineMatcher, forEachMatchingLine, requiredLiterals } from "./support/internals.js";

type Hit = [number, string];

function collect(run: (visit: (n: number, line: string) => boolean) => boolean, limit = Infinity): { hits: Hit[]; isComplete: boolean } {
  const hits: Hit[] = [];
  const isComplete = run((n, line) => {
    hits.push([n, line]);
    return hits.length < limit;
  });
  return { hits, isComplete };
}

const noTick = (): void => {};

/** The matcher's answer and the line-by-line reference's, for one pattern, flags and text. */
function both(source: string, flags: string, text: string, limit = Infinity) {
  const regex = new RegExp(source, flags);
  const matcher = createLineMatcher(regex);
  return {
    isWholeText: matcher.isWholeText,
    actual: collect((visit) => matcher.forEachMatch(text, visit, noTick), limit),
    expected: collect((visit) => forEachMatchingLine(new RegExp(source, flags.replace(/[gy]/g, "")), text, visit, noTick), limit),
  };
}

/** Pieces of patterns: literals, classes, anchors, boundaries, lookarounds, escapes that can match a line break. */
const safeAtoms = ["a", "b", "ab", "x", " ", ".", "\\w", "\\d", "\\S", "\\b", "\\B", "^", "$", "[ab]", "[a-c]", "[ -~]", "é"];
const unsafeAtoms = [
  "\\W",
  "\\s",
  "[^a]",
  "[\\n]",
  "\\n",
  "\\r",
  "[\\s\\S]",
  "(?=b)",
  "(?!a)",
  "(?<=a)",
  "(?<!b)",
  "(?![\\s\\S])",
  "(?<![\\s\\S])",
  "(?!\\s)",
  "(?<!\\W)",
  "\\x0a",
  "\\u2028",
  "[\\0-~]",
];
const atom = fc.oneof({ arbitrary: fc.constantFrom(...safeAtoms), weight: 12 }, { arbitrary: fc.constantFrom(...unsafeAtoms), weight: 1 });
const pattern = fc
  .array(fc.tuple(atom, fc.constantFrom("", "", "", "*", "+", "?", "{2}", "*?")), { minLength: 1, maxLength: 5 })
  .chain((parts) =>
    fc.constantFrom(
      parts.map(([atom, q]) => (q === "" || /[\^$]|\\b|\\B|\(\?/.test(atom) ? atom : `(?:${atom})${q}`)).join(""),
      parts.map(([atom]) => atom).join("|"),
      `(${parts.map(([atom]) => atom).join("")})`,
    ),
  );
const flags = fc
  .oneof({ arbitrary: fc.subarray(["i", "m", "u", "g", "y"]), weight: 3 }, { arbitrary: fc.subarray(["i", "m", "s", "u", "g", "y"]), weight: 1 })
  .map((list) => list.join(""));
const text = fc
  .array(fc.constantFrom("a", "b", "x", " ", "\n", "\r\n", "\r", "\u2028", "ab", "\n\n", "é", "_"), { maxLength: 40 })
  .map((parts) => parts.join(""));

describe("line matcher", () => {
  it("finds the same lines as matching line by line, for random patterns, flags and texts", () => {
    let wholeText = 0;
    fc.assert(
      fc.property(pattern, flags, text, fc.integer({ min: 1, max: 6 }), (source, flagSet, body, limit) => {
        const { isWholeText, actual, expected } = both(source, flagSet, body, limit);
        if (isWholeText) wholeText += 1;
        expect(actual).toEqual(expected);
      }),
      { numRuns: Number(process.env.LINE_MATCHER_RUNS ?? 4000) },
    );
    // The property means something only if many cases took the whole-text path.
    expect(wholeText).toBeGreaterThan(1000);
  });

  it("scans the whole text for ordinary patterns, and goes line by line for what could see past a line", () => {
    for (const source of ["needle", "^export ", "foo$", "\\bparse[A-Z]\\w+\\d{2}\\(", "a|b", "(?:x)+", "(?<name>ab)", "[a-z_]+"]) {
      expect(canScanWholeText(source, "")).toBe(true);
    }
    for (const source of ["a\\sb", "[^x]", "\\W", "\\D", "a(?=b)", "(?<!a)b", "\\n", "\\x0a", "\\1", "[\\0-z]", "[\t-z]", "\\cJ", "\\p{L}"]) {
      expect(canScanWholeText(source, "u")).toBe(false);
    }
    expect(canScanWholeText("a.b", "s")).toBe(false);
    expect(canScanWholeText("ab", "v")).toBe(false);
  });

  it("reports line numbers and strips \\r of CRLF lines, on both paths", () => {
    const body = "one\r\ntwo needle\r\nthree\nneedle four\n\nneedle";
    for (const source of ["needle", "needle(?!x)"]) {
      const { actual, expected } = both(source, "", body);
      expect(actual.hits).toEqual([
        [2, "two needle"],
        [4, "needle four"],
        [6, "needle"],
      ]);
      expect(expected.hits).toEqual(actual.hits);
    }
    // `$` holds at the end of a CRLF line and on the empty last line after a final \n.
    expect(both("x$", "", "ax\r\nb\n").actual.hits).toEqual([[1, "ax"]]);
    expect(both("^$", "", "a\n").actual.hits).toEqual([[2, ""]]);
  });

  it("stops when the visitor says so, and ticks the lines it passed", () => {
    const body = Array.from({ length: 5000 }, (_, i) => (i % 1000 === 999 ? "hit" : "miss")).join("\n");
    const matcher = createLineMatcher(/hit/);
    const ticks: number[] = [];
    const hits: number[] = [];
    expect(
      matcher.forEachMatch(
        body,
        (n) => {
          hits.push(n);
          return hits.length < 2;
        },
        (lines) => ticks.push(lines),
      ),
    ).toBe(false);
    expect(hits).toEqual([1000, 2000]);
    expect(ticks.reduce((a, b) => a + b, 0)).toBe(2000);
    const lineByLine: number[] = [];
    forEachMatchingLine(
      /hit/,
      body,
      () => true,
      (lines) => lineByLine.push(lines),
    );
    expect(lineByLine.reduce((a, b) => a + b, 0)).toBe(5000);
    expect(Math.max(...lineByLine)).toBeLessThanOrEqual(1024);
  });

  it("names only literals that every matching text holds, for random patterns, flags and texts", () => {
    let named = 0;
    const literalPattern = fc
      .array(
        fc.constantFrom(
          "a",
          "b",
          "ab",
          "x(",
          "\\(",
          "\\.",
          ".",
          "[ab]",
          "(a|b)",
          "\\w",
          "b*",
          "a+",
          "a?",
          "x{2}",
          "a{1,2}?",
          "^",
          "$",
          "|",
          "\\x61",
          "(?:ab)+",
        ),
        {
          minLength: 1,
          maxLength: 6,
        },
      )
      .map((parts) => parts.join(""));
    fc.assert(
      fc.property(literalPattern, fc.subarray(["i", "m", "u"]), text, (source, flagList, body) => {
        const flagSet = flagList.join("");
        let regex: RegExp;
        try {
          regex = new RegExp(source, flagSet);
        } catch {
          return;
        }
        const literals = requiredLiterals(source, flagSet);
        if (literals.length > 0) named += 1;
        let matched = false;
        forEachMatchingLine(
          regex,
          body,
          () => {
            matched = true;
            return false;
          },
          noTick,
        );
        if (matched) for (const literal of literals) expect(body).toContain(literal);
      }),
      { numRuns: Number(process.env.LINE_MATCHER_RUNS ?? 4000) },
    );
    expect(named).toBeGreaterThan(1000);
    expect(requiredLiterals("parse[A-Z]\\w+99\\(", "")).toEqual(["parse", "99("]);
    expect(requiredLiterals("ab*cd", "")).toEqual(["a", "cd"]);
    expect(requiredLiterals("a|b", "")).toEqual([]);
    expect(requiredLiterals("Needle 9", "i")).toEqual([]);
  });
});
