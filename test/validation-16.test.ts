import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

import { Type } from "typebox";
import { describe, expect, it } from "vitest";

import { supportsPi16 } from "toolpool";
import {
  isIdentityOnValid16,
  isPlainData,
  maxReceivedArgumentsBytes,
  truncationMark,
  validateToolArguments16,
  formatValidationPath16,
} from "./support/built.js";
import { validateWithPi } from "./support/validation-oracle.js";
import { compileArgumentValidator16, validateWithPi16, validateWithToolpool16 } from "./support/validation-oracle-16.js";
import { expectBoundedErrorLines } from "./support/error-lines.js";
import { printValue } from "./support/validation-outcome.js";

/** A suite's name, with a warning when it is skipped: pi 1.6 does not run on this Node. */
function loudSkip(name: string): string {
  if (!supportsPi16()) console.warn(`skipped "${name}": pi 1.6 needs Node >= 22.19, and this is Node ${process.versions.node}`);
  return name;
}

const tool = {
  type: "object",
  properties: {
    path: { type: "string" },
    limit: { type: "integer", minimum: 1 },
    paths: { type: "array", items: { type: "string" } },
    flags: { type: "array", items: { type: "boolean" } },
    edits: {
      type: "array",
      items: {
        type: "object",
        properties: { oldText: { type: "string" }, newText: { type: "string" } },
        required: ["oldText", "newText"],
        additionalProperties: false,
      },
    },
  },
  required: ["path"],
  additionalProperties: false,
};

/** pi-ai 1.6.0's outcome and toolpool's for one input, side by side. */
function both(schema: object, args: unknown, argumentsError?: unknown) {
  return { pi: validateWithPi16("t", schema, args, argumentsError), toolpool: validateWithToolpool16("t", schema, args, argumentsError) };
}

function expectPisOutcome(schema: object, args: unknown, argumentsError?: unknown) {
  const { pi, toolpool } = both(schema, args, argumentsError);
  expect(toolpool).toEqual(pi);
  return pi;
}

describe.skipIf(!supportsPi16())(loudSkip("validateToolArguments16 (pi 1.6) against pi-ai 1.6.0: argumentsError"), () => {
  it("fails a call whose arguments could not be parsed with pi's text, before anything else", () => {
    const outcome = expectPisOutcome(tool, { path: "x" }, "Unexpected end of JSON input");
    expect(outcome).toEqual({ kind: "error", text: 'Invalid arguments for tool "t": Unexpected end of JSON input' });
  });

  it("comes before the schema is compiled: a schema pi-schema cannot compile still gives the argumentsError text", () => {
    const broken = { type: "object", properties: { a: 5 } };
    expect(expectPisOutcome(broken, {}, "bad JSON")).toEqual({ kind: "error", text: 'Invalid arguments for tool "t": bad JSON' });
  });

  it.each([
    ["an empty string", ""],
    ["zero", 0],
    ["null", null],
    ["false", false],
  ])("a falsy argumentsError (%s) validates the arguments as usual", (_name, argumentsError) => {
    expect(expectPisOutcome(tool, { path: "x", limit: "2" }, argumentsError)).toEqual({ kind: "valid", args: "{ path: 'x', limit: 2 }" });
  });

  it("prints an argumentsError that is not a string as a template literal does", () => {
    expect(expectPisOutcome(tool, {}, { reason: "x" })).toEqual({ kind: "error", text: 'Invalid arguments for tool "t": [object Object]' });
  });
});

describe.skipIf(!supportsPi16())(loudSkip("validateToolArguments16 (pi 1.6) against pi-ai 1.6.0: coercion that pi 0.73.1 does not do"), () => {
  it.each([
    ["a single value where an array is expected", { path: "x", paths: "a.txt" }, "{ path: 'x', paths: [ 'a.txt' ] }"],
    ["a single coercible value where an array is expected", { path: "x", flags: "true" }, "{ path: 'x', flags: [ true ] }"],
    ["null for an optional property (dropped)", { path: "x", limit: null }, "{ path: 'x' }"],
    ["a bigint-like string for an integer", { path: "x", limit: "12n" }, "{ path: 'x', limit: 12 }"],
    ["TRUE for a boolean item", { path: "x", flags: ["TRUE", "false"] }, "{ path: 'x', flags: [ true, false ] }"],
  ])("%s", (_name, args, coerced) => {
    expect(expectPisOutcome(tool, args)).toEqual({ kind: "valid", args: coerced });
    expect(validateWithPi("t", tool, args)).not.toEqual({ kind: "valid", args: coerced });
  });

  it('converts a required null instead of dropping it: "null" for a string, 0 for an integer', () => {
    expect(expectPisOutcome(tool, { path: null })).toEqual({ kind: "valid", args: "{ path: 'null' }" });
    const integerPath = { ...tool, properties: { ...tool.properties, path: { type: "integer" } } };
    expect(expectPisOutcome(integerPath, { path: null })).toEqual({ kind: "valid", args: "{ path: 0 }" });
  });

  it("coerces TypeBox-built schemas the same way", () => {
    const schema = Type.Object({
      ids: Type.Array(Type.Integer()),
      note: Type.Optional(Type.String()),
      mode: Type.Union([Type.Literal("a"), Type.Literal(1)]),
    });
    expect(expectPisOutcome(schema, { ids: "7", note: null, mode: "1" })).toEqual({ kind: "valid", args: "{ ids: [ 7 ], mode: 1 }" });
  });
});

