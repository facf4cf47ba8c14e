import { inspect } from "node:util";

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { supportsPi16 } from "toolpool";
import { isIdentityOnValid16, isPlainData } from "./support/built.js";
import { freeSchema, smallJson } from "./support/arbitrary-json-schemas.js";
import { argumentsFor, toolSchemaNode, toPlainSchema, toTypeBoxSchema } from "./support/arbitrary-schemas.js";
import { schemaDraft, withDraft } from "./support/schema-drafts.js";
import { malform, malformedAt } from "./support/malformed-schemas.js";
import { compileArgumentValidator16, validateWithPi16, validateWithToolpool16 } from "./support/validation-oracle-16.js";
import { countOutcome, expectEveryOutcomeReached, printValue } from "./support/validation-outcome.js";
import { expectBoundedErrorLines, hasErrorLinesPastBound } from "./support/error-lines.js";

/**
 * The randomized validation differential for pi 1.6: generated tool schemas
 * (plain JSON and TypeBox-built, with the shapes pi-schema's coercion and
 * JSON Schema 2020-12 reach: see arbitrary-schemas.ts; some plain ones
 * malformed under the draft they name: see malformed-schemas.ts) × generated arguments
 * (and now and then an `argumentsError`), each through pi-ai 1.6.0's
 * `validateToolArguments` and toolpool's: the validated arguments or the
 * full error text must be the same. Where the fast path may apply, the
 * property it stands on is checked directly too: pi-schema's coercion
 * returns a valid plain copy as it is. `RANDOM_SEED` and
 * `RANDOM_VALIDATION_CASES` change the seed and the number of cases (`npm
 * run test:random` runs many more).
 */
const seed = Number(process.env.RANDOM_SEED ?? 20_261_216);
const caseCount = Number(process.env.RANDOM_VALIDATION_CASES ?? 10_000);
// Compiling is what costs most (pi's and toolpool's validators, once per
// schema each): many arguments per schema keep the run to seconds.
const argumentsPerSchema = 20;
/** Another part of toolpool bounds the "Received arguments" echo at 4 KiB; generated cases stay below it. */
const echoLimit = 4096;

/** Mostly none; sometimes what a failed parse of the arguments leaves, or a falsy value that pi ignores. */
const argumentsError = fc.oneof(
  { weight: 30, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constantFrom("Unexpected end of JSON input", "Expected ',' or '}' after property value", "", 0, null) },
);

const generatedCase = fc.boolean().chain((isPlain) =>
  toolSchemaNode(isPlain, "1.6").chain((node) =>
    fc.record({
      isPlain: fc.constant(isPlain),
      draft: schemaDraft,
      malformed: malformedAt,
      node: fc.constant(node),
      calls: fc.array(fc.tuple(argumentsFor(node, "1.6"), argumentsError), { minLength: argumentsPerSchema, maxLength: argumentsPerSchema }),
    }),
  ),
);

/** The length of pi's echo, or 0 where JSON cannot print the arguments (pi's text is then the error JSON.stringify throws). */
function echoLength(args: unknown): number {
  try {
    return JSON.stringify(args, null, 2)?.length ?? 0;
  } catch {
    return 0;
  }
}

if (!supportsPi16())
  console.warn(
    `skipped "validateToolArguments16, randomized against pi-ai 1.6.0 (pi 1.6)": pi 1.6 needs Node >= 22.19, and this is Node ${process.versions.node}`,
  );

