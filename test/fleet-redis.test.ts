import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { createRuntime, type Runtime } from "toolpool";

import fleetTools from "./fixtures/fleet/fleet-tools.mjs";
import { startNode, steadyCoordinator, stopNodes, type TestNode } from "./support/fleet.js";
import { hasRedisServer, startRedis, type TestRedis } from "./support/redis.js";
import { batchOf, codeOf, until } from "./support/helpers.js";

const toolsModule = new URL("./fixtures/fleet/fleet-tools.mjs", import.meta.url);
const redisTimeoutMs = 1_000;

describe.runIf(hasRedisServer())("fleet: Redis stopped mid-batch", () => {
  let redis: TestRedis;
  let dir: string;
  let nodes: TestNode[] = [];
  let runtime: Runtime;

  beforeAll(async () => {
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), "toolpool-fleet-redis-"));
    nodes = await Promise.all([1, 2].map((index) => startNode({ redis: redis.url, tools: toolsModule, name: `r${index}` })));
    runtime = createRuntime({
      tools: fleetTools,
      fleet: { redis: redis.url, ...steadyCoordinator, redisTimeoutMs },
    });
  });
  afterAll(async () => {
    await runtime?.close({ force: true });
    await stopNodes(nodes);
    await redis?.dispose();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("ends every call of the batch within the bound, and new batches work once Redis is back", async () => {
    const log = join(dir, "starts.log");
    const ids = ["c1", "c2", "c3", "c4", "c5", "c6"];
    const batch = runtime.executeToolCalls(batchOf(ids.map((id) => ({ id, arguments: { log, waitMs: 30_000 } }))));
    await until(() => {
      try {
        return readFileSync(log, "utf8").split("\n").filter(Boolean).length >= 2;
      } catch {
        return false;
      }
    }, "two calls started");
    const stoppedAt = Date.now();
    await redis.stop();
    const { messages } = await batch;
    const endedAfterMs = Date.now() - stoppedAt;
    console.log(`every call ended ${endedAfterMs} ms after Redis stopped (redisTimeoutMs ${redisTimeoutMs})`);
    expect(messages.map((message) => message.toolCallId)).toEqual(ids);
    expect(messages.map(codeOf)).toEqual(ids.map(() => "TP_ERR_FLEET_UNAVAILABLE"));
    // Generous factor: timers run late on a busy machine; what matters is that nothing waits for Redis.
    expect(endedAfterMs).toBeLessThan(redisTimeoutMs * 10);

    // While Redis is down, a new call ends at once.
    const meanwhile = await runtime.executeToolCalls(batchOf(["m1"].map((id) => ({ id, arguments: {} }))));
    expect(codeOf(meanwhile.messages[0]!)).toBe("TP_ERR_FLEET_UNAVAILABLE");

    await redis.restart();
    // The nodes come back on their own (they re-register); then calls run again.
    await until(
      async () => {
        const probe = await runtime.executeToolCalls(batchOf(["probe"].map((id) => ({ id, arguments: {} }))));
        return probe.messages[0]!.isError === false;
      },
      "the fleet served a call again",
      { limitMs: 20_000 },
    );
    const after = await runtime.executeToolCalls(batchOf(["a1", "a2", "a3", "a4"].map((id) => ({ id, arguments: { waitMs: 10 } }))));
    expect(after.messages.map((message) => (message.content[0] as { text: string }).text)).toEqual(["done a1", "done a2", "done a3", "done a4"]);
  }, 60_000);
});

describe.runIf(hasRedisServer())("fleet: Redis that stops answering without closing its connections", () => {
  let redis: TestRedis;
  let nodes: TestNode[] = [];
  let runtime: Runtime;

  beforeAll(async () => {
    redis = await startRedis();
    nodes = [await startNode({ redis: redis.url, tools: toolsModule, name: "p1" })];
    runtime = createRuntime({
      tools: fleetTools,
      fleet: { redis: redis.url, ...steadyCoordinator, redisTimeoutMs },
    });
  });
  afterAll(async () => {
    redis?.resume();
    await runtime?.close({ force: true });
    await stopNodes(nodes);
    await redis?.dispose();
  });

  it("ends calls with TP_ERR_FLEET_UNAVAILABLE instead of hanging, and serves again once Redis answers", async () => {
    const first = await runtime.executeToolCalls(batchOf(["w1"].map((id) => ({ id, arguments: { waitMs: 10 } }))));
    expect(first.messages[0]!.isError).toBe(false);
    redis.pause();
    const pausedAt = Date.now();
    const { messages } = await runtime.executeToolCalls(batchOf(["p1", "p2"].map((id) => ({ id, arguments: { waitMs: 10 } }))));
    const endedAfterMs = Date.now() - pausedAt;
    console.log(`calls ended ${endedAfterMs} ms after Redis was paused (redisTimeoutMs ${redisTimeoutMs})`);
    expect(messages.map(codeOf)).toEqual(["TP_ERR_FLEET_UNAVAILABLE", "TP_ERR_FLEET_UNAVAILABLE"]);
    expect(endedAfterMs).toBeLessThan(redisTimeoutMs * 10);
    redis.resume();
    await until(
      async () => {
        const probe = await runtime.executeToolCalls(batchOf(["probe"].map((id) => ({ id, arguments: { waitMs: 10 } }))));
        return probe.messages[0]!.isError === false;
      },
      "the fleet served a call again",
      { limitMs: 20_000 },
    );
  }, 60_000);
});
