import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { runFleetSoak } from "./support/fleet-soak.js";
import { hasRedisServer, startRedis, type TestRedis } from "./support/redis.js";

// Run by `npm run soak` only (vitest.config.ts adds this file's project when TOOLPOOL_FLEET_SOAK is set).
const calls = Number(process.env.FLEET_SOAK_CALLS ?? 2_000);
const seed = Number(process.env.SOAK_SEED ?? 20_261_202);

describe.runIf(hasRedisServer())("fleet soak", () => {
  let redis: TestRedis;
  let dir: string;
  beforeAll(async () => {
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), "toolpool-fleet-soak-"));
  });
  afterAll(async () => {
    await redis?.dispose();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it(
    `gives every one of ${calls} remote calls exactly one result and starts none twice, while nodes are killed and replaced (seed ${seed})`,
    async () => {
      const report = await runFleetSoak({ redisUrl: redis.url, dir, calls, seed, sessions: 4, nodes: 3, killEveryMs: 700 });
      console.log(JSON.stringify({ ...report, startedTwice: report.startedTwice.slice(0, 10), wrong: report.wrong.slice(0, 10) }, null, 2));
      expect(report.calls).toBe(calls);
      expect(report.kills).toBeGreaterThan(0);
      expect(report.lost).toBe(0);
      expect(report.duplicated).toBe(0);
      expect(report.startedTwice).toEqual([]);
      expect(report.wrong).toEqual([]);
      expect(report.ok + report.nodeLost + report.unavailable).toBe(calls);
    },
    Number(process.env.SOAK_TIMEOUT_MS ?? 600_000),
  );
});
