/**
 * How busy a pool's threads were over the last seconds, for `utilization`.
 *
 * @module
 */

const utilizationWindowSeconds = 10;

const bucketMs = 1000;

/** One slot per second, so memory and the cost of a call's end are fixed; running calls are added when asked. */
export class BusyWindow {
  readonly #createdAt: number;
  /** Slot `second % slots.length` holds that second's busy milliseconds. */
  readonly #seconds: number[];
  readonly #busyMs: number[];

  constructor(createdAt: number) {
    this.#createdAt = createdAt;
    const slots = utilizationWindowSeconds + 1;
    this.#seconds = new Array<number>(slots).fill(Number.NEGATIVE_INFINITY);
    this.#busyMs = new Array<number>(slots).fill(0);
  }

  addRun(start: number, end: number, now: number): void {
    const oldest = Math.floor(now / bucketMs) - utilizationWindowSeconds;
    for (let second = Math.max(Math.floor(start / bucketMs), oldest); second * bucketMs < end; second++) {
      const overlap = Math.min(end, (second + 1) * bucketMs) - Math.max(start, second * bucketMs);
      if (overlap > 0) this.#add(second, overlap);
    }
  }

  /** The share of `maxThreads` threads' time spent on calls over the window ending `now`. */
  utilization(now: number, maxThreads: number, runningSince: Iterable<number>): number {
    const newest = Math.floor(now / bucketMs);
    const from = Math.max(this.#createdAt, (newest - utilizationWindowSeconds) * bucketMs);
    const capacityMs = (now - from) * maxThreads;
    if (capacityMs <= 0) return 0;
    let busyMs = 0;
    for (let i = 0; i < this.#seconds.length; i++) {
      const second = this.#seconds[i]!;
      if (second >= newest - utilizationWindowSeconds && second <= newest) busyMs += this.#busyMs[i]!;
    }
    for (const start of runningSince) busyMs += now - Math.max(start, from);
    return Math.min(1, busyMs / capacityMs);
  }

  #add(second: number, ms: number): void {
    const slot = ((second % this.#seconds.length) + this.#seconds.length) % this.#seconds.length;
    if (this.#seconds[slot] !== second) {
      this.#seconds[slot] = second;
      this.#busyMs[slot] = 0;
    }
    this.#busyMs[slot]! += ms;
  }
}
