/**
 * `CallTimers`: the deadlines after which a worker pool may end a call's thread.
 * @module
 */
import type { Clock } from "../clock.js";
import type { PoolCall } from "./pool-call.js";

/** Beyond a finished call's leftover grace: a busy main thread may read its reply late. */
const replyMarginMs = 5_000;

/** Before an abort's grace: a tool cannot hear its abort until its module has loaded, which can take longer. */
export const toolLoadGraceMs = 30_000;

export type Deadline = "timeout" | "aborted" | "preempted" | "reply-lost";

/** The timers live on the call, cleared when it leaves its thread; the pool decides what an expiry means. */
export class CallTimers {
  readonly #clock: Clock;
  readonly #abortGraceMs: number;
  readonly #onExpired: (call: PoolCall, deadline: Deadline) => void;
  readonly replyWaitMs: number;

  constructor(clock: Clock, options: { abortGraceMs: number; leftoverGraceMs: number }, onExpired: (call: PoolCall, deadline: Deadline) => void) {
    this.#clock = clock;
    this.#abortGraceMs = options.abortGraceMs;
    this.replyWaitMs = options.leftoverGraceMs + replyMarginMs;
    this.#onExpired = onExpired;
  }

  startTimeLimit(call: PoolCall): void {
    const { timeoutMs } = call.request.tool;
    if (timeoutMs !== undefined) call.timeoutTimer = this.#clock.setTimeout(() => this.#onExpired(call, "timeout"), timeoutMs);
  }

  /** On a thread still loading the tool, the load's allowance comes first. */
  startGrace(call: PoolCall): void {
    if (call.phase !== "running") return;
    const graceMs = this.#abortGraceMs + (call.isLoading ? toolLoadGraceMs : 0);
    call.graceTimer ??= this.#clock.setTimeout(() => this.#onExpired(call, "aborted"), graceMs);
  }

  /** The thread has loaded the tool: a grace under way counts from now. */
  restartGrace(call: PoolCall): void {
    if (!call.isAborted || call.phase !== "running" || call.graceTimer === undefined) return;
    this.#clock.clearTimeout(call.graceTimer);
    call.graceTimer = undefined;
    this.startGrace(call);
  }

  /** A spread part asked to give its thread back has an abort's grace to do so. */
  startYield(part: PoolCall): void {
    part.preemptTimer ??= this.#clock.setTimeout(() => {
      part.preemptTimer = undefined;
      this.#onExpired(part, "preempted");
    }, this.#abortGraceMs);
  }

  /** The tool finished, its reply on its way: only the reply wait runs now. */
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
