/** The `--ndjson` view: every event as one JSON line on stdout, then one `batch_end` line; nothing else on stdout. */
import type { Writable } from "node:stream";

import type { BatchEvent, BatchOutcome, EmitFunction } from "../index.js";
import type { BatchView } from "./batch-view.js";
import { writeText } from "./output-streams.js";

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

/** An inline tool may put a `bigint` in `details`, which `JSON.stringify` rejects: it becomes a decimal string instead. */
function toJsonLine(value: unknown): string {
  return `${JSON.stringify(value, (_key, field: unknown) => (typeof field === "bigint" ? field.toString() : field))}\n`;
}
