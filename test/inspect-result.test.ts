import { describe, expect, it } from "vitest";

import { inspectResult, transferThresholdBytes } from "./support/internals.js";

describe("inspectResult", () => {
  it("bounds the size of strings cheaply, and measures it exactly only near the limit", () => {
    const result = { content: [{ type: "text", text: "héllo" }], details: { raw: new Uint8Array(10) } };
    // Under the limit by the upper bound (3 bytes a UTF-16 unit): no exact count needed.
    expect(inspectResult(result, 100)).toEqual({
      uncloneable: undefined,
      bytes: 3 * (4 + 5) + 10,
      isTooLarge: false,
      transferables: [],
      longStrings: 0,
    });
    // Near it: exact UTF-8 bytes ("é" takes two).
    expect(inspectResult(result, 20)).toMatchObject({ bytes: 4 + 6 + 10, isTooLarge: false });
    expect(inspectResult(result, 19)).toMatchObject({ bytes: 20, isTooLarge: true });
  });

  it("names the path of the first value structured clone would reject", () => {
    expect(inspectResult({ details: { list: [1, { fn: () => 1 }] } }).uncloneable).toBe("a function at result.details.list[1].fn");
    expect(inspectResult({ details: new Map([["k", Symbol("s")]]) }).uncloneable).toBe("a symbol at result.details.get(k)");
    expect(inspectResult({ details: { pending: Promise.resolve() } }).uncloneable).toBe("a Promise at result.details.pending");
    expect(inspectResult({ details: new Set([new WeakMap()]) }).uncloneable).toBe("a WeakMap at result.details.<entry>");
  });

  it("survives cycles, which structured clone handles", () => {
    const details: Record<string, unknown> = { name: "loop" };
    details.self = details;
    expect(inspectResult({ details }, 4)).toMatchObject({ uncloneable: undefined, bytes: 4 });
  });

  it("moves large buffers once each, and never a view of part of a buffer", () => {
    const whole = new Uint8Array(transferThresholdBytes);
    const shared = new ArrayBuffer(transferThresholdBytes * 2);
    const part = new Uint8Array(shared, 0, transferThresholdBytes);
    const small = new Uint8Array(16);
    const inspection = inspectResult({ details: { whole, again: whole, part, small } }, Infinity);
    expect(inspection.transferables).toEqual([whole.buffer]);
    expect(inspection.bytes).toBe(transferThresholdBytes * 3 + 16);
  });
});
