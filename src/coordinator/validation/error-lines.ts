/**
 * The error lines of a failed validation, bounded.
 *
 * pi writes one line per schema error. Under pi 1.6 that is one line per
 * unknown key, so a 1 MB body of small keys became a 2.75 MB text that
 * travels in the result, in every event and frame that repeats it, and into
 * the agent's context. Up to {@link maxErrorLinesBytes} the lines are pi's,
 * byte for byte; past it the text keeps the whole lines that fit and ends with
 * one more line, `  - … (N more)`, N the lines left out — a deliberate
 * difference from pi, the same under both pis. A first line longer than the
 * bound by itself (a key of a megabyte in its path) is cut there and marked
 * like a cut echo. Lines are written one by one and writing stops at the
 * bound, so the cost does not depend on how many errors there are.
 *
 * @module
 */

import { cutUtf8, truncationMark } from "./received-arguments.js";

/** UTF-8 bytes of error lines (newlines included) shown before the rest is counted. */
export const maxErrorLinesBytes = 4096;

/**
 * `errors.map(formatLine).join("\n")` when that is at most `maxBytes` UTF-8
 * bytes; otherwise the lines that fit whole, then `  - … (N more)`.
 */
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
