import type { TLocalizedValidationError } from "typebox/error";

import { formatErrorLines } from "../error-lines.js";
import { formatReceivedArguments } from "../received-arguments.js";

/**
 * The text of a failed validation, pi-ai 0.73.1's byte for byte:
 *
 * ```text
 * Validation failed for tool "NAME":
 *   - PATH: MESSAGE
 *
 * Received arguments:
 * ECHO
 * ```
 *
 * One line per TypeBox error, in TypeBox's order (`Unknown validation error`
 * when there is none). The echo is pi's too up to 4 KiB, then cut (a
 * deliberate difference: see `received-arguments.ts`); the error lines are
 * pi's up to 4 KiB, then the lines left out are counted (a deliberate
 * difference, the same under pi 1.6: see `error-lines.ts`).
 */
export function formatValidationFailure(toolName: string, errors: readonly TLocalizedValidationError[], received: unknown): string {
  const lines = formatErrorLines(errors, (error) => `  - ${formatErrorPath(error)}: ${error.message}`);
  return `Validation failed for tool "${toolName}":\n${lines || "Unknown validation error"}\n\nReceived arguments:\n${formatReceivedArguments(received)}`;
}

/**
 * The failing path, dotted (`a.b.0`), `root` for the arguments themselves; for
 * a `required` error, the path of the first missing property (TypeBox reports
 * all of them on one error, at the object).
 */
function formatErrorPath(error: TLocalizedValidationError): string {
  const base = error.instancePath.replace(/^\//, "").replace(/\//g, ".");
  if (error.keyword === "required") {
    const missing = (error.params as { requiredProperties?: string[] }).requiredProperties?.[0];
    if (missing) return base ? `${base}.${missing}` : missing;
  }
  return base || "root";
}
