import type { CallTiming } from "../contracts/call-timing.js";

/** A call's queue wait and run time, in milliseconds, with where it ran. */
export interface CallDurations {
  /** From submission to the pool until a thread was picked (0 for an inline tool). */
  queueWaitMs: number;
  /**
   * How long the tool ran: as its thread timed it when it replied, else from
   * the thread's pick until the outcome was known (a crash, a timeout; 0 for
   * a call that never reached a thread).
   */
  runMs: number;
  threadId?: number;
  node?: string;
}

/** The durations of a {@link CallTiming}; never negative. */
export function toCallDurations(timing: CallTiming): CallDurations {
  const startedAt = timing.startedAt ?? timing.endedAt;
  const durations: CallDurations = {
    queueWaitMs: Math.max(0, startedAt - timing.submittedAt),
    runMs: timing.runMs ?? Math.max(0, timing.endedAt - startedAt),
  };
  if (timing.threadId !== undefined) durations.threadId = timing.threadId;
  if (timing.node !== undefined) durations.node = timing.node;
  return durations;
}
