/**
 * The pool contract: what the coordinator hands a pool and gets back. The
 * local `WorkerPool` and the fleet's remote pool both keep it, so the
 * coordinator never learns where a call runs. Types only.
 *
 * @module
 */
import type { ErrorCode, ThrownErrorFields } from "../errors.js";
import type { CallTiming } from "./call-timing.js";
import type { AgentToolResult } from "../types.js";
import type { WorkerTool } from "./worker-tool.js";

/** One worker call as the coordinator hands it to the pool. */
export interface WorkerCallRequest {
  tool: WorkerTool;
  toolCallId: string;
  /** Validated arguments; structured-cloned to the worker. */
  args: unknown;
  /** The batch's signal: aborts `ctx.signal` in the worker, then terminates a call that ignores it. */
  signal?: AbortSignal | undefined;
  /** Receives each partial result on the main thread, in the order the tool sent them. */
  onUpdate?: ((partialResult: AgentToolResult<unknown>) => void) | undefined;
  /**
   * The session the call belongs to: sessions take turns on the pool. Any
   * value usable as a Map key; calls without one form a session of their own.
   */
  session?: unknown;
  /** The batch's `sessionKey`, for the tool's `context` function and the pool's events. */
  sessionKey?: string | undefined;
  /** The batch the call belongs to, for the pool's events; absent for a call from `agentTools()`. */
  batchId?: string | undefined;
  /** W3C `traceparent` of the call's span, handed to the tool as `ctx.traceparent`. */
  traceparent?: string | undefined;
  /** The caps the call's spread parts count against (`ctx.spread`); absent when none applies to it. */
  partCaps?: PartCaps | undefined;
}

/** The caps a call holds a slot of (`maxConcurrency`, per session), as its spread parts count against them. */
export interface PartCaps {
  /**
   * Takes one more slot of each of the call's caps, for a part, at once or
   * not at all (a full cap, or a call waiting for it first): the function
   * that gives them back, or `undefined`.
   */
  take(): (() => void) | undefined;
}

/**
 * What the coordinator needs of a pool: the local `WorkerPool` and the
 * fleet's remote pool both have it, so the coordinator never learns where a
 * call runs.
 */
export interface ToolCallPool {
  /** Runs one call. Resolves with its outcome; never rejects. */
  run(request: WorkerCallRequest): Promise<WorkerCallOutcome>;
  /** A snapshot of the pool's state. */
  readonly stats: PoolStats;
  /**
   * Whether a call handed to `run` now would end at once with
   * `TP_ERR_QUEUE_FULL`: the pool's own admission rule, which `run` applies,
   * so that no caller keeps a copy of it.
   */
  isQueueFull(): boolean;
  /** Stops the pool; with `force`, calls still running end at once with `TP_ERR_CLOSED`. */
  close(options?: { force?: boolean }): Promise<void>;
}

/**
 * How a worker call ended. Never a rejection: faults are outcomes too. A
 * tool's own throw is an error without `code` (toolpool's faults have one),
 * with what its `Error` had besides the message in `thrown`.
 */
export type WorkerCallOutcome = (
  | { kind: "ok"; result: AgentToolResult<unknown> }
  | { kind: "error"; message: string; code?: ErrorCode; thrown?: ThrownErrorFields }
) & {
  timing?: CallTiming;
};

/** Snapshot of the pool's state. */
export interface PoolStats {
  /** Worker threads alive. */
  threads: number;
  /** Calls running in a worker. */
  running: number;
  /** Calls waiting for a worker. */
  queued: number;
  /** Calls finished since the pool started. */
  completed: number;
  /** Share of the pool's capacity over the last 10 seconds (`maxThreads` × that time) its threads spent on calls, running ones included (0..1). */
  utilization: number;
  /** Sessions with at least one call waiting for a thread. */
  sessionsWaiting: number;
  /** Milliseconds the longest-waiting call has waited so far; 0 when none waits. */
  longestWaitMs: number;
}

/** A snapshot of the fleet as a coordinator sees it. */
export interface FleetStats {
  /** Live nodes serving the runtime's toolset, at the last look. */
  nodes: number;
  /** Their threads, added up. */
  threads: number;
  /** Remote calls of this runtime in flight. */
  inFlight: number;
  /** The hash of the runtime's worker tools: nodes with the same hash take its calls. */
  toolsetHash: string;
}

/** A waiting or running call, as {@link WorkerPool.diagnose} shows it. */
export interface PoolCallDiagnosis {
  tool: string;
  toolCallId: string;
  state: "waiting" | "running";
  /** The thread running it, for a running call. */
  threadId?: number;
  isAborted: boolean;
  /** A running call whose thread has not yet said it has loaded the call's tool (its first call of it there). */
  isLoading?: boolean;
}

/** The pool's inner state, for diagnosing a stall (the soak's watchdog prints it). */
export interface PoolDiagnosis {
  /** Piscina instances alive, the current one last. */
  generations: {
    threads: { threadId: number; isUsable: boolean; isBooted: boolean }[];
    queued: number;
    running: number;
    isLatched: boolean;
    isRetired: boolean;
  }[];
  /** Piscina instances started since the pool was made (1 unless a worker loss needed a fresh one). */
  generationsStarted: number;
  /** Workers lost before they finished starting, counted since the last one that did. */
  bootFailures: number;
  calls: PoolCallDiagnosis[];
}
