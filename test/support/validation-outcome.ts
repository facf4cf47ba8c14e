import { inspect } from "node:util";

import { expect } from "vitest";

/**
 * What one validation gave: the validated arguments printed exactly (key
 * order, `-0`, `undefined`, arrays vs objects all show), or the full text of
 * the error.
 */
export type ValidationOutcome = { kind: "valid"; args: string } | { kind: "error"; text: string };

/** `value` printed as a {@link ValidationOutcome} shows it. */
export function printValue(value: unknown): string {
  return inspect(value, { depth: Infinity, breakLength: Infinity, maxArrayLength: Infinity, maxStringLength: Infinity });
}

/** The outcome of `validate`: what it returned, or the message of what it threw. */
export function outcomeOf(validate: () => unknown): ValidationOutcome {
  try {
    return { kind: "valid", args: printValue(validate()) };
  } catch (error) {
    return { kind: "error", text: error instanceof Error ? error.message : String(error) };
  }
}

/** What a randomized validation differential met, by kind: the keys its tally starts with at 0. */
export type OutcomeTally = Record<string, number>;

/**
 * Counts one case's outcome: valid (and coerced too when the arguments came
 * back changed, against a copy of those sent, which is what pi returns
 * uncoerced: a class instance comes back a plain object), pi's validation
 * error, pi 1.6's "Invalid arguments" error, or anything else thrown.
 */
export function countOutcome(tally: OutcomeTally, outcome: ValidationOutcome, args: unknown): void {
  const add = (kind: string) => void (tally[kind] = (tally[kind] ?? 0) + 1);
  add("cases");
  if (outcome.kind === "valid") {
    add("valid");
    if (outcome.args !== printValue(structuredClone(args))) add("coerced");
  } else if (outcome.text.startsWith("Validation failed")) add("errors");
  else if (outcome.text.startsWith("Invalid arguments for tool")) add("argumentsErrors");
  else {
    add("thrown");
    if (process.env.RANDOM_SHOW_THROWN) console.info(outcome.text);
  }
}

/**
 * The generators must keep reaching every kind of outcome, through both kinds
 * of schema (plain, a third of them naming a draft, and TypeBox's), in at
 * least 99 % of the `caseCount` cases asked for.
 */
export function expectEveryOutcomeReached(tally: OutcomeTally, caseCount: number): void {
  expect(tally.cases).toBeGreaterThanOrEqual(caseCount * 0.99);
  expect(tally.plain).toBeGreaterThan(tally.cases! * 0.3);
  expect(tally.typebox).toBeGreaterThan(tally.cases! * 0.3);
  expect(tally.drafted).toBeGreaterThan(tally.plain! * 0.2);
  expect(tally.valid).toBeGreaterThan(tally.cases! * 0.1);
  expect(tally.errors).toBeGreaterThan(tally.cases! * 0.1);
  expect(tally.coerced).toBeGreaterThan(tally.cases! * 0.02);
}
