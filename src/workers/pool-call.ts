/**
 * A call of the worker pool as the main thread tracks it.
 * @module
 */
import type { AgentToolResult } from "../types.js";
import type { BookedCall } from "./call-book.js";
import type { QueuedCall } from "./call-queue.js";
import type { WorkerCallOutcome, WorkerCallRequest } from "../contracts/pool-contract.js";
import type { AbortMessage, WorkerReply } from "./protocol.js";
import type { PoolTool } from "./tool-numbering.js";

/**
 * `waiting` for a thread (queued, or parked by session admission);
 * `finished`: its tool ended at a deadline, and its reply is on its way;
 * `replied`: its reply is held until the last partial it announces arrives.
 */
type CallPhase = "waiting" | "running" | "finished" | "replied" | "settled";

export interface PoolCall extends QueuedCall, BookedCall {
  readonly seq: number;
  readonly request: WorkerCallRequest;
  readonly tool: PoolTool;
  readonly resolve: (outcome: WorkerCallOutcome) => void;
  phase: CallPhase;
  /** 0 until it leaves `waiting`. */
  threadId: number;
  startedAt: number | undefined;
  runMs: number | undefined;
  /** Why the pool terminated the call's thread. */
  killReason: "timeout" | "aborted" | "preempted" | "reply-lost" | undefined;
  isAborted: boolean;
  /** On a thread that may be loading its tool: an abort's grace waits for the load. */
  isLoading: boolean;
  /** The message that aborted it, for a thread that takes the call afterwards. */
  abortMessage: AbortMessage | undefined;
  updatesSeen: number;
  reply: WorkerReply | undefined;
  timeoutTimer: unknown;
  graceTimer: unknown;
  preemptTimer: unknown;
  context: unknown;
}

export function createPoolCall(
  seq: number,
  request: WorkerCallRequest,
  tool: PoolTool,
  session: unknown,
  now: number,
  resolve: (outcome: WorkerCallOutcome) => void,
): PoolCall {
  return {
    seq,
    tool,
    phase: "waiting",
    session,
    cost: request.tool.cost,
    enqueuedAt: now,
    request,
    resolve,
    threadId: 0,
    startedAt: undefined,
    runMs: undefined,
    killReason: undefined,
    isAborted: false,
    isLoading: false,
    abortMessage: undefined,
    updatesSeen: 0,
    reply: undefined,
    timeoutTimer: undefined,
    graceTimer: undefined,
    preemptTimer: undefined,
    context: undefined,
  };
}

export function outcomeOf(reply: WorkerReply): WorkerCallOutcome {
  switch (reply.kind) {
    case "ok":
      return { kind: "ok", result: reply.result as AgentToolResult<unknown> };
    case "error":
      return reply.thrown === undefined ? { kind: "error", message: reply.message } : { kind: "error", message: reply.message, thrown: reply.thrown };
    case "fault":
      return { kind: "error", message: reply.message, code: reply.code };
  }
}
