import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { formatReceivedArguments, maxReceivedArgumentsBytes, truncationMark } from "./support/internals.js";

const pi = (value: unknown): string => `${JSON.stringify(value, null, 2)}`;

describe("formatReceivedArguments", () => {
  it("is JSON.stringify(value, null, 2) byte for byte up to 4 KiB", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const expected = pi(value);
        fc.pre(Buffer.byteLength(expected) <= maxReceivedArgumentsBytes);
        expect(formatReceivedArguments(value)).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it("cuts a longer text at 4 KiB and says so, for any value", () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        let expected: string;
        try {
          expected = pi(value);
        } catch (error) {
          expect(() => formatReceivedArguments(value)).toThrow((error as Error).message);
          return;
        }
        const shown = formatReceivedArguments(value, 64);
        if (Buffer.byteLength(expected) <= 64) expect(shown).toBe(expected);
        else {
          expect(shown.endsWith(truncationMark)).toBe(true);
          const cut = shown.slice(0, -truncationMark.length);
          expect(expected.startsWith(cut)).toBe(true);
          expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(64);
          expect(Buffer.byteLength(cut)).toBeGreaterThan(60);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("treats undefined, functions, toJSON and holes as JSON.stringify does", () => {
    const values = [
      undefined,
      { a: undefined, b: () => 1 },
      [undefined, () => 1, Symbol("s")],
      { toJSON: () => "x" },
      new Date(0),
      // biome-ignore lint/suspicious/noSparseArray: a hole is one of the values under test
      [1, , 3],
      { n: NaN, i: -Infinity, z: -0 },
      new Map([[1, 2]]),
    ];
    for (const value of values) expect(formatReceivedArguments(value)).toBe(pi(value));
  });

  it("stays small and fast for arguments nested thousands deep or megabytes long", () => {
    let deep: unknown = "leaf";
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    const shown = formatReceivedArguments(deep);
    expect(Buffer.byteLength(shown)).toBeLessThanOrEqual(maxReceivedArgumentsBytes + Buffer.byteLength(truncationMark));
    expect(shown.endsWith(truncationMark)).toBe(true);
    const long = formatReceivedArguments({ text: "é".repeat(1 << 20) });
    expect(long.startsWith('{\n  "text": "éé')).toBe(true);
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(maxReceivedArgumentsBytes + Buffer.byteLength(truncationMark));
  });
});
