/**
 * What a batch's coordinator needs of its runtime and of the batch.
 *
 * @module
 */
import type { EmitFunction, BatchEvent } from "../events.js";
import type { ToolExecutionMode } from "../types.js";
import type { BatchTrace } from "../tracing/batch-trace.js";
import type { CallDurations } from "../tracing/call-durations.js";
import type { ToolCallPool } from "../contracts/pool-contract.js";
import type { WorkerTool } from "../contracts/worker-tool.js";
import type { BatchCaps } from "./call-caps.js";
import type { ForceStop } from "./force-stop.js";
import type { PrepareScope } from "./prepare-tool-call.js";

/** What every batch needs of its runtime: made once per runtime. */
export interface BatchServices {
  poolFor: (tool: WorkerTool) => ToolCallPool;
  forceStop: ForceStop;
  /** To the runtime's listeners; never throws. */
  publish: (event: BatchEvent, batchId: string, sessionKey: string | undefined, durations?: CallDurations) => void;
  now: () => number;
  hasListeners: () => boolean;
}

/** Everything one batch needs. */
export interface BatchScope extends PrepareScope {
  batchId: string;
  /** What its worker calls take turns as: its key, or a value of the batch's own. */
  session: unknown;
  sessionKey: string | undefined;
  toolExecution: ToolExecutionMode;
  emit: EmitFunction | undefined;
  services: BatchServices;
  trace: BatchTrace | undefined;
  /** Undefined when no cap can apply. */
  caps: BatchCaps | undefined;
}
