interface WatchedCall {
  readonly jobId: string;
  readonly enqueuedAt: number;
  readonly isAdded: boolean;
  readonly isSettled: boolean;
}

const goneStates = new Set(["unknown", "failed", "completed"]);

/**
 * The backstop for lost signals (QueueEvents is best-effort): a call older than `lockDurationMs + 2 × stalledIntervalMs`
 * whose job is gone, failed or completed with no end read, two passes in a row, was lost with its node. Passes never overlap.
 */
export class CallWatchdog<Call extends WatchedCall> {
  readonly #limitMs: number;
  readonly #now: () => number;
  readonly #missingPasses = new WeakMap<Call, number>();
  #isWatching = false;

  constructor(settings: { lockDurationMs: number; stalledIntervalMs: number }, now: () => number) {
    this.#limitMs = settings.lockDurationMs + 2 * settings.stalledIntervalMs;
    this.#now = now;
  }

  /** `onLost` gets the calls found gone twice in a row. */
  async pass(queue: { getJobState(jobId: string): Promise<string> }, calls: Iterable<Call>, onLost: (call: Call) => void): Promise<void> {
    if (this.#isWatching) return;
    this.#isWatching = true;
    try {
      const now = this.#now();
      for (const call of [...calls]) {
        if (call.isSettled || !call.isAdded || now - call.enqueuedAt < this.#limitMs) continue;
        const state = await queue.getJobState(call.jobId).catch(() => "error");
        const passes = goneStates.has(state) ? (this.#missingPasses.get(call) ?? 0) + 1 : 0;
        this.#missingPasses.set(call, passes);
        if (passes >= 2) onLost(call);
      }
    } finally {
      this.#isWatching = false;
    }
  }
}
