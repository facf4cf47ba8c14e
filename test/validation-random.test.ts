import { inspect } from "node:util";

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { argumentsFor, toolSchemaNode, toPlainSchema, toTypeBoxSchema } from "./support/arbitrary-schemas.js";
import { schemaDraft, withDraft } from "./support/schema-drafts.js";
import { malform, malformedAt } from "./support/malformed-schemas.js";
import { validateWithPi, validateWithToolpool } from "./support/validation-oracle.js";
import { countOutcome, expectEveryOutcomeReached } from "./support/validation-outcome.js";
import { expectBoundedErrorLines, hasErrorLinesPastBound } from "./support/error-lines.js";

/**
 * The randomized validation differential: generated tool schemas (plain JSON,
 * some malformed under the draft they name: see malformed-schemas.ts, and
 * TypeBox-built) × generated arguments, each through pi-ai 0.73.1's
 * `validateToolArguments` and toolpool's (the copying path and the lean path
 * of an unobserved worker call): the validated arguments or the full error
 * text must be the same. `RANDOM_SEED` and `RANDOM_VALIDATION_CASES` change the
 * seed and the number of cases (`npm run test:random` runs many more).
 */
const seed = Number(process.env.RANDOM_SEED ?? 20_261_202);
const caseCount = Number(process.env.RANDOM_VALIDATION_CASES ?? 10_000);
// Compiling is what costs most (pi's and toolpool's validators, once per
// schema each): many arguments per schema keep the run to seconds.
const argumentsPerSchema = 20;
/** Another part of toolpool bounds the "Received arguments" echo at 4 KiB; generated cases stay below it. */
const echoLimit = 4096;

const generatedCase = fc.boolean().chain((isPlain) =>
  toolSchemaNode(isPlain).chain((node) =>
    fc.record({
      isPlain: fc.constant(isPlain),
      draft: schemaDraft,
      malformed: malformedAt,
      node: fc.constant(node),
      argumentLists: fc.array(argumentsFor(node), { minLength: argumentsPerSchema, maxLength: argumentsPerSchema }),
    }),
  ),
);

describe("validateToolArguments, randomized against pi-ai 0.73.1", () => {
  // About 4 s alone on 2 cores; the limit is for a machine busy with other suites.
  it(`gives pi's outcome for ${caseCount} generated schema × arguments cases (seed ${seed})`, { timeout: 300_000 }, () => {
    const tally = {
      cases: 0,
      plain: 0,
      typebox: 0,
      drafted: 0,
      malformed: 0,
      valid: 0,
      coerced: 0,
      errors: 0,
      thrown: 0,
      echoSkipped: 0,
      linesBounded: 0,
    };
    fc.assert(
      fc.property(generatedCase, ({ isPlain, draft, malformed, node, argumentLists }) => {
        const plain = isPlain ? withDraft(toPlainSchema(node), draft) : undefined;
        const schema = plain === undefined ? toTypeBoxSchema(node) : malformed === undefined ? plain : malform(plain, malformed);
        for (const args of argumentLists) {
          if ((JSON.stringify(args, null, 2)?.length ?? 0) >= echoLimit) {
            tally.echoSkipped++;
            continue;
          }
          const pi = validateWithPi("generated", schema, args);
          const context = { schema: JSON.stringify(schema), args: inspect(args, { depth: Infinity }) };
          const outcome = validateWithToolpool("generated", schema, args);
          if (pi.kind === "error" && hasErrorLinesPastBound(pi.text)) {
            // toolpool's bound on the error lines (both pis alike): pi's lines up to it, then a count.
            tally.linesBounded++;
            expect({ ...context, kind: outcome.kind }).toEqual({ ...context, kind: "error" });
            expectBoundedErrorLines(pi.text, (outcome as { text: string }).text);
          } else expect({ ...context, outcome }).toEqual({ ...context, outcome: pi });
          expect({ ...context, outcome: validateWithToolpool("generated", schema, args, true) }).toEqual({ ...context, outcome: pi });
          countOutcome(tally, pi, args);
          tally[isPlain ? "plain" : "typebox"]++;
          if (isPlain && draft !== undefined) tally.drafted++;
          if (plain !== undefined && malformed !== undefined) tally.malformed++;
        }
      }),
      { seed, numRuns: Math.ceil(caseCount / argumentsPerSchema) },
    );
    console.info(`validation differential (seed ${seed}):`, tally);
    expectEveryOutcomeReached(tally, caseCount);
    expect(tally.malformed).toBeGreaterThan(tally.plain * 0.1);
  });
});
