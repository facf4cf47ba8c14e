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
