/** The frames of `GET /v1/pool/events`, the stream behind the live view, for any dashboard that reads it. */
import type { FleetStats, PoolStats } from "../../contracts/pool-contract.js";

/** The first frame of every stream. */
export interface PoolEventsHelloFrame {
  type: "hello";
  /** Milliseconds between two snapshots (and two flushes of ended calls). */
  intervalMs: number;
  /** Most ended calls held for one client between two flushes; older ones are dropped and counted. */
  maxPendingCalls: number;
  tools: string[];
}

/** How a call ended: its result was not an error, an error of the tool (or of its preparation), or a fault with a code. */
export type PoolCallOutcome = "ok" | "error" | "fault";

/** One call that ended (its `tool_execution_end`). */
export interface PoolCallRecord {
  batchId: string;
  /** The call's id (cut to 256 characters). */
  toolCallId: string;
  /** The tool's name (cut to 128 characters: an unknown tool's name is the client's). */
  tool: string;
  /** The batch's session key; absent for a batch without one (it is a session of its own). */
  session?: string;
  outcome: PoolCallOutcome;
  /** For a fault: its code (`TP_ERR_WORKER_CRASH`, …). */
  code?: string;
  /** For an error or a fault: the start of the result's text (at most 200 characters). */
  message?: string;
  /** The thread that ran it (on `node`, for a fleet's call). */
  threadId?: number;
  node?: string;
  /** Milliseconds it waited for a thread; absent when it was never dispatched. */
  queueWaitMs?: number;
  /** Milliseconds it ran; absent when it was never dispatched. */
  runMs?: number;
  endedAt: number;
}

/** Calls ended since the client's last `calls` frame, oldest first; `dropped` counts those left out while it lagged. */
export interface PoolCallsFrame {
  type: "calls";
  calls: PoolCallRecord[];
  dropped: number;
}

/**
 * What a thread does: runs a call, waits for one, or is gone. No snapshot sends `"starting"` any more (thread
 * events name a thread once it may take calls); it stays in the union for the pages that know it.
 */
export type PoolThreadState = "busy" | "idle" | "starting" | "retired";

export interface PoolRunningCall {
  tool: string;
  toolCallId: string;
  batchId?: string;
  session?: string;
}

export interface PoolThreadView {
  /** The pool: `"shared"`, or the name of a tool with resource limits of its own. */
  pool: string;
  threadId: number;
  state: PoolThreadState;
  /** The call it runs, when busy; the last one it ran, when retired. */
  call?: PoolRunningCall;
}

/** A session with calls under way. A batch without a session key is a session of its own, named by its `batchId`. */
export interface PoolSessionView {
  session?: string;
  batchId?: string;
  waiting: number;
  /** Calls waiting for a cap (`maxConcurrency`, `maxConcurrencyPerSession`): started, not yet handed to a pool or run. */
  capped: number;
  running: number;
  /** Milliseconds its longest-waiting call (for a thread or a cap) has been under way; 0 when none waits. */
  longestWaitMs: number;
}

/** The calls of one tool that ended since the stream's first watcher connected. */
export interface PoolToolView {
  tool: string;
  count: number;
  errors: number;
  faults: Record<string, number>;
  /** Median and 99th percentile of the run time of its last dispatched calls; absent before any. */
  p50RunMs?: number;
  p99RunMs?: number;
}

/** A recent fault: a faulted call, or a worker failure that belonged to no call (`pool_error`). */
export interface PoolFaultView {
  at: number;
  code?: string;
  message: string;
  tool?: string;
  toolCallId?: string;
  session?: string;
  threadId?: number;
}

/** The pool's state, sent every `intervalMs` (a client that falls behind gets only the latest). */
export interface PoolSnapshotFrame {
  type: "snapshot";
  at: number;
  /** The local pools' stats, added up; `null` without worker tools. */
  stats: PoolStats | null;
  fleet: FleetStats | null;
  /** Local worker threads, and a few recently retired ones. */
  threads: PoolThreadView[];
  /** Sessions with calls under way, most waiting first. */
  sessions: PoolSessionView[];
  sessionsOmitted: number;
  tools: PoolToolView[];
  /** The recent faults, newest last. */
  faults: PoolFaultView[];
}

/** Any frame of the stream; its SSE `event:` field is its `type`. */
export type PoolEventFrame = PoolEventsHelloFrame | PoolCallsFrame | PoolSnapshotFrame;
