import { inspect } from "node:util";

import { validateToolArguments as piValidateToolArguments } from "@mariozechner/pi-ai";

import { validateToolArguments } from "../../dist/coordinator/validate-arguments.js";

/**
 * What one validation gave: the validated arguments printed exactly (key
 * order, `-0`, `undefined`, arrays vs objects all show), or the full text of
 * the error.
 */
export type ValidationOutcome = { kind: "valid"; args: string } | { kind: "error"; text: string };

function outcomeOf(validate: () => unknown): ValidationOutcome {
  try {
    return { kind: "valid", args: inspect(validate(), { depth: Infinity, breakLength: Infinity, maxArrayLength: Infinity, maxStringLength: Infinity }) };
  } catch (error) {
    return { kind: "error", text: error instanceof Error ? error.message : String(error) };
  }
}

/** pi-ai 0.73.1's `validateToolArguments` (what pi's loop calls in its prepare stage). */
export function validateWithPi(toolName: string, schema: object, args: unknown): ValidationOutcome {
  return outcomeOf(() =>
    piValidateToolArguments({ name: toolName, description: "", parameters: schema } as never, {
      type: "toolCall",
      id: "call",
      name: toolName,
      arguments: args,
    } as never),
  );
}

/** toolpool's validation, as its prepare stage calls it (`mayShare`: an unobserved worker call). */
export function validateWithToolpool(toolName: string, schema: object, args: unknown, mayShare = false): ValidationOutcome {
  return outcomeOf(() => validateToolArguments(toolName, schema as Record<string, unknown>, args, mayShare));
}
