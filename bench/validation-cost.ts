/**
 * What argument validation costs per call, side by side: toolpool's current
 * validation (TypeBox, pi's pipeline), the ajv implementation it replaced,
 * and pi-ai 0.73.1's own `validateToolArguments` for reference; then, where
 * this Node runs pi 1.6 (>= 22.19), toolpool's pi 1.6 validation (pi-schema)
 * beside pi-ai 1.6.0's own `validateToolArguments`.
 *
 *   npm run bench:validation            # or: node dist-bench/validation-cost.js [--reps N] [--calls N]
 *
 * Each case runs every contender for `calls` calls per repetition, the
 * contenders taking turns repetition by repetition; the report gives the
 * median µs per call over the repetitions, with the range. Validators are
 * compiled (once per schema) before the first measured call.
 */
import { cpus } from "node:os";
import { parseArgs } from "node:util";

import { validateToolArguments as piValidate } from "@mariozechner/pi-ai";
import { Type } from "typebox";

import { validateToolArguments as toolpoolValidate } from "../dist/coordinator/validation/pi-0.73/validate-arguments.js";
import { validateToolArguments16 } from "../dist/coordinator/validation/pi-1.6/validate-arguments-16.js";
import { supportsPi16 } from "../dist/options.js";
import { validateWithAjv } from "./lib/ajv-validation.js";
import { grepSchema } from "./lib/constants.js";
import { summarize } from "./lib/stats.js";

type JsonSchema = Record<string, unknown>;

interface Case {
  name: string;
  schema: JsonSchema;
  args: Record<string, unknown>;
  /** A worker call nobody observes: valid arguments may be passed on uncopied. */
  mayReturnInput?: boolean;
}

const typeboxSchema = Type.Object({
  pattern: Type.String({ minLength: 1 }),
  path: Type.Optional(Type.String()),
  ignoreCase: Type.Optional(Type.Boolean()),
  maxResults: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  mode: Type.Optional(Type.Union([Type.Literal("files"), Type.Literal("lines")])),
}) as unknown as JsonSchema;

const validArgs = { pattern: "TODO", path: "src", ignoreCase: true, maxResults: 50, globs: ["*.ts", "*.md"] };

const cases: Case[] = [
  { name: "valid, plain JSON schema", schema: grepSchema, args: validArgs },
  { name: "valid, unobserved worker call", schema: grepSchema, args: validArgs, mayReturnInput: true },
  { name: 'coercible ("50", "true")', schema: grepSchema, args: { ...validArgs, maxResults: "50", ignoreCase: "true" } },
  { name: "invalid (missing, extra key)", schema: grepSchema, args: { path: "src", extra: 1 } },
  { name: "valid, TypeBox schema with a union", schema: typeboxSchema, args: { pattern: "TODO", maxResults: 5, mode: "lines" } },
];

type Contender = (schema: JsonSchema, args: unknown, mayReturnInput: boolean) => unknown;

type Pi16Validate = (tool: unknown, toolCall: unknown) => unknown;
/** pi-ai 1.6.0, loaded only where it runs. */
const pi16Validate: Pi16Validate | undefined = supportsPi16()
  ? ((await import("@earendil-works/pi-ai")) as { validateToolArguments: Pi16Validate }).validateToolArguments
  : undefined;

