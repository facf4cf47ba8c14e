/**
 * Runs one batch for the command line: creates the runtime, shows the batch
 * through a view, and always closes the runtime.
 *
 * @module
 */
import {
  createRuntime,
  ToolpoolError,
  type FleetOptions,
  type PiVersion,
  type Runtime,
  type ToolDefinition,
  type ToolExecutionMode,
} from "../index.js";
import type { BatchView } from "./batch-view.js";
import { HumanView } from "./human-view.js";
import type { BatchInput } from "./load-batch.js";
import type { LoadedHooks } from "./load-modules.js";
import { NdjsonView } from "./ndjson-view.js";
import type { CliStreams } from "./output-streams.js";
import { UsageError } from "./usage-error.js";

/** Everything one command-line batch needs. */
export interface BatchRequest {
  batch: BatchInput;
  tools: readonly ToolDefinition[];
  hooks: LoadedHooks;
  /** Left to the runtime's default when absent. */
  toolExecution?: ToolExecutionMode;
  /** Which pi's rules the batch follows; the runtime's default when absent. */
  pi?: PiVersion;
  /** Fixed pool size (`maxThreads` = `minThreads`); the runtime's default when absent. */
  threads?: number;
  /** Runs worker calls on a fleet (`--fleet`, `--remote`). */
  fleet?: FleetOptions;
  /** One JSON line per event instead of the view for people. */
  isNdjson: boolean;
  streams: CliStreams;
}

/**
 * Executes the batch and shows it. Resolves once the outcome is written and
 * the runtime closed. Throws a {@link UsageError} for invalid options, tools
 * or batch (the runtime's `ToolpoolError` message), anything else unchanged.
 * Ctrl-C aborts the batch: its calls end with error results, which are shown.
 */
export async function executeBatch(request: BatchRequest): Promise<void> {
  const runtime = createBatchRuntime(request);
  const { assistantMessage, context } = request.batch;
  const total = assistantMessage.content.filter((block) => block.type === "toolCall").length;
  const view: BatchView = request.isNdjson ? new NdjsonView(request.streams.stdout) : new HumanView(request.streams, total);
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
        throw toUsageError(error) ?? error;
      });
    await view.finish(outcome, performance.now() - startedAt);
  } catch (error) {
    view.dispose();
    throw error;
  } finally {
    process.off("SIGINT", abortBatch);
    await runtime.close();
  }
}

function createBatchRuntime(request: BatchRequest): Runtime {
  try {
    return createRuntime({
      tools: request.tools,
      ...request.hooks,
      ...(request.toolExecution === undefined ? {} : { toolExecution: request.toolExecution }),
      ...(request.pi === undefined ? {} : { pi: request.pi }),
      ...(request.threads === undefined ? {} : { pool: { maxThreads: request.threads, minThreads: request.threads } }),
      ...(request.fleet === undefined ? {} : { fleet: request.fleet }),
    });
  } catch (error) {
    throw toUsageError(error) ?? error;
  }
}

/** The runtime's misuse errors are, seen from the command line, invalid input. */
function toUsageError(error: unknown): UsageError | undefined {
  if (!(error instanceof ToolpoolError)) return undefined;
  const isInputError = error.code === "TP_ERR_INVALID_OPTION" || error.code === "TP_ERR_INVALID_TOOL" || error.code === "TP_ERR_INVALID_BATCH";
  return isInputError ? new UsageError(error.message, { cause: error }) : undefined;
}
