/** The coordinator–pool contract, kept by local and fleet pools alike, so the coordinator never learns where a call runs. @module */
import type { ErrorCode, ThrownErrorFields } from "../errors.js";
import type { CallTiming } from "./call-timing.js";
import type { AgentToolResult } from "../types.js";
import type { WorkerTool } from "./worker-tool.js";

export interface WorkerCallRequest {
  tool: WorkerTool;
  toolCallId: string;
  args: unknown;
  /** Aborts `ctx.signal` in the worker, then terminates a call that ignores it. */
  signal?: AbortSignal | undefined;
  /** Partial results, on the main thread, in the order the tool sent them. */
  onUpdate?: ((partialResult: AgentToolResult<unknown>) => void) | undefined;
  /** Sessions take turns on the pool; calls without one form a session of their own. */
  session?: unknown;
  sessionKey?: string | undefined;
  /** Absent for a call from `agentTools()`. */
  batchId?: string | undefined;
  traceparent?: string | undefined;
  /** The caps the call's spread parts count against. */
  partCaps?: PartCaps | undefined;
}

export interface PartCaps {
  /** Takes one more slot of each cap, all or none; returns the release function, or `undefined`. */
  take(): (() => void) | undefined;
}

export interface ToolCallPool {
  /** Never rejects. */
  run(request: WorkerCallRequest): Promise<WorkerCallOutcome>;
  readonly stats: PoolStats;
  /** Whether `run` now would end with `TP_ERR_QUEUE_FULL`: the pool's own admission rule, kept in one place. */
  isQueueFull(): boolean;
  /** With `force`, running calls end at once with `TP_ERR_CLOSED`. */
  close(options?: { force?: boolean }): Promise<void>;
}

/** How a worker call ended; faults are outcomes, never rejections. A tool's own throw has no `code`. */
export type WorkerCallOutcome = (
  | { kind: "ok"; result: AgentToolResult<unknown> }
  | { kind: "error"; message: string; code?: ErrorCode; thrown?: ThrownErrorFields }
) & {
  timing?: CallTiming;
};

export interface PoolStats {
  threads: number;
  running: number;
  queued: number;
  completed: number;
  /** Share (0..1) of `maxThreads` × the last 10 s that threads spent on calls. */
  utilization: number;
  sessionsWaiting: number;
  longestWaitMs: number;
}

export interface FleetStats {
  /** Live nodes serving the runtime's toolset, at the last look. */
  nodes: number;
  threads: number;
  inFlight: number;
  /** Nodes with the same hash of worker tools take the runtime's calls. */
  toolsetHash: string;
}

/** A waiting or running call, as {@link WorkerPool.diagnose} shows it. */
export interface PoolCallDiagnosis {
  tool: string;
  toolCallId: string;
  state: "waiting" | "running";
  threadId?: number;
  isAborted: boolean;
  /** Running, but its thread has not yet loaded the call's tool. */
  isLoading?: boolean;
}

export interface PoolDiagnosis {
  /** Piscina instances alive, the current one last. */
  generations: {
    threads: { threadId: number; isUsable: boolean; isBooted: boolean }[];
    queued: number;
    running: number;
    isLatched: boolean;
    isRetired: boolean;
  }[];
  /** 1 unless a worker loss needed a fresh Piscina. */
  generationsStarted: number;
  /** Workers lost before they finished starting, since the last one that did. */
  bootFailures: number;
  calls: PoolCallDiagnosis[];
}
