/**
 * What a batch's coordinator needs of its runtime and of the batch's own
 * options.
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
  /** The pool a worker tool runs on. */
  poolFor: (tool: WorkerTool) => ToolCallPool;
  /** Stopped when the runtime is closed by force: running inline calls are then no longer awaited. */
  forceStop: ForceStop;
  /** Hands an event to the runtime's listeners, with a call's durations on its end event; never throws. */
  publish: (event: BatchEvent, batchId: string, sessionKey: string | undefined, durations?: CallDurations) => void;
  /** The runtime's clock: an inline call's run time. */
  now: () => number;
  /** Whether the runtime has listeners of batch events now. */
  hasListeners: () => boolean;
}

/** Everything one batch needs. */
export interface BatchScope extends PrepareScope {
  batchId: string;
  /** The session its worker calls take turns as (a string key, or a value of the batch's own). */
  session: unknown;
  /** The batch's `sessionKey`, for the runtime's listeners (`meta.sessionKey`). */
  sessionKey: string | undefined;
  toolExecution: ToolExecutionMode;
  emit: EmitFunction | undefined;
  services: BatchServices;
  /** The batch's spans, when it is traced. */
  trace: BatchTrace | undefined;
  /** The caps its calls count against; undefined when none can apply. */
  caps: BatchCaps | undefined;
}
