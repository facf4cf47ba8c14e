/**
 * What argument validation costs per call, side by side: toolpool's current
 * validation (TypeBox, pi's pipeline), the ajv implementation it replaced,
 * and pi-ai 0.73.1's own `validateToolArguments` for reference.
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

import { validateToolArguments as toolpoolValidate } from "../dist/coordinator/validate-arguments.js";
import { validateWithAjv } from "./lib/ajv-validation.js";
import { summarize } from "./lib/stats.js";

type JsonSchema = Record<string, unknown>;

interface Case {
  name: string;
  schema: JsonSchema;
  args: Record<string, unknown>;
  /** A worker call nobody observes: valid arguments may be passed on uncopied. */
  mayShare?: boolean;
}

const grepSchema: JsonSchema = {
  type: "object",
  properties: {
    pattern: { type: "string", minLength: 1 },
    path: { type: "string" },
    ignoreCase: { type: "boolean" },
    maxResults: { type: "integer", minimum: 1, maximum: 1000 },
    globs: { type: "array", items: { type: "string" } },
  },
  required: ["pattern"],
  additionalProperties: false,
};

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
  { name: "valid, unobserved worker call", schema: grepSchema, args: validArgs, mayShare: true },
  { name: "coercible (\"50\", \"true\")", schema: grepSchema, args: { ...validArgs, maxResults: "50", ignoreCase: "true" } },
  { name: "invalid (missing, extra key)", schema: grepSchema, args: { path: "src", extra: 1 } },
  { name: "valid, TypeBox schema with a union", schema: typeboxSchema, args: { pattern: "TODO", maxResults: 5, mode: "lines" } },
];

type Contender = (schema: JsonSchema, args: unknown, mayShare: boolean) => unknown;

const contenders: [string, Contender][] = [
  ["toolpool before (ajv)", (schema, args, mayShare) => validateWithAjv("grep", schema, args, mayShare)],
  ["toolpool after (TypeBox)", (schema, args, mayShare) => toolpoolValidate("grep", schema, args, mayShare)],
  ["pi-ai 0.73.1", (schema, args) => piValidate({ name: "grep", parameters: schema } as never, { name: "grep", arguments: args } as never)],
];

function timeCalls(contender: Contender, testCase: Case, calls: number): number {
  const mayShare = testCase.mayShare === true;
  let sink = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    try {
      sink += contender(testCase.schema, testCase.args, mayShare) === undefined ? 0 : 1;
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

console.log(`Validation cost per call, µs (median of ${reps} repetitions × ${calls} calls [min–max]); ${cpus()[0]?.model ?? "unknown CPU"}, Node ${process.version}\n`);
console.log(`| case | ${contenders.map(([name]) => name).join(" | ")} |`);
console.log(`|---|${contenders.map(() => "---:").join("|")}|`);
for (const testCase of cases) {
  const samples = contenders.map(() => [] as number[]);
  for (let rep = -2; rep < reps; rep++) {
    contenders.forEach(([, contender], index) => {
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
