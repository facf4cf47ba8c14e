import { validateToolArguments as piValidateToolArguments } from "@mariozechner/pi-ai";

import { validateToolArguments } from "./built.js";
import { outcomeOf, type ValidationOutcome } from "./validation-outcome.js";

export type { ValidationOutcome };

/** pi-ai 0.73.1's `validateToolArguments` (what pi's loop calls in its prepare stage). */
export function validateWithPi(toolName: string, schema: object, args: unknown): ValidationOutcome {
  return outcomeOf(() =>
    piValidateToolArguments(
      { name: toolName, description: "", parameters: schema } as never,
      {
        type: "toolCall",
        id: "call",
        name: toolName,
        arguments: args,
      } as never,
    ),
  );
}

/** toolpool's validation, as its prepare stage calls it (`mayReturnInput`: an unobserved worker call). */
export function validateWithToolpool(toolName: string, schema: object, args: unknown, mayReturnInput = false): ValidationOutcome {
  return outcomeOf(() => validateToolArguments(toolName, schema as Record<string, unknown>, args, mayReturnInput));
}
