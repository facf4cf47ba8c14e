import type { CallTiming } from "../contracts/call-timing.js";

/** A call's queue wait and run time, in milliseconds, with where it ran. */
export interface CallDurations {
  /** 0 for an inline tool. */
  queueWaitMs: number;
  /** As its thread timed it when it replied, else from the thread's pick until the outcome (0 if it never reached one). */
  runMs: number;
  threadId?: number;
  node?: string;
}

/** Never negative. */
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
