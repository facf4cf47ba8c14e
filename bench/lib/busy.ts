import { threadId } from "node:worker_threads";

/**
 * The deterministic CPU work of suite 1: an xorshift32 loop folded into a
 * 32-bit hash. Pure JS, no allocation, so every contender (main thread or
 * worker) does exactly the same work for the same iteration count.
 */
export function spin(iterations: number): number {
  let x = 0x9e3779b9 | 0;
  let h = 0x811c9dc5 | 0;
  for (let i = 0; i < iterations; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    h = Math.imul(h ^ x, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Finds the iteration count that takes `targetMs` on this thread: warms the
 * JIT, then rescales from the median of a few timed runs. Done once; every
 * contender then uses the same count.
 */
export function calibrateSpin(targetMs: number): { iterations: number; measuredMs: number } {
  let iterations = 1_000_000;
  spin(iterations); // warm-up: let the loop reach optimized code
  for (let round = 0; round < 4; round++) {
    iterations = Math.max(1000, Math.round((iterations * targetMs) / medianOfThreeSpins(iterations)));
  }
  return { iterations, measuredMs: medianOfThreeSpins(iterations) };
}

/** The median wall time of three spins of `iterations`, in ms. */
function medianOfThreeSpins(iterations: number): number {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    spin(iterations);
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return Math.max(times[1]!, 0.001); // never 0: it divides
}

/** Where and when one spin call ran: epoch ms, comparable across threads. */
export interface SpinTrace {
  hash: number;
  threadId: number;
  startedAt: number;
  endedAt: number;
}

/** A tool result carrying the hash as text and the call's trace as details. */
export interface SpinResult {
  content: { type: "text"; text: string }[];
  details: SpinTrace;
}

/** One spin call as every contender runs it, traced so a batch's timeline can be checked. */
export function runSpinCall(iterations: number): SpinResult {
  const startedAt = performance.timeOrigin + performance.now();
  const hash = spin(iterations);
  const endedAt = performance.timeOrigin + performance.now();
  return { content: [{ type: "text", text: String(hash) }], details: { hash, threadId, startedAt, endedAt } };
}
