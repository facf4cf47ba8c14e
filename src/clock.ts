/**
 * The source of time for timeouts and grace periods. Injectable so that tests
 * can drive time; the default is the real one.
 */
export interface Clock {
  /** Milliseconds, monotonic. */
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The real clock: `performance.now()` and the global timers (unref'd, so a pending timer never holds the process open). */
export const systemClock: Clock = Object.freeze({
  now: () => performance.now(),
  setTimeout: (callback: () => void, ms: number) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout),
});

/** A task that `every` runs again and again until stopped. */
export interface Repeating {
  stop(): void;
}

/**
 * Runs `task` every `ms` on `clock` (the next run is set once the task has
 * run, so a slow task never overlaps itself), until stopped.
 */
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
