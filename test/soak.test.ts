import { describe, expect, it } from "vitest";

import { faultKinds, runSoak } from "./support/soak.js";

// `npm run soak` raises these (10,000 calls); `npm test` runs the short one.
const calls = Number(process.env.SOAK_CALLS ?? 2_000);
const seed = Number(process.env.SOAK_SEED ?? 20_261_202);

describe("soak", () => {
  it(
    `loses, duplicates and misattributes nothing over ${calls} calls with injected faults (seed ${seed})`,
    async () => {
      const report = await runSoak({ calls, seed, faultRate: 0.15, sessions: 4 });
      const faults = Object.values(report.faultsByKind).reduce((sum, count) => sum + count, 0);
      console.log(JSON.stringify({ ...report, wrongOutcomes: report.wrongOutcomes.slice(0, 10), healthyFailures: report.healthyFailures.slice(0, 10), faults }, null, 2));
      expect(report.calls).toBe(calls);
      expect(faults / calls).toBeGreaterThanOrEqual(0.1);
      for (const kind of faultKinds) expect(report.faultsByKind[kind], kind).toBeGreaterThan(0);
      expect(report.lost).toBe(0);
      expect(report.duplicated).toBe(0);
      expect(report.misattributed).toBe(0);
      expect(report.healthyFailed).toBe(0);
      expect(report.wrongOutcomes).toEqual([]);
      expect(report.rssEnd).toBeLessThanOrEqual(report.rssStart * 1.1);
    },
    Number(process.env.SOAK_TIMEOUT_MS ?? 120_000),
  );
});