describe.skipIf(!supportsPi16())(loudSkip("validateToolArguments16 (pi 1.6) against pi-ai 1.6.0: formats"), () => {
  const formats = {
    type: "object",
    properties: {
      email: { type: "string", format: "email" },
      uuid: { type: "string", format: "uuid" },
      when: { type: "string", format: "date-time" },
      ip: { type: "string", format: "ipv4" },
      pointer: { type: "string", format: "json-pointer" },
      unknown: { type: "string", format: "not-a-format" },
    },
  };

  it.each([
    [
      "valid values of each format",
      { email: "a@b.co", uuid: "123e4567-e89b-12d3-a456-426614174000", when: "2024-01-02T03:04:05Z", ip: "127.0.0.1", pointer: "/a~1b" },
    ],
    ["an invalid email", { email: "nope" }],
    ["an invalid uuid and date-time", { uuid: "123", when: "yesterday" }],
    ["an invalid IPv4 address and JSON Pointer", { ip: "256.1.1.1", pointer: "a/b" }],
    ["an unknown format, which is an annotation", { unknown: "anything" }],
  ])("%s", (_name, args) => {
    expectPisOutcome(formats, args);
  });

  it("reports a failing format with pi-schema's message", () => {
    expect(expectPisOutcome(formats, { email: "nope" })).toEqual({
      kind: "error",
      text: 'Validation failed for tool "t":\n  - email: expected format email\n\nReceived arguments:\n{\n  "email": "nope"\n}',
    });
  });
});

describe.skipIf(!supportsPi16())(loudSkip("validateToolArguments16 (pi 1.6) against pi-ai 1.6.0: a $ref that names nothing"), () => {
  const dangling = { type: "object", properties: { name: { type: "string" }, extra: { $ref: "#/$defs/Missing" } }, required: ["name"] };

  it("compiles, and accepts arguments that leave its place empty", () => {
    expect(() => compileArgumentValidator16(dangling)).not.toThrow();
    expect(expectPisOutcome(dangling, { name: "x" })).toEqual({ kind: "valid", args: "{ name: 'x' }" });
  });

  it("rejects only a value at its place", () => {
    expect(expectPisOutcome(dangling, { name: "x", extra: 1 })).toEqual({
      kind: "error",
      text: 'Validation failed for tool "t":\n  - extra: unresolved reference #/$defs/Missing\n\nReceived arguments:\n{\n  "name": "x",\n  "extra": 1\n}',
    });
  });

  it("does so in TypeBox's Type.Ref as well", () => {
    const schema = Type.Object({ a: Type.Optional(Type.Ref("Missing")), b: Type.Integer() });
    expectPisOutcome(schema, { b: "3" });
    expectPisOutcome(schema, { a: {}, b: 3 });
  });

  it("follows a $ref that resolves, recursion included", () => {
    const tree = {
      $defs: {
        Tree: {
          type: "object",
          properties: { value: { type: "integer" }, children: { type: "array", items: { $ref: "#/$defs/Tree" } } },
          required: ["value"],
        },
      },
      type: "object",
      properties: { root: { $ref: "#/$defs/Tree" } },
    };
    expectPisOutcome(tree, { root: { value: 1, children: [{ value: 2 }] } });
    expectPisOutcome(tree, { root: { value: "1", children: { value: "2", children: [{ value: "x" }] } } });
  });
});

