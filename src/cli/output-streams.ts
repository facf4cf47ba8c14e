/**
 * Where the command line writes, injectable so that views do not reach for
 * `process` themselves.
 *
 * @module
 */
import { once } from "node:events";
import type { Writable } from "node:stream";

/** The two output streams of the command line. */
export interface CliStreams {
  stdout: Writable;
  /** `isTTY` decides between a live progress bar and plain progress lines. */
  stderr: Writable & { isTTY?: boolean };
}

/** The process's own streams. */
export function processStreams(): CliStreams {
  return { stdout: process.stdout, stderr: process.stderr };
}

/**
 * Writes `text` and, when the stream's buffer is full, waits for it to drain:
 * event sinks are awaited by the runtime, so a slow reader of `--ndjson`
 * output slows the batch down instead of growing memory without bound.
 */
export async function writeText(stream: Writable, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, "drain");
}
