import { supportsPi16 } from "toolpool";

import { compileArgumentValidator16, validateToolArguments16 } from "./built.js";
import { outcomeOf, type ValidationOutcome } from "./validation-outcome.js";

export type { ValidationOutcome };
export { compileArgumentValidator16 };

type PiValidate = (tool: unknown, toolCall: unknown) => unknown;

/**
 * pi-ai 1.6.0's `validateToolArguments`, loaded only where pi 1.6 runs
 * (Node >= 22.19): elsewhere the suites that use it skip, and this module
 * must still load.
 */
const piValidate: PiValidate | undefined = supportsPi16()
  ? ((await import("@earendil-works/pi-ai")) as { validateToolArguments: PiValidate }).validateToolArguments
  : undefined;

/** pi-ai 1.6.0's `validateToolArguments`, as pi 1.6's loop calls it in its prepare stage. */
export function validateWithPi16(toolName: string, schema: object, args: unknown, argumentsError?: unknown): ValidationOutcome {
  if (piValidate === undefined) throw new Error(`pi 1.6 needs Node >= 22.19; this is Node ${process.versions.node}`);
  const toolCall: Record<string, unknown> = { type: "toolCall", id: "call", name: toolName, arguments: args };
  if (argumentsError !== undefined) toolCall.argumentsError = argumentsError;
  return outcomeOf(() => piValidate({ name: toolName, description: "", parameters: schema }, toolCall));
}

/** toolpool's validation under pi 1.6. */
export function validateWithToolpool16(toolName: string, schema: object, args: unknown, argumentsError?: unknown): ValidationOutcome {
  return outcomeOf(() => validateToolArguments16(toolName, schema as Record<string, unknown>, args, argumentsError));
}