describe.skipIf(!supportsPi16())(loudSkip("validateToolArguments16 (pi 1.6) against pi-ai 1.6.0: error paths"), () => {
  it.each([
    ["an array item's property", tool, { path: "x", edits: [{ oldText: "a", newText: "b" }, { oldText: 1 }] }],
    [
      "a name holding a slash and a tilde",
      { type: "object", properties: { "a/b": { type: "object", properties: { "c~d": { type: "integer" } } } } },
      { "a/b": { "c~d": "q" } },
    ],
    ["a name that escapes to ~01", { type: "object", properties: { "~1": { type: "integer" } } }, { "~1": "q" }],
    ["a name holding a dot", { type: "object", properties: { "a.b": { type: "integer" } } }, { "a.b": [] }],
    ["the arguments themselves", tool, "not an object"],
    ["a missing required property and an extra one", tool, { extra: 1 }],
  ])("%s", (_name, schema, args) => {
    expect(expectPisOutcome(schema, args).kind).toBe("error");
  });

  it("writes a JSON Pointer as pi's dotted path", () => {
    expect(formatValidationPath16("")).toBe("root");
    expect(formatValidationPath16("/edits/0/oldText")).toBe("edits.0.oldText");
    expect(formatValidationPath16("/a~1b/c~0d")).toBe("a/b.c~d");
    expect(formatValidationPath16("/~01")).toBe("~1");
    expect(formatValidationPath16("/")).toBe("");
  });

  it("shows the unescaped names in the text", () => {
    const outcome = expectPisOutcome(
      { type: "object", properties: { "a/b": { type: "object", properties: { "c~d": { type: "integer" } } } } },
      { "a/b": { "c~d": "q" } },
    );
    expect(outcome).toMatchObject({ kind: "error", text: expect.stringContaining("\n  - a/b.c~d: ") });
  });
});

describe.skipIf(!supportsPi16())(loudSkip("validateToolArguments16 (pi 1.6) against pi-ai 1.6.0: the received-arguments echo"), () => {
  it("is pi's text byte for byte below 4 KiB", () => {
    const args = { path: "x", limit: "many", note: "é".repeat(1000) };
    const { pi, toolpool } = both(tool, args);
    expect(pi.kind).toBe("error");
    expect(toolpool).toEqual(pi);
  });

  it("is cut at 4 KiB, as under pi 0.73.1: pi's text up to there, then the mark", () => {
    const args = { path: "x", limit: "many", note: "y".repeat(10_000) };
    const { pi, toolpool } = both(tool, args);
    if (pi.kind !== "error" || toolpool.kind !== "error") throw new Error("expected both to fail");
    const separator = "\n\nReceived arguments:\n";
    const [head, echo] = pi.text.split(separator) as [string, string];
    expect(Buffer.byteLength(echo)).toBeGreaterThan(maxReceivedArgumentsBytes);
    expect(toolpool.text).toBe(`${head}${separator}${echo.slice(0, maxReceivedArgumentsBytes)}${truncationMark}`);
  });
});