describe.skipIf(!supportsPi16())("validateToolArguments16, randomized against pi-ai 1.6.0 (pi 1.6)", () => {
  // About 5 s alone on 2 cores; the limit is for a machine busy with other suites.
  it(`gives pi's outcome for ${caseCount} generated schema × arguments cases (seed ${seed})`, { timeout: 300_000 }, () => {
    const tally = {
      cases: 0,
      plain: 0,
      typebox: 0,
      /** Plain schemas naming a draft in `$schema`. */
      drafted: 0,
      /** Plain schemas malformed under their draft (malformed-schemas.ts). */
      malformed: 0,
      valid: 0,
      coerced: 0,
      errors: 0,
      argumentsErrors: 0,
      thrown: 0,
      echoSkipped: 0,
      linesBounded: 0,
      /** Cases whose schema may take the fast path. */
      fastSchemas: 0,
      /** Of those, valid plain copies: the fast path's own cases, each checked to come out of coercion as itself. */
      fastValid: 0,
    };
    fc.assert(
      fc.property(generatedCase, ({ isPlain, draft, malformed, node, calls }) => {
        const plain = isPlain ? withDraft(toPlainSchema(node), draft) : undefined;
        const schema = plain === undefined ? toTypeBoxSchema(node) : malformed === undefined ? plain : malform(plain, malformed);
        const context = { schema: JSON.stringify(schema) };
        for (const [args, error] of calls) {
          if (echoLength(args) >= echoLimit) {
            tally.echoSkipped++;
            continue;
          }
          const pi = validateWithPi16("generated", schema, args, error);
          const shown = { ...context, args: inspect(args, { depth: Infinity }), argumentsError: error };
          const outcome = validateWithToolpool16("generated", schema, args, error);
          if (pi.kind === "error" && hasErrorLinesPastBound(pi.text)) {
            // toolpool's bound on the error lines (both pis alike): pi's lines up to it, then a count.
            tally.linesBounded++;
            expect({ ...shown, kind: outcome.kind }).toEqual({ ...shown, kind: "error" });
            expectBoundedErrorLines(pi.text, (outcome as { text: string }).text);
          } else expect({ ...shown, outcome }).toEqual({ ...shown, outcome: pi });
          if (isIdentityOnValid16(schema)) {
            tally.fastSchemas++;
            if (isFastCase(schema, args)) tally.fastValid++;
          }
          countOutcome(tally, pi, args);
          tally[isPlain ? "plain" : "typebox"]++;
          if (isPlain && draft !== undefined) tally.drafted++;
          if (plain !== undefined && malformed !== undefined) tally.malformed++;
        }
      }),
      { seed, numRuns: Math.ceil(caseCount / argumentsPerSchema) },
    );
    console.info(`pi 1.6 validation differential (seed ${seed}):`, tally);
    expectEveryOutcomeReached(tally, caseCount);
    expect(tally.malformed).toBeGreaterThan(tally.plain * 0.1);
    expect(tally.argumentsErrors).toBeGreaterThan(tally.cases * 0.005);
    expect(tally.fastSchemas).toBeGreaterThan(tally.cases * 0.2);
    expect(tally.fastSchemas).toBeLessThan(tally.cases * 0.9);
    expect(tally.fastValid).toBeGreaterThan(tally.cases * 0.03);
  });
});

/** Free-form schemas: fewer cases (each compiles two validators for a few values), the same seed. */
const freeSchemaCount = Math.ceil(caseCount / 10);
const valuesPerFreeSchema = 10;

if (!supportsPi16())
  console.warn(
    `skipped "validateToolArguments16 on free-form schemas, randomized against pi-ai 1.6.0 (pi 1.6)": pi 1.6 needs Node >= 22.19, and this is Node ${process.versions.node}`,
  );

describe.skipIf(!supportsPi16())("validateToolArguments16 on free-form schemas, randomized against pi-ai 1.6.0 (pi 1.6)", () => {
  it(`gives pi's outcome, and takes the fast path only where coercion keeps valid values, for ${freeSchemaCount} × ${valuesPerFreeSchema} cases (seed ${seed})`, {
    timeout: 300_000,
  }, () => {
    const tally = { cases: 0, valid: 0, coerced: 0, errors: 0, argumentsErrors: 0, thrown: 0, validOnFastSchemas: 0, fastValid: 0 };
    fc.assert(
      fc.property(freeSchema, fc.array(smallJson, { minLength: valuesPerFreeSchema, maxLength: valuesPerFreeSchema }), (schema, values) => {
        for (const args of values) {
          const pi = validateWithPi16("free", schema, args);
          const shown = { schema: JSON.stringify(schema), args: inspect(args, { depth: Infinity }) };
          expect({ ...shown, outcome: validateWithToolpool16("free", schema, args) }).toEqual({ ...shown, outcome: pi });
          if (pi.kind === "valid" && isIdentityOnValid16(schema)) {
            tally.validOnFastSchemas++;
            if (isFastCase(schema, args)) tally.fastValid++;
          }
          countOutcome(tally, pi, args);
        }
      }),
      { seed, numRuns: freeSchemaCount },
    );
    console.info(`pi 1.6 validation differential, free-form schemas (seed ${seed}):`, tally);
    expect(tally.valid).toBeGreaterThan(tally.cases * 0.1);
    expect(tally.coerced).toBeGreaterThan(tally.cases * 0.01);
    expect(tally.errors).toBeGreaterThan(tally.cases * 0.1);
    expect(tally.fastValid).toBeGreaterThan(tally.cases * 0.05);
  });
});

/**
 * Whether the call is one the fast path returns from (a valid plain copy on
 * a schema where it applies), asserting the property that makes it exact:
 * pi-schema's coercion returns that copy as it is.
 */
function isFastCase(schema: object, args: unknown): boolean {
  let validator: ReturnType<typeof compileArgumentValidator16>;
  try {
    validator = compileArgumentValidator16(schema as Record<string, unknown>);
  } catch {
    // A schema pi-schema cannot compile: each call is its compile error, no fast path.
    return false;
  }
  let copy: unknown;
  try {
    copy = structuredClone(args);
  } catch {
    return false;
  }
  // A check that runs out of stack (a reference loop that consumes no depth of the value) sends the fast path to the full pipeline.
  let isValid: boolean;
  try {
    isValid = validator.check(copy);
  } catch {
    return false;
  }
  if (!isValid || !isPlainData(copy)) return false;
  expect(validator.coerce(copy), `${JSON.stringify(schema)} coerces ${printValue(copy)}`).toBe(copy);
  return true;
}
