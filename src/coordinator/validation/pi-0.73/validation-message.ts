import type { TLocalizedValidationError } from "typebox/error";

import { formatErrorLines } from "../error-lines.js";
import { formatReceivedArguments } from "../received-arguments.js";

/** pi-ai 0.73.1's text byte for byte, but for the bounded echo and error lines. */
export function formatValidationFailure(toolName: string, errors: readonly TLocalizedValidationError[], received: unknown): string {
  const lines = formatErrorLines(errors, (error) => `  - ${formatErrorPath(error)}: ${error.message}`);
  return `Validation failed for tool "${toolName}":\n${lines || "Unknown validation error"}\n\nReceived arguments:\n${formatReceivedArguments(received)}`;
}

/** pi names a `required` error by its first missing property (TypeBox reports all at the object). */
function formatErrorPath(error: TLocalizedValidationError): string {
  const base = error.instancePath.replace(/^\//, "").replace(/\//g, ".");
  if (error.keyword === "required") {
    const missing = (error.params as { requiredProperties?: string[] }).requiredProperties?.[0];
    if (missing) return base ? `${base}.${missing}` : missing;
  }
  return base || "root";
}
