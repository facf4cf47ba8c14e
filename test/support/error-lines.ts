import { expect } from "vitest";

import { maxErrorLinesBytes, maxReceivedArgumentsBytes, truncationMark } from "./built.js";

const separator = "\n\nReceived arguments:\n";

/** A validation text's parts: its first line, its error lines (as one text), and the echo. */
export function partsOf(text: string): { head: string; lines: string; echo: string } {
  const newline = text.indexOf("\n");
  const echoAt = text.indexOf(separator);
  return { head: text.slice(0, newline), lines: text.slice(newline + 1, echoAt), echo: text.slice(echoAt + separator.length) };
}

/**
 * Checks toolpool's text against pi's where pi's error lines pass the bound:
 * the same first line and echo (the echo cut at its own bound), pi's lines up to the bound kept whole (the
 * first cut and marked when it alone is longer), then `  - … (N more)`
 * counting the rest. Returns how many lines were shown and left out.
 */
export function expectBoundedErrorLines(piText: string, toolpoolText: string): { shown: number; more: number } {
  const pi = partsOf(piText);
  const ours = partsOf(toolpoolText);
  expect(Buffer.byteLength(pi.lines)).toBeGreaterThan(maxErrorLinesBytes);
  expect(ours.head).toBe(pi.head);
  if (Buffer.byteLength(pi.echo) <= maxReceivedArgumentsBytes) expect(ours.echo).toBe(pi.echo);
  else expect(pi.echo.startsWith(ours.echo.slice(0, -truncationMark.length)) && ours.echo.endsWith(truncationMark)).toBe(true);
  const piLines = pi.lines.split("\n");
  const ourLines = ours.lines.split("\n");
  const counted = /^ {2}- … \((\d+) more\)$/.exec(ourLines.at(-1)!);
  if (counted) ourLines.pop();
  const more = counted ? Number(counted[1]) : 0;
  if (ourLines.length === 1 && ourLines[0]!.endsWith(truncationMark)) {
    const cut = ourLines[0]!.slice(0, -truncationMark.length);
    expect(piLines[0]!.startsWith(cut)).toBe(true);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(maxErrorLinesBytes);
  } else {
    expect(ourLines).toEqual(piLines.slice(0, ourLines.length));
    expect(Buffer.byteLength(ourLines.join("\n"))).toBeLessThanOrEqual(maxErrorLinesBytes);
    // The next line would not have fit.
    expect(Buffer.byteLength(piLines.slice(0, ourLines.length + 1).join("\n"))).toBeGreaterThan(maxErrorLinesBytes);
  }
  expect(more).toBe(piLines.length - ourLines.length);
  return { shown: ourLines.length, more };
}

/** Whether pi's text is a validation failure whose error lines pass toolpool's bound. */
export function hasErrorLinesPastBound(piText: string): boolean {
  return piText.startsWith("Validation failed for tool ") && Buffer.byteLength(partsOf(piText).lines) > maxErrorLinesBytes;
}
