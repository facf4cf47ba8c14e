/**
 * `CallTimers`: the deadlines of a worker pool's running calls, after which
 * the pool may terminate a call's thread.
 *
 * @module
 */
import type { Clock } from "../clock.js";
import type { PoolCall } from "./pool-call.js";

/** Beyond a call's leftover grace, how long the reply of a finished call may take to be read. */
const replyMarginMs = 5_000;

/**
 * How long an aborted call's thread may take to load the call's tool before
 * its grace starts: a tool cannot hear its abort before its module has
 * loaded, which for a large module on a busy machine takes longer than the
 * grace. A module whose load hangs still ends the call, this much later.
 */
export const toolLoadGraceMs = 30_000;

/** Which deadline ran out: the tool's time limit, an abort's grace, a part's time to yield, or a finished call's reply wait. */
export type Deadline = "timeout" | "aborted" | "preempted" | "reply-lost";

/**
 * A call's timers live on the call (`timeoutTimer`, `graceTimer`,
 * `preemptTimer`), each cleared when the call leaves its thread; the pool
 * decides what an expiry means.
 */
export class CallTimers {
  readonly #clock: Clock;
  readonly #abortGraceMs: number;
  readonly #onExpired: (call: PoolCall, deadline: Deadline) => void;
  /** How long a finished call's reply may take to arrive: its leftover work's grace, and a margin for a busy main thread. */
  readonly replyWaitMs: number;

  constructor(clock: Clock, options: { abortGraceMs: number; leftoverGraceMs: number }, onExpired: (call: PoolCall, deadline: Deadline) => void) {
    this.#clock = clock;
    this.#abortGraceMs = options.abortGraceMs;
    this.replyWaitMs = options.leftoverGraceMs + replyMarginMs;
    this.#onExpired = onExpired;
  }

  /** The call's tool time limit, counted from its start now. */
  startTimeLimit(call: PoolCall): void {
    const { timeoutMs } = call.request.tool;
    if (timeoutMs !== undefined) call.timeoutTimer = this.#clock.setTimeout(() => this.#onExpired(call, "timeout"), timeoutMs);
  }

  /** An aborted running call's time to stop; on a thread still loading its tool, the load's allowance first. */
  startGrace(call: PoolCall): void {
    if (call.phase !== "running") return;
    const graceMs = this.#abortGraceMs + (call.isLoading ? toolLoadGraceMs : 0);
    call.graceTimer ??= this.#clock.setTimeout(() => this.#onExpired(call, "aborted"), graceMs);
  }

  /** The call's thread has loaded its tool: a grace under way counts from now. */
  restartGrace(call: PoolCall): void {
    if (!call.isAborted || call.phase !== "running" || call.graceTimer === undefined) return;
    this.#clock.clearTimeout(call.graceTimer);
    call.graceTimer = undefined;
    this.startGrace(call);
  }

  /** A part of a spread call asked to give its thread back; preempted if it has not once an abort's grace has passed. */
  startYield(part: PoolCall): void {
    part.preemptTimer ??= this.#clock.setTimeout(() => {
      part.preemptTimer = undefined;
      this.#onExpired(part, "preempted");
    }, this.#abortGraceMs);
  }

  /** The call's tool finished and its reply is on its way: only the reply wait runs now. */
  awaitReply(call: PoolCall): void {
    this.clear(call);
    call.timeoutTimer = this.#clock.setTimeout(() => this.#onExpired(call, "reply-lost"), this.replyWaitMs);
  }

  clear(call: PoolCall): void {
    if (call.timeoutTimer !== undefined) this.#clock.clearTimeout(call.timeoutTimer);
    if (call.graceTimer !== undefined) this.#clock.clearTimeout(call.graceTimer);
    if (call.preemptTimer !== undefined) this.#clock.clearTimeout(call.preemptTimer);
    call.timeoutTimer = undefined;
    call.graceTimer = undefined;
    call.preemptTimer = undefined;
  }
}
