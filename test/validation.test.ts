import { inspect } from "node:util";

import { Type } from "typebox";
import { describe, expect, it } from "vitest";

import { expectBoundedErrorLines } from "./support/error-lines.js";
import { validateWithPi, validateWithToolpool } from "./support/validation-oracle.js";

const plain = {
  type: "object",
  properties: {
    value: { type: "string" },
    count: { type: "integer", minimum: 0 },
    ratio: { type: "number", maximum: 1 },
    flag: { type: "boolean" },
    tags: { type: "array", items: { type: "string" } },
    nested: { type: "object", properties: { deep: { type: "integer" } }, required: ["deep"] },
    either: { anyOf: [{ type: "string" }, { type: "number" }] },
  },
  required: ["value"],
  additionalProperties: false,
};
const twoRequired = { type: "object", properties: { a: { type: "string" }, b: { type: "string" } }, required: ["a", "b"] };
const typebox = Type.Object({
  value: Type.String(),
  count: Type.Optional(Type.Integer({ minimum: 0 })),
  ratio: Type.Optional(Type.Number({ maximum: 1 })),
  mode: Type.Optional(Type.Union([Type.Literal("a"), Type.Literal("b")])),
  email: Type.Optional(Type.String({ format: "email" })),
});

/** The direct probe: one input per rule, through pi-ai 0.73.1's `validateToolArguments` and toolpool's. */
const probe: [string, object, unknown][] = [
  ["one required property missing", plain, {}],
  ["two required properties missing", twoRequired, {}],
  ["an extra key under additionalProperties: false", plain, { value: "x", b: 1 }],
  ["null for a string (TypeBox schema)", typebox, { value: null }],
  ['"3.5" for an integer (TypeBox schema)', typebox, { value: "x", count: "3.5" }],
  ["null for a string (plain schema)", plain, { value: null }],
  ['"3.5" for an integer (plain schema)', plain, { value: "x", count: "3.5" }],
  ['"5" for an integer', plain, { value: "x", count: "5" }],
  ['"true" for a boolean', plain, { value: "x", flag: "true" }],
  ["0 for a boolean", plain, { value: "x", flag: 0 }],
  ["a number for a string", plain, { value: 7 }],
  ["a string for an array", plain, { value: "x", tags: "notalist" }],
  ["array items coerced", plain, { value: "x", tags: [1, true, null] }],
  ["below a minimum", plain, { value: "x", count: -1 }],
  ["a string that is no email (TypeBox format)", typebox, { value: "x", email: "nope" }],
  ["no member of a literal union", typebox, { value: "x", mode: "c" }],
  ["valid as sent (TypeBox schema)", typebox, { value: "x", count: 2, ratio: 0.5, mode: "b", email: "a@b.co" }],
  ["null arguments", plain, null],
  ["a nested property coerced", plain, { value: "x", nested: { deep: "5" } }],
  ["a nested required property missing", plain, { value: "x", nested: {} }],
  ['"0.5" for a bounded number (TypeBox schema)', typebox, { value: "x", ratio: "0.5" }],
  ["a valid number under a string-first anyOf", plain, { value: "x", either: 5 }],
  // With two properties or more, TypeBox's Convert turns the enum's 0 into "0" by the additional
  // properties' schema: pi rejects arguments that pass a plain check.
  [
    "an Enum property beside additional properties given by a schema (TypeBox schema)",
    Type.Object({ count: Type.Number(), mode: Type.Enum([0, 1]) }, { additionalProperties: Type.String() }),
    { count: 1, mode: 0 },
  ],
];

