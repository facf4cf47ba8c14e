/** Runs one batch for the command line: shows it through a view, and always closes the runtime. */
import type { BatchOutcome, Runtime } from "../index.js";
import type { BatchView } from "./batch-view.js";
import { HumanView } from "./human-view.js";
import type { BatchInput } from "./load-batch.js";
import { NdjsonView } from "./ndjson-view.js";
import type { CliStreams } from "./output-streams.js";
import { toInputError } from "./usage-error.js";

interface BatchRequest {
  batch: BatchInput;
  /** Closed once the batch is shown. */
  runtime: Runtime;
  isNdjson: boolean;
  isFull?: boolean;
  streams: CliStreams;
}

/**
 * Resolves with the outcome once it is written and the runtime closed. The runtime's `ToolpoolError` becomes a
 * {@link UsageError}. Ctrl-C aborts the batch: its calls end with error results, which are shown.
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
