import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

import type { Clock } from "toolpool";

import { resolveFleetOptions, type FleetOptions, RemotePool } from "./support/built.js";
import fleetTools from "./fixtures/fleet/fleet-tools.mjs";
import { FakeClock } from "./support/fake-clock.js";
import { startNode, steadyCoordinator, stopNodes, testLockMs, testStalledMs, type TestNode } from "./support/fleet.js";
import { startRedisProxy, type RedisProxy } from "./support/redis-proxy.js";
import { hasRedisServer, startRedis, type TestRedis } from "./support/redis.js";
import { until } from "./support/helpers.js";

const toolsModule = new URL("./fixtures/fleet/fleet-tools.mjs", import.meta.url);
const task = fleetTools[0]!;
const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
};
const abortGraceMs = 500;

describe.runIf(hasRedisServer())("RemotePool: outcomes that tell the truth, and bounds that hold", () => {
  let redis: TestRedis;
  let client: Redis;
  let dir: string;
  let nodes: TestNode[] = [];
  let pools: RemotePool[] = [];
  let proxy: RedisProxy | undefined;
  let fileCount = 0;
  const newFile = (name: string) => join(dir, `${name}-${++fileCount}`);
  const startedIn = (log: string) => (existsSync(log) ? readFileSync(log, "utf8") : "");

  // Steady locks for the node and the pools: none is lost here, and a starved
  // pool's presence key (lock + 2 × stall) must not lapse, or its node stops its calls.
  const remotePool = (fleet: Partial<FleetOptions> = {}, clock: Clock = realClock) => {
    const options = resolveFleetOptions({ redis: redis.url, ...steadyCoordinator, ...fleet });
    const pool = new RemotePool(options, fleetTools, { abortGraceMs, clock });
    pools.push(pool);
    return pool;
  };
  /** The end entries written to reply streams so far (a node writes one per call). */
  const endsWritten = async () => {
    let ends = 0;
    for (const key of await client.keys("toolpool:fleet:reply:*")) {
      for (const [, fields] of await client.xrange(key, "-", "+")) if (fields[fields.indexOf("k") + 1] === "e") ends += 1;
    }
    return ends;
  };

  beforeAll(async () => {
    redis = await startRedis();
    client = redis.client();
    dir = mkdtempSync(join(tmpdir(), "toolpool-fleet-outcomes-"));
    nodes = [await startNode({ redis: redis.url, tools: toolsModule, name: "o1" })];
  });
  afterEach(async () => {
    proxy?.releaseReplies();
    await Promise.all(pools.map((pool) => pool.close({ force: true })));
    pools = [];
    await proxy?.close();
    proxy = undefined;
    const streams = await client.keys("toolpool:fleet:reply:*");
    if (streams.length > 0) await client.del(...streams);
  });
  afterAll(async () => {
    await stopNodes(nodes);
    await redis?.dispose();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("the node's end, already in the reply stream, wins over the abort bound that fires while it is in transit", async () => {
    proxy = await startRedisProxy(redis.port);
    const clock = new FakeClock();
    const pool = remotePool({ redis: proxy.url, abortSlackMs: 1_000 }, clock);
    const log = newFile("starts");
    const controller = new AbortController();
    const outcome = pool.run({ tool: task, toolCallId: "c1", args: { log, gateFile: join(dir, "never") }, signal: controller.signal });
    await until(() => startedIn(log).includes("c1 "), "c1 started");
    const endsBefore = await endsWritten();
    // What Redis sends the blocking reader stays in transit; the node answers the abort.
    proxy.holdReplies();
    controller.abort();
    await until(async () => (await endsWritten()) > endsBefore, "the node wrote c1's end");
    clock.advance(abortGraceMs + 1_000);
    expect(await outcome).toMatchObject({ kind: "error", message: "aborted c1" });
  }, 60_000);

  it("the node's end, already in the reply stream, wins over the watchdog that finds the job gone", async () => {
    proxy = await startRedisProxy(redis.port);
    // The short settings bring the watchdog's look (lockDurationMs + 2 × stalledIntervalMs) near; the
    // node keeps its steady lock, so a starved node cannot lose the call instead.
    const pool = remotePool({ redis: proxy.url, lockDurationMs: testLockMs, stalledIntervalMs: testStalledMs });
    // The first call connects the pool; then the reader's deliveries are held back.
    expect(await pool.run({ tool: task, toolCallId: "c0", args: {} })).toMatchObject({ kind: "ok" });
    proxy.holdReplies();
    const endsBefore = await endsWritten();
    const outcome = pool.run({ tool: task, toolCallId: "c1", args: { waitMs: 1 } });
    await until(async () => (await endsWritten()) > endsBefore, "the node wrote c1's end");
    // The job is gone (removed on completion) and its end unread: the watchdog looks after lockDurationMs + 2 × stalledIntervalMs.
    const result = await outcome;
    expect(result).toMatchObject({ kind: "ok", result: { content: [{ type: "text", text: "done c1" }] } });
  }, 60_000);

  it("a call whose tool finished while its batch's abort waited for Redis is reported as what it returned, not as taken back", async () => {
    proxy = await startRedisProxy(redis.port);
    const pool = remotePool({ redis: proxy.url, redisTimeoutMs: 30_000, abortSlackMs: 1_000 });
    const log = newFile("starts");
    const gate = newFile("gate");
    const controller = new AbortController();
    const outcome = pool.run({ tool: task, toolCallId: "c1", args: { log, gateFile: gate }, signal: controller.signal });
    await until(() => startedIn(log).includes("c1 "), "c1 started");
    proxy.cut();
    await until(() => proxy!.sawWhileCut("toolpool-coordinator"), "the coordinator reconnecting");
    // The abort waits for Redis; meanwhile the tool finishes and its job is gone (removed on completion).
    controller.abort();
    const endsBefore = await endsWritten();
    writeFileSync(gate, "");
    await until(async () => (await endsWritten()) > endsBefore, "the node wrote c1's end");
    // Back, the abort is announced and the batch's waiting calls are taken back; the end is still in transit.
    proxy.holdReplies();
    proxy.restore();
    expect(await outcome).toMatchObject({ kind: "ok", result: { content: [{ type: "text", text: "done c1" }] } });
  }, 60_000);

  it("a partial's XADD gives the reply stream an expiry, as the end's does", async () => {
    const pool = remotePool();
    const log = newFile("starts");
    let partials = 0;
    const controller = new AbortController();
    const outcome = pool.run({
      tool: task,
      toolCallId: "c1",
      args: { log, updates: 1, gateFile: join(dir, "never") },
      signal: controller.signal,
      onUpdate: () => void (partials += 1),
    });
    await until(() => partials === 1, "c1's partial arrived");
    const [key] = await client.keys("toolpool:fleet:reply:*");
    const ttlMs = await client.pttl(key!);
    controller.abort();
    expect(await outcome).toMatchObject({ kind: "error", message: "aborted c1" });
    expect(ttlMs).toBeGreaterThan(0);
  }, 60_000);

  it("maxOutstanding holds for calls started in the same tick", async () => {
    const pool = remotePool({ maxOutstanding: 2 });
    const outcomes = await Promise.all(Array.from({ length: 6 }, (_, index) => pool.run({ tool: task, toolCallId: `c${index}`, args: {} })));
    const codes = outcomes.map((outcome) => (outcome.kind === "ok" ? "ok" : outcome.code));
    expect(codes.filter((code) => code === "ok")).toHaveLength(2);
    expect(codes.filter((code) => code === "TP_ERR_QUEUE_FULL")).toHaveLength(4);
  }, 60_000);
});