describe("validateToolArguments against pi-ai 0.73.1", () => {
  it("holds 23 probe inputs", () => expect(probe).toHaveLength(23));

  it.each(probe)("%s: same validated arguments or the same full text", (_name, schema, args) => {
    expect(validateWithToolpool("probe", schema, args)).toEqual(validateWithPi("probe", schema, args));
  });

  it.each(probe)("%s: the lean path (unobserved worker call) gives the same outcome", (_name, schema, args) => {
    expect(validateWithToolpool("probe", schema, args, true)).toEqual(validateWithPi("probe", schema, args));
  });

  it("gives pi's texts for the inputs where toolpool once differed", () => {
    expect(validateWithToolpool("t", plain, {})).toEqual({
      kind: "error",
      text: 'Validation failed for tool "t":\n  - value: must have required properties value\n\nReceived arguments:\n{}',
    });
    expect(validateWithToolpool("t", twoRequired, {})).toEqual({
      kind: "error",
      text: 'Validation failed for tool "t":\n  - a: must have required properties a, b\n\nReceived arguments:\n{}',
    });
    expect(validateWithToolpool("t", plain, { value: "x", b: 1 })).toEqual({
      kind: "error",
      text:
        'Validation failed for tool "t":\n  - b: schema is false\n  - root: must not have additional properties\n\n' +
        'Received arguments:\n{\n  "value": "x",\n  "b": 1\n}',
    });
    expect(validateWithToolpool("t", typebox, { value: null })).toEqual({ kind: "valid", args: "{ value: 'null' }" });
    expect(validateWithToolpool("t", typebox, { value: "x", count: "3.5" })).toEqual({ kind: "valid", args: "{ value: 'x', count: 3 }" });
  });

  it.each([
    ["a property name TypeBox's Convert reads as a pattern", Type.Object({ "x*": Type.String() }), { "x*": "a", xx: 1 }],
    ["a property named like an inherited one", { type: "object", properties: { constructor: { type: "string" } } }, {}],
    ["a valid value under a union whose first member coerces it", Type.Object({ n: Type.Union([Type.String(), Type.Number()]) }), { n: 5 }],
  ] as [string, object, unknown][])("%s: valid arguments take pi's whole pipeline, lean path included", (_name, schema, args) => {
    const pi = validateWithPi("t", schema, args);
    expect(pi).not.toEqual({ kind: "valid", args: inspect(args, { depth: Infinity, breakLength: Infinity }) });
    expect(validateWithToolpool("t", schema, args)).toEqual(pi);
    expect(validateWithToolpool("t", schema, args, true)).toEqual(pi);
  });

  it("never writes into the caller's arguments", () => {
    const args = { value: 7, tags: [1], nested: { deep: "5" } };
    validateWithToolpool("t", plain, args);
    expect(args).toEqual({ value: 7, tags: [1], nested: { deep: "5" } });
  });
});

describe("validateToolArguments against pi-ai 0.73.1: the error lines", () => {
  const list = { type: "object", properties: { counts: { type: "array", items: { type: "integer" } } } };

  it("are pi's byte for byte up to 4 KiB", () => {
    const args = { counts: Array.from({ length: 30 }, (_, i) => `n${i}`) };
    const pi = validateWithPi("t", list, args);
    expect(pi.kind).toBe("error");
    expect(validateWithToolpool("t", list, args)).toEqual(pi);
  });

  it("stop at 4 KiB, then count the rest, as under pi 1.6 (unknown keys of 1,000 characters)", () => {
    const closed = { type: "object", properties: { path: { type: "string" } }, additionalProperties: false };
    for (const keys of [10, 2_000]) {
      const args = Object.fromEntries(Array.from({ length: keys }, (_, i) => [`${i}:${"k".repeat(1_000)}`, 0]));
      const pi = validateWithPi("t", closed, args);
      const toolpool = validateWithToolpool("t", closed, args);
      if (pi.kind !== "error" || toolpool.kind !== "error") throw new Error("expected both to fail");
      const { shown, more } = expectBoundedErrorLines(pi.text, toolpool.text);
      expect(shown).toBe(4);
      expect(more).toBeGreaterThan(0);
      expect(Buffer.byteLength(toolpool.text)).toBeLessThan(9_000);
    }
  });
});

describe("formats the application registers on its typebox", () => {
  it("are checked as pi-ai checks them", async () => {
    const { Format } = await import("typebox/format");
    // A name no other test uses: the registry is the process's.
    Format.Set("toolpool-test-even-digits", (value) => /^[02468]+$/.test(value));
    const schema = { type: "object", properties: { n: { type: "string", format: "toolpool-test-even-digits" } }, required: ["n"] };
    for (const args of [{ n: "2468" }, { n: "13" }]) {
      expect(validateWithToolpool("even", schema, args)).toEqual(validateWithPi("even", schema, args));
    }
    expect(validateWithToolpool("even", schema, { n: "13" })).toMatchObject({ kind: "error" });
  });
});