const editSchema: JsonSchema = {
  type: "object",
  properties: {
    path: { type: "string" },
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
  required: ["path", "edits"],
  additionalProperties: false,
};
const editArgs = {
  path: "src/a.ts",
  edits: Array.from({ length: 5 }, (_, i) => ({ oldText: `${"x".repeat(200)}${i}`, newText: `${"y".repeat(300)}${i}` })),
};

const refSchema: JsonSchema = {
  $defs: { Range: { type: "object", properties: { start: { type: "integer" }, end: { type: "integer" } }, required: ["start"] } },
  type: "object",
  properties: { path: { type: "string" }, ranges: { type: "array", items: { $ref: "#/$defs/Range" } } },
  required: ["path"],
};

/** A schema outside the fast path's proof: `items` without `type` wraps a valid single value. */
const itemsOnlySchema: JsonSchema = {
  type: "object",
  properties: { pattern: { type: "string" }, globs: { items: { type: "string" } } },
  required: ["pattern"],
};

const cases16: Case[] = [
  { name: "valid, plain JSON schema", schema: grepSchema, args: validArgs },
  { name: 'coercible ("50", "true")', schema: grepSchema, args: { ...validArgs, maxResults: "50", ignoreCase: "true" } },
  { name: 'a single value for an array (globs: "*.ts")', schema: grepSchema, args: { ...validArgs, globs: "*.ts" } },
  { name: "invalid (missing, extra key)", schema: grepSchema, args: { path: "src", extra: 1 } },
  { name: "valid, TypeBox schema with a union", schema: typeboxSchema, args: { pattern: "TODO", maxResults: 5, mode: "lines" } },
  { name: "valid, 5 edits of 0.5 KB", schema: editSchema, args: editArgs },
  { name: "valid, $ref into $defs", schema: refSchema, args: { path: "a", ranges: [{ start: 1, end: 2 }, { start: 5 }] } },
  { name: "valid, schema outside the fast path", schema: itemsOnlySchema, args: { pattern: "TODO", globs: ["*.ts"] } },
];

const contenders16: [string, Contender][] = [
  ["toolpool pi 1.6 (pi-schema)", (schema, args) => validateToolArguments16("grep", schema, args)],
  ["pi-ai 1.6.0", (schema, args) => pi16Validate!({ name: "grep", parameters: schema }, { name: "grep", arguments: args })],
];

const contenders: [string, Contender][] = [
  ["toolpool before (ajv)", (schema, args, mayReturnInput) => validateWithAjv("grep", schema, args, mayReturnInput)],
  ["toolpool after (TypeBox)", (schema, args, mayReturnInput) => toolpoolValidate("grep", schema, args, mayReturnInput)],
  ["pi-ai 0.73.1", (schema, args) => piValidate({ name: "grep", parameters: schema } as never, { name: "grep", arguments: args } as never)],
];

function timeCalls(contender: Contender, testCase: Case, calls: number): number {
  const mayReturnInput = testCase.mayReturnInput === true;
  let sink = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    try {
      sink += contender(testCase.schema, testCase.args, mayReturnInput) === undefined ? 0 : 1;
    } catch (error) {
      sink += (error as Error).message.length;
    }
  }
  const elapsed = Number(process.hrtime.bigint() - start) / 1000;
  if (sink < 0) console.log(sink);
  return elapsed / calls;
}

const { values } = parseArgs({ options: { reps: { type: "string", default: "15" }, calls: { type: "string", default: "20000" } } });
const reps = Number(values.reps);
const calls = Number(values.calls);

console.log(
  `Validation cost per call, µs (median of ${reps} repetitions × ${calls} calls [min–max]); ${cpus()[0]?.model ?? "unknown CPU"}, Node ${process.version}\n`,
);
printTable(cases, contenders);
if (pi16Validate === undefined) console.log(`\npi 1.6: not measured (it needs Node >= 22.19)`);
else {
  // The two must agree before their costs are compared.
  for (const testCase of cases16) {
    const [ours, pis] = contenders16.map(([, contender]) => outcomeOf(contender, testCase));
    if (ours !== pis) throw new Error(`pi 1.6, ${testCase.name}: toolpool gives ${ours}, pi-ai 1.6.0 gives ${pis}`);
  }
  console.log("\npi 1.6\n");
  printTable(cases16, contenders16);
}

/** What a contender gives for a case, as text: the arguments it returns, or the message it throws. */
function outcomeOf(contender: Contender, testCase: Case): string {
  try {
    return JSON.stringify(contender(testCase.schema, testCase.args, false));
  } catch (error) {
    return `throws ${(error as Error).message}`;
  }
}

/** One row per case, one column per contender, the contenders taking turns repetition by repetition. */
function printTable(tableCases: readonly Case[], tableContenders: readonly [string, Contender][]): void {
  console.log(`| case | ${tableContenders.map(([name]) => name).join(" | ")} |`);
  console.log(`|---|${tableContenders.map(() => "---:").join("|")}|`);
  for (const testCase of tableCases) {
    const samples = tableContenders.map(() => [] as number[]);
    for (let rep = -2; rep < reps; rep++) {
      tableContenders.forEach(([, contender], index) => {
        const usPerCall = timeCalls(contender, testCase, calls);
        if (rep >= 0) samples[index]!.push(usPerCall);
      });
    }
    const cells = samples.map((values) => {
      const summary = summarize(values);
      return `${summary.median.toFixed(2)} [${summary.min.toFixed(2)}–${summary.max.toFixed(2)}]`;
    });
    console.log(`| ${testCase.name} | ${cells.join(" | ")} |`);
  }
}
