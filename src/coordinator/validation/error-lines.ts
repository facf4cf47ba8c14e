/** Validation error lines: pi's up to a bound, then `  - … (N more)` (deliberately unlike pi: keys cannot flood the result). @module */

import { cutUtf8, truncationMark } from "./received-arguments.js";

/** UTF-8 bytes of error lines (newlines included) shown before the rest is counted. */
export const maxErrorLinesBytes = 4096;

/** Stops formatting at the bound, so the cost does not grow with the error count. */
export function formatErrorLines<T>(errors: readonly T[], formatLine: (error: T) => string, maxBytes: number = maxErrorLinesBytes): string {
  const shown: string[] = [];
  let bytes = 0;
  for (const error of errors) {
    const line = formatLine(error);
    const lineBytes = Buffer.byteLength(line, "utf8") + (shown.length > 0 ? 1 : 0);
    if (bytes + lineBytes > maxBytes) {
      if (shown.length === 0) shown.push(`${cutUtf8(line, maxBytes)}${truncationMark}`);
      const more = errors.length - shown.length;
      if (more > 0) shown.push(`  - … (${more} more)`);
      break;
    }
    shown.push(line);
    bytes += lineBytes;
  }
  return shown.join("\n");
}
