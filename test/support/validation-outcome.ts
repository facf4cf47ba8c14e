import { inspect } from "node:util";

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
