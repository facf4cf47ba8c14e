/** The source of time for timeouts and grace periods, injectable so that tests drive time. */
export interface Clock {
  /** Monotonic milliseconds. */
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Timers unref'd, so a pending timer never holds the process open. */
export const systemClock: Clock = Object.freeze({
  now: () => performance.now(),
  setTimeout: (callback: () => void, ms: number) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout),
});

export interface Repeating {
  stop(): void;
}

/** The next run is set once the task has run, so a slow task never overlaps itself. */
export function every(clock: Clock, ms: number, task: () => void): Repeating {
  let timer: unknown;
  let isStopped = false;
  const run = (): void => {
    if (isStopped) return;
    try {
      task();
    } finally {
      if (!isStopped) timer = clock.setTimeout(run, ms);
    }
  };
  timer = clock.setTimeout(run, ms);
  return {
    stop: () => {
      isStopped = true;
      clock.clearTimeout(timer);
    },
  };
}