describe.skipIf(!supportsPi16())(loudSkip("validateToolArguments16 (pi 1.6) against pi-ai 1.6.0: the error lines"), () => {
  const closed = { type: "object", properties: { path: { type: "string" } }, additionalProperties: false };

  it("are pi's byte for byte up to 4 KiB", () => {
    const args = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`extra${i}`, i]));
    const { pi, toolpool } = both(closed, args);
    expect(pi.kind).toBe("error");
    expect(toolpool).toEqual(pi);
  });

  it("stop at 4 KiB, then count the rest, however many unknown keys the arguments hold", () => {
    for (const keys of [200, 5_000, 60_000]) {
      const args = Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${i}`, 0]));
      const { pi, toolpool } = both(closed, args);
      if (pi.kind !== "error" || toolpool.kind !== "error") throw new Error("expected both to fail");
      const { shown, more } = expectBoundedErrorLines(pi.text, toolpool.text);
      expect(shown + more).toBe(keys);
      expect(Buffer.byteLength(toolpool.text)).toBeLessThan(9_000);
    }
  });

  it("cut a first line that alone is longer than the bound (a key of 100,000 characters)", () => {
    const schema = { type: "object", additionalProperties: { type: "integer" } };
    const args = { ["k".repeat(100_000)]: "no", other: "no" };
    const { pi, toolpool } = both(schema, args);
    if (pi.kind !== "error" || toolpool.kind !== "error") throw new Error("expected both to fail");
    expect(expectBoundedErrorLines(pi.text, toolpool.text)).toEqual({ shown: 1, more: 1 });
  });
});

describe.skipIf(!supportsPi16())(loudSkip("validateToolArguments16 (pi 1.6) against pi-ai 1.6.0: the check-then-copy path"), () => {
  it("returns a copy of valid arguments, never the caller's object, and never writes into them", () => {
    const args = { path: "x", paths: ["a"], edits: [{ oldText: "a", newText: "b" }] };
    const result = validateToolArguments16("t", tool, args) as typeof args;
    expect(result).toEqual(args);
    expect(result).not.toBe(args);
    expect(result.edits[0]).not.toBe(args.edits[0]);
    const coercible = { path: "x", limit: "2", paths: "a" };
    validateToolArguments16("t", tool, coercible);
    expect(coercible).toEqual({ path: "x", limit: "2", paths: "a" });
  });

  it.each([
    [
      "a valid non-array under `items` without `type`, which pi-schema wraps",
      { type: "object", properties: { list: { items: { type: "string" } } } },
      { list: "a" },
    ],
    [
      "a valid value under a `$ref` that the proof does not follow",
      { type: "object", properties: { list: { $ref: "#/properties/wrap" }, wrap: { items: { type: "integer" } } } },
      { list: 5 },
    ],
    [
      "bytes where an object of declared properties is checked loosely",
      { type: "object", properties: { b: { properties: { "0": { type: "string" } } } } },
      { b: new Uint8Array([5]) },
    ],
    [
      "a RegExp, whose inherited `flags` the coercion reads",
      { type: "object", properties: { re: { type: "object", properties: { flags: { type: "null" } } } } },
      { re: /x/ },
    ],
  ])("leaves to pi's whole pipeline %s", (_name, schema, args) => {
    const pi = expectPisOutcome(schema, args);
    expect(pi).not.toEqual({ kind: "valid", args: printValue(structuredClone(args)) });
  });

  it("is taken only on schemas where coercion provably keeps valid values", () => {
    expect(isIdentityOnValid16(tool)).toBe(true);
    expect(isIdentityOnValid16(Type.Object({ a: Type.Union([Type.String(), Type.Number()]), b: Type.Optional(Type.Array(Type.Integer())) }))).toBe(
      true,
    );
    expect(isIdentityOnValid16({ $defs: { A: { type: "string" } }, type: "object", properties: { a: { $ref: "#/$defs/A" } } })).toBe(true);
    expect(isIdentityOnValid16({ type: "object", properties: { list: { items: { type: "string" } } } })).toBe(false);
    expect(isIdentityOnValid16({ type: "object", properties: { constructor: { type: "string" } } })).toBe(false);
    expect(isIdentityOnValid16({ type: "object", properties: { a: { $ref: "other.json#/a" } } })).toBe(false);
    expect(isIdentityOnValid16({ type: "object", unevaluatedProperties: false })).toBe(false);
    expect(isIdentityOnValid16({ type: "object", properties: { n: { type: "bigint" } } })).toBe(false);
  });

  it("is taken only for plain data: arrays and objects of Object.prototype, no NaN", () => {
    expect(isPlainData({ a: [1, { b: null }], c: "x" })).toBe(true);
    expect(
      isPlainData(
        structuredClone(
          new (class Point {
            x = 1;
          })(),
        ),
      ),
    ).toBe(true);
    expect(isPlainData({ a: [new Date(0)] })).toBe(false);
    expect(isPlainData({ a: new Uint8Array(1) })).toBe(false);
    // The coercion tells a change by !==, and NaN !== NaN: it copies what holds one.
    expect(isPlainData({ a: [1, Number.NaN] })).toBe(false);
    expect(isPlainData(Number.NaN)).toBe(false);
    // Shallow enough that no check on the way runs out of stack.
    const nested = (depth: number): unknown => (depth === 1 ? {} : { a: nested(depth - 1) });
    expect(isPlainData(nested(200))).toBe(true);
    expect(isPlainData(nested(201))).toBe(false);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(isPlainData(cyclic)).toBe(false);
  });
});

describe.skipIf(!supportsPi16())(loudSkip("validateToolArguments16 (pi 1.6) against pi-ai 1.6.0: compiling"), () => {
  it("compiles each schema object once", () => {
    expect(compileArgumentValidator16(tool)).toBe(compileArgumentValidator16(tool));
  });

  it("throws pi-schema's error for a schema it cannot compile, the error pi's validation throws", () => {
    const broken = { type: "object", properties: { a: 5 } };
    const pi = validateWithPi16("t", broken, {});
    expect(pi.kind).toBe("error");
    expect(() => compileArgumentValidator16(broken)).toThrow(pi.kind === "error" ? pi.text : "");
    expect(validateWithToolpool16("t", broken, {})).toEqual(pi);
  });

  it("loads pi-schema from toolpool's bundle on the first validation, not on import, not from a package, and without a warning", async () => {
    const fixture = fileURLToPath(new URL("./fixtures/validation-16/load-pi-schema.mjs", import.meta.url));
    const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
      execFile(process.execPath, [fixture], { timeout: 60_000 }, (error, out, err) =>
        error === null ? resolve({ stdout: out, stderr: err }) : reject(error),
      );
    });
    expect(stderr).toBe("");
    expect(JSON.parse(stdout)).toEqual({ afterImport: 0, afterValidation: 1, fromPackage: 0 });
  });
});
