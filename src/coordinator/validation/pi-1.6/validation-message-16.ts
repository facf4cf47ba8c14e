import type { ValidationError } from "@earendil-works/pi-schema";

import { formatErrorLines } from "../error-lines.js";
import { formatReceivedArguments } from "../received-arguments.js";

/**
 * The text of a failed validation under pi 1.6, pi-ai 1.6.0's byte for byte:
 *
 * ```text
 * Validation failed for tool "NAME":
 *   - PATH: MESSAGE
 *
 * Received arguments:
 * ECHO
 * ```
 *
 * One line per pi-schema error, in pi-schema's order, each with its message
 * as pi-schema wrote it. Unlike 0.73.1's text there is no placeholder line
 * when the error list is empty: pi-ai 1.6 joins whatever list it gets. The
 * echo is pi's `JSON.stringify(args, null, 2)` up to 4 KiB, then cut (the
 * same deliberate difference as under 0.73.1: see `received-arguments.ts`).
 * The error lines are pi's up to 4 KiB, then the lines left out are counted
 * (a deliberate difference, as under 0.73.1: see `error-lines.ts`).
 */
export function formatValidationFailure16(toolName: string, errors: readonly ValidationError[], received: unknown): string {
  const lines = formatErrorLines(errors, (error) => `  - ${formatValidationPath16(error.path)}: ${error.message}`);
  return `Validation failed for tool "${toolName}":\n${lines}\n\nReceived arguments:\n${formatReceivedArguments(received)}`;
}

/**
 * A pi-schema error path (a JSON Pointer) as the dotted path the model sees,
 * as pi-ai 1.6 writes it: `/edits/0/oldText` → `edits.0.oldText`, each
 * segment unescaped (`~1` → `/`, then `~0` → `~`), the empty pointer →
 * `root`. A segment holding a dot or a slash is not escaped again, so two
 * pointers may read alike; that is pi's text.
 *
 * @example formatValidationPath16("/a~1b/c~0d") // "a/b.c~d"
 */
export function formatValidationPath16(pointer: string): string {
  if (pointer === "") return "root";
  return pointer
    .slice(1)
    .split("/")
    .map((segment) => segment.replace(/~1/g, "/").replace(/~0/g, "~"))
    .join(".");
}
