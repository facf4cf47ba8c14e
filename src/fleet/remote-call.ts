/**
 * A call of the fleet pool, and what goes with its BullMQ job.
 * @module
 */
import type { WorkerCallOutcome } from "../contracts/pool-contract.js";
import type { BookedCall } from "../workers/call-book.js";

/** BullMQ's `failedReason` for a job whose node was lost (BullMQ is pinned: test/pinned-dependencies.test.ts). */
export const lostNodeReason = /stalled|attempts started|started more than allowable/i;

/** BullMQ job states in which no node holds the job. */
export const waitingStates: ReadonlySet<string> = new Set(["waiting", "prioritized", "delayed"]);

const maxPriority = 2_097_151;

export interface RemoteCall extends BookedCall {
  readonly jobId: string;
  readonly resolve: (outcome: WorkerCallOutcome) => void;
  readonly sessionKey: unknown;
  /** After a node loss (idempotent tools only). */
  readonly retriesLeft: number;
  /** Submitted after its batch's abort: its node starts it aborted, as pi runs such a call. */
  readonly startsAborted: boolean;
  isAdded: boolean;
  isSettled: boolean;
  abortTimer: unknown;
  /** Known only while the pool's events are observed. */
  node?: string;
}

/**
 * A job's priority is its session's count of outstanding calls: every
 * session's k-th call goes before anyone's k+1-th (and none is 0, first of all).
 */
export class SessionTurns {
  readonly #outstanding = new Map<unknown, number>();

  /** The priority of a new job of `session`. */
  take(session: unknown): number {
    const outstanding = (this.#outstanding.get(session) ?? 0) + 1;
    this.#outstanding.set(session, outstanding);
    return Math.min(maxPriority, outstanding);
  }

  leave(session: unknown): void {
    const outstanding = (this.#outstanding.get(session) ?? 1) - 1;
    if (outstanding === 0) this.#outstanding.delete(session);
    else this.#outstanding.set(session, outstanding);
  }
}

/** Run once, gone once done; a failure is kept a while for inspection. */
export function jobOptions(jobId: string, priority: number) {
  return { jobId, priority, attempts: 1, removeOnComplete: true, removeOnFail: { age: 3_600, count: 1_000 } };
}
