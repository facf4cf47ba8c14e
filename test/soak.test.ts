import { randomInt } from "node:crypto";

import { describe, expect, it } from "vitest";

import { faultKinds, runSoak } from "./support/soak.js";

// `npm run soak` raises these (10,000 calls); `npm test` runs the short one.
const calls = Number(process.env.SOAK_CALLS ?? 2_000);
// A new seed each run, so runs explore different interleavings; SOAK_SEED replays one.
const seed = process.env.SOAK_SEED === undefined ? randomInt(2 ** 31) : Number(process.env.SOAK_SEED);
const timeoutMs = Number(process.env.SOAK_TIMEOUT_MS ?? 240_000);

describe("soak", () => {
  it(
    `loses, duplicates and misattributes nothing over ${calls} calls with injected faults (seed ${seed}; replay with SOAK_SEED=${seed})`,
    async () => {
      console.log(`soak: ${calls} calls, seed ${seed} (replay with SOAK_SEED=${seed})`);
      // Prints the pools' state and the batches in flight shortly before the time limit.
      const report = await runSoak({ calls, seed, faultRate: 0.15, sessions: 4, watchdogMs: Math.max(timeoutMs - 10_000, timeoutMs * 0.9) });
      const faults = Object.values(report.faultsByKind).reduce((sum, count) => sum + count, 0);
      console.log(
        JSON.stringify(
          { seed, ...report, wrongOutcomes: report.wrongOutcomes.slice(0, 10), healthyFailures: report.healthyFailures.slice(0, 10), faults },
          null,
          2,
        ),
      );
      const context = `seed ${seed}`;
      expect(report.calls, context).toBe(calls);
      expect(faults / calls, context).toBeGreaterThanOrEqual(0.1);
      for (const kind of faultKinds) expect(report.faultsByKind[kind], `${kind}, ${context}`).toBeGreaterThan(0);
      expect(report.lost, context).toBe(0);
      expect(report.duplicated, context).toBe(0);
      expect(report.misattributed, context).toBe(0);
      expect(report.healthyFailed, context).toBe(0);
      expect(report.wrongOutcomes, context).toEqual([]);
      // The leak check: objects the runtime still holds after the soak, with the
      // runtime closed and a last-resort collection done. The process RSS also
      // holds the allocator's and V8's retained pages, whose amount varies by
      // Node version and machine load (Node 26 under a parallel CI run: +10%
      // with a flat heap), so RSS is only bounded against gross growth.
      expect(report.heapEnd, context).toBeLessThanOrEqual(report.heapStart * 1.1);
      expect(report.rssEnd, context).toBeLessThanOrEqual(report.rssStart * 1.25);
    },
    timeoutMs,
  );
});
