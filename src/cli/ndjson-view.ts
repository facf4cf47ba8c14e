/**
 * The `--ndjson` view: every event as one JSON line on stdout, then one
 * `batch_end` line. Nothing else is written to stdout.
 *
 * @module
 */
import type { Writable } from "node:stream";

import type { BatchEvent, BatchOutcome, EmitFunction } from "../index.js";
import type { BatchView } from "./batch-view.js";
import { writeText } from "./output-streams.js";

/** Writes each event exactly as the runtime emits it, one JSON object a line. */
export class NdjsonView implements BatchView {
  readonly #stdout: Writable;

  constructor(stdout: Writable) {
    this.#stdout = stdout;
  }

  readonly emit: EmitFunction = (event: BatchEvent) => writeText(this.#stdout, toJsonLine(event));

  async finish(outcome: BatchOutcome): Promise<void> {
    await writeText(this.#stdout, toJsonLine({ type: "batch_end", messages: outcome.messages, terminate: outcome.terminate }));
  }

  dispose(): void {}
}

/**
 * One JSON line. Inline tools run on the main thread and may put a `bigint`
 * in `details`, which `JSON.stringify` rejects; it is written as a decimal
 * string rather than failing the whole batch.
 */
function toJsonLine(value: unknown): string {
  return `${JSON.stringify(value, (_key, field: unknown) => (typeof field === "bigint" ? field.toString() : field))}\n`;
}
