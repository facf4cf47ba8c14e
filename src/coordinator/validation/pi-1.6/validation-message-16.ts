import type { ValidationError } from "@earendil-works/pi-schema";

import { formatErrorLines } from "../error-lines.js";
import { formatReceivedArguments } from "../received-arguments.js";

/** pi-ai 1.6.0's text byte for byte, but for the bounded echo and error lines; no placeholder for an empty list, as in pi. */
export function formatValidationFailure16(toolName: string, errors: readonly ValidationError[], received: unknown): string {
  const lines = formatErrorLines(errors, (error) => `  - ${formatValidationPath16(error.path)}: ${error.message}`);
  return `Validation failed for tool "${toolName}":\n${lines}\n\nReceived arguments:\n${formatReceivedArguments(received)}`;
}

/** A JSON Pointer dotted as pi-ai 1.6 writes it, unescaped and never re-escaped (two pointers may read alike, as in pi). */
export function formatValidationPath16(pointer: string): string {
  if (pointer === "") return "root";
  return pointer
    .slice(1)
    .split("/")
    .map((segment) => segment.replace(/~1/g, "/").replace(/~0/g, "~"))
    .join(".");
}
