/** Where the command line writes, injectable so that views do not reach for `process` themselves. */
import { once } from "node:events";
import type { Writable } from "node:stream";

export interface CliStreams {
  stdout: Writable;
  /** `isTTY` decides between a live progress bar and plain progress lines. */
  stderr: Writable & { isTTY?: boolean };
}

export function processStreams(): CliStreams {
  return { stdout: process.stdout, stderr: process.stderr };
}

/** Waits for a full buffer to drain: the runtime awaits its sinks, so a slow `--ndjson` reader slows the batch instead of growing memory. */
export async function writeText(stream: Writable, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, "drain");
}
