/**
 * A call of the worker pool as the main thread tracks it: a state
 * machine whose phase says where the call is, with what each phase needs.
 *
 * @module
 */
import type { AgentToolResult } from "../types.js";
import type { BookedCall } from "./call-book.js";
import type { QueuedCall } from "./call-queue.js";
import type { WorkerCallOutcome, WorkerCallRequest } from "../contracts/pool-contract.js";
import type { AbortMessage, WorkerReply } from "./protocol.js";
import type { PoolTool } from "./tool-numbering.js";

/**
 * Where a call is. `waiting`: for a thread (in the pool's queue, or parked by
 * session admission). `running`: on a thread. `finished`: its tool ended (the
 * worker's end mark said so at a deadline) and its reply is on its way, never
 * overtaken by a timeout. `replied`: its reply is held until the last partial
 * it announces arrives. `settled`: its outcome is given.
 */
type CallPhase = "waiting" | "running" | "finished" | "replied" | "settled";

/** A call of the pool, from `run` to its outcome. */
export interface PoolCall extends QueuedCall, BookedCall {
  readonly seq: number;
  readonly request: WorkerCallRequest;
  /** The call's tool, as numbered in this pool. */
  readonly tool: PoolTool;
  readonly resolve: (outcome: WorkerCallOutcome) => void;
  phase: CallPhase;
  /** The thread running the call, once dispatched. */
  threadId: number;
  /** When a thread was picked for it (the end of its queue wait); set once it left `waiting`. */
  startedAt: number | undefined;
  /** The run time the worker timed, from its reply. */
  runMs: number | undefined;
  /** Why the pool terminated the call's thread (`preempted`: a spread call's part that did not give its thread back when asked). */
  killReason: "timeout" | "aborted" | "preempted" | "reply-lost" | undefined;
  isAborted: boolean;
  /**
   * Running on a thread that had not answered a call of its tool, which may
   * be loading the tool's module: an abort's grace waits for the thread's
   * loaded message (within `toolLoadGraceMs`).
   */
  isLoading: boolean;
  /** The message that aborted it, for a thread that takes the call afterwards. */
  abortMessage: AbortMessage | undefined;
  updatesSeen: number;
  /** In `replied`: the worker's reply. */
  reply: WorkerReply | undefined;
  timeoutTimer: unknown;
  /** Its abort's grace: terminated when it runs out. */
  graceTimer: unknown;
  /** A spread part asked to yield: preempted when it runs out (see `WorkerPool`). */
  preemptTimer: unknown;
  /** The value of the tool's `context` function for this call, handed to the worker as `ctx.context`. */
  context: unknown;
}

/** A new call, `waiting`. */
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

/** The outcome a worker's reply gives. */
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
