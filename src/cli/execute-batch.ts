/**
 * Runs one batch for the command line: shows the batch through a view, and
 * always closes the runtime.
 *
 * @module
 */
import type { BatchOutcome, Runtime } from "../index.js";
import type { BatchView } from "./batch-view.js";
import { HumanView } from "./human-view.js";
import type { BatchInput } from "./load-batch.js";
import { NdjsonView } from "./ndjson-view.js";
import type { CliStreams } from "./output-streams.js";
import { toInputError } from "./usage-error.js";

/** Everything one command-line batch needs. */
interface BatchRequest {
  batch: BatchInput;
  /** The runtime that executes it; closed once the batch is shown. */
  runtime: Runtime;
  /** One JSON line per event instead of the view for people. */
  isNdjson: boolean;
  /** The view for people shows results whole (`--full`). */
  isFull?: boolean;
  streams: CliStreams;
}

/**
 * Executes the batch and shows it. Resolves with the outcome once it is
 * written and the runtime closed. Throws a {@link UsageError} for invalid options, tools
 * or batch (the runtime's `ToolpoolError` message), anything else unchanged.
 * Ctrl-C aborts the batch: its calls end with error results, which are shown.
 */
export async function executeBatch(request: BatchRequest): Promise<BatchOutcome> {
  const { runtime } = request;
  const { assistantMessage, context } = request.batch;
  const total = assistantMessage.content.filter((block) => block.type === "toolCall").length;
  const view: BatchView = request.isNdjson
    ? new NdjsonView(request.streams.stdout)
    : new HumanView(request.streams, total, undefined, request.isFull === true);
  const controller = new AbortController();
  const abortBatch = (): void => controller.abort();
  process.once("SIGINT", abortBatch);
  try {
    const startedAt = performance.now();
    const outcome = await runtime
      .executeToolCalls(assistantMessage, {
        ...(context === undefined ? {} : { context }),
        signal: controller.signal,
        emit: view.emit,
      })
      .catch((error: unknown) => {
        throw toInputError(error);
      });
    await view.finish(outcome, performance.now() - startedAt);
    return outcome;
  } catch (error) {
    view.dispose();
    throw error;
  } finally {
    process.off("SIGINT", abortBatch);
    await runtime.close();
  }
}
