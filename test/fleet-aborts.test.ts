import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect } from "vitest";

import { createRuntime, type ToolResultMessage } from "toolpool";

import fleetTools from "./fixtures/fleet/fleet-tools.mjs";
import { startNode, steadyCoordinator, stopNodes, watchfulCoordinator, type TestNode } from "./support/fleet.js";
import { startRedisProxy, type RedisProxy } from "./support/redis-proxy.js";
import { hasRedisServer, startRedis, type TestRedis } from "./support/redis.js";
import { batchOf, codeOf, textOf, until } from "./support/helpers.js";
import { builtCliPath } from "./support/build-paths.js";
import { closeRuntimesNow, open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest({ force: true });

const toolsModule = new URL("./fixtures/fleet/fleet-tools.mjs", import.meta.url);
const coordinatorScript = fileURLToPath(new URL("./fixtures/fleet/coordinator.mjs", import.meta.url));
const cli = builtCliPath;

/** The ids of the calls whose tool started, in the order they started (one line per start). */
function startedIn(log: string): string[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => line.split(" ")[0]!);
}

/** A child process and its stdout so far. */
function spawnWithOutput(args: string[]): { child: ChildProcess; stdout: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.resume();
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, stdout: () => stdout, exited };
}

describe.runIf(hasRedisServer())("fleet: a call nobody waits for never starts", () => {
  let redis: TestRedis;
  let client: Redis;
  let dir: string;
  let nodes: TestNode[] = [];
  let children: ChildProcess[] = [];
  let proxy: RedisProxy | undefined;
  let fileCount = 0;
  const newFile = (name: string) => join(dir, `${name}-${++fileCount}`);

  /** One node of one thread (steady locks: no test here loses it): one call runs, the others wait in the queue. */
  const spawnNode = async () => {
    const node = await startNode({ redis: redis.url, tools: toolsModule, name: `a${nodes.length + 1}` });
    nodes.push(node);
    return node;
  };
  /** Jobs of the node's toolset waiting in the queue (BullMQ keeps prioritized jobs in a sorted set) and running. */
  const queueCounts = async (node: TestNode) => {
    const queue = `toolpool:tp-${/toolset=([0-9a-f]{16})/.exec(node.readyLine)![1]}`;
    const [waiting, running] = await Promise.all([client.zcard(`${queue}:prioritized`), client.llen(`${queue}:active`)]);
    return { waiting, running };
  };
  /** Until the node's queue holds no call, waiting or running. */
  const untilDrained = (node: TestNode) =>
    until(
      async () => {
        const counts = await queueCounts(node);
        return counts.waiting === 0 && counts.running === 0;
      },
      "the queue drained",
      { limitMs: 20_000 },
    );
  /** Four calls: the first waits for a file that never comes (until aborted); the others are quick. */
  const fourCalls = (log: string, abortLog: string) => [
    { id: "c1", arguments: { log, abortLog, gateFile: join(dir, "never") } },
    ...["c2", "c3", "c4"].map((id) => ({ id, arguments: { log, waitMs: 10 } })),
  ];

  beforeAll(async () => {
    redis = await startRedis();
    client = redis.client();
    dir = mkdtempSync(join(tmpdir(), "toolpool-fleet-aborts-"));
  });
  afterEach(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    children = [];
    // Before the proxy and the nodes go: a runtime closes through them.
    await closeRuntimesNow({ force: true });
    await proxy?.close();
    proxy = undefined;
    await stopNodes(nodes);
    nodes = [];
    await client.flushall();
  });
  afterAll(async () => {
    await redis?.dispose();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("a coordinator SIGKILLed with 4 calls on a 1-thread node: the 3 waiting calls never start once its presence key expired", async () => {
    const node = await spawnNode();
    const log = newFile("starts");
    const gate = newFile("gate");
    const calls = [{ id: "c1", arguments: { log, gateFile: gate } }, ...["c2", "c3", "c4"].map((id) => ({ id, arguments: { log, waitMs: 10 } }))];
    // Its presence key lives lockDurationMs + 2 × stalledIntervalMs: long enough to outlast a starved second while it runs.
    const { lockDurationMs, stalledIntervalMs } = watchfulCoordinator;
    const coordinator = spawnWithOutput([coordinatorScript, redis.url, String(lockDurationMs), String(stalledIntervalMs), JSON.stringify(calls)]);
    children.push(coordinator.child);
    await until(() => startedIn(log).includes("c1"), "c1 started");
    await until(async () => (await queueCounts(node)).waiting === 3, "3 calls waiting");
    coordinator.child.kill("SIGKILL");
    await coordinator.exited;
    // Its presence in Redis lapses (within lockDurationMs + 2 × stalledIntervalMs); then the running call may end.
    await until(async () => (await client.keys("toolpool:fleet:coordinator:*")).length === 0, "the coordinator's presence lapsed", {
      limitMs: 3 * (lockDurationMs + 2 * stalledIntervalMs),
    });
    writeFileSync(gate, "");
    await untilDrained(node);
    const others = startedIn(log).filter((id) => id !== "c1");
    console.log(`calls of the SIGKILLed coordinator that started after it died: ${others.length} of 3`);
    expect(startedIn(log)).toEqual(["c1"]);
  }, 60_000);

  it("a coordinator SIGKILLed with 4 calls on a 1-thread node: the 3 waiting calls never start, while its presence key still lives", async () => {
    // Production settings: the presence key outlives the kill by lockDurationMs + 2 × stalledIntervalMs = 20 s.
    const [lockMs, stalledMs] = [10_000, 5_000];
    const node = await startNode({ redis: redis.url, tools: toolsModule, name: "k1", lockMs, stalledMs });
    nodes.push(node);
    const log = newFile("starts");
    const gate = newFile("gate");
    const calls = [{ id: "c1", arguments: { log, gateFile: gate } }, ...["c2", "c3", "c4"].map((id) => ({ id, arguments: { log, waitMs: 10 } }))];
    const coordinator = spawnWithOutput([coordinatorScript, redis.url, String(lockMs), String(stalledMs), JSON.stringify(calls)]);
    children.push(coordinator.child);
    await until(() => startedIn(log).includes("c1"), "c1 started");
    await until(async () => (await queueCounts(node)).waiting === 3, "3 calls waiting");
    coordinator.child.kill("SIGKILL");
    await coordinator.exited;
    // The running call ends at once; the node then fetches the three others.
    writeFileSync(gate, "");
    await untilDrained(node);
    const [presenceKey] = await client.keys("toolpool:fleet:coordinator:*");
    // Not the key's expiry: Redis saw the coordinator's connections close.
    expect(presenceKey).toBeDefined();
    expect(await client.pttl(presenceKey!)).toBeGreaterThan(0);
    const others = startedIn(log).filter((id) => id !== "c1");
    console.log(`calls of the SIGKILLed coordinator that started after it died, its presence key alive: ${others.length} of 3`);
    expect(startedIn(log)).toEqual(["c1"]);
  }, 60_000);

  it("a running call whose coordinator died is aborted on its node", async () => {
    await spawnNode();
    const log = newFile("starts");
    const abortLog = newFile("aborts");
    // Its presence key lives lockDurationMs + 2 × stalledIntervalMs after the kill: 9 s, well within the wait below.
    const coordinator = spawnWithOutput([
      coordinatorScript,
      redis.url,
      String(watchfulCoordinator.lockDurationMs),
      String(watchfulCoordinator.stalledIntervalMs),
      JSON.stringify([{ id: "c1", arguments: { log, abortLog, gateFile: join(dir, "never") } }]),
    ]);
    children.push(coordinator.child);
    await until(() => startedIn(log).includes("c1"), "c1 started");
    coordinator.child.kill("SIGKILL");
    await until(() => existsSync(abortLog) && readFileSync(abortLog, "utf8").includes("c1 aborted"), "the node aborted c1", { limitMs: 30_000 });
    expect(nodes[0]!.stderr()).toBe("");
  }, 60_000);

  it("a forced close stops the coordinator's running calls on their nodes, batch signal or not", async () => {
    await spawnNode();
    const runtime = createRuntime({
      tools: fleetTools,
      fleet: { redis: redis.url, ...steadyCoordinator },
    });
    const log = newFile("starts");
    const abortLog = newFile("aborts");
    const batch = runtime.executeToolCalls(batchOf([{ id: "c1", arguments: { log, abortLog, gateFile: join(dir, "never") } }]));
    await until(() => startedIn(log).includes("c1"), "c1 started");
    await runtime.close({ force: true });
    const { messages } = await batch;
    expect(codeOf(messages[0]!)).toBe("TP_ERR_CLOSED");
    await until(() => existsSync(abortLog) && readFileSync(abortLog, "utf8").includes("c1 aborted"), "the node aborted c1", { limitMs: 20_000 });
  }, 60_000);

  it("SIGINT to toolpool run: its batch is aborted, and the 3 calls waiting in the queue never start", async () => {
    const node = await spawnNode();
    const log = newFile("starts");
    const abortLog = newFile("aborts");
    const batchFile = newFile("batch.json");
    writeFileSync(batchFile, JSON.stringify(batchOf(fourCalls(log, abortLog))));
    const run = spawnWithOutput([cli, "run", batchFile, "--tools", fileURLToPath(toolsModule), "--fleet", redis.url, "--remote", "all", "--ndjson"]);
    children.push(run.child);
    await until(() => startedIn(log).includes("c1"), "c1 started");
    await until(async () => (await queueCounts(node)).waiting === 3, "3 calls waiting");
    run.child.kill("SIGINT");
    expect(await run.exited).toBe(0);
    await untilDrained(node);
    const others = startedIn(log).filter((id) => id !== "c1");
    console.log(`calls of the aborted batch that started after the abort: ${others.length} of 3`);
    expect(startedIn(log)).toEqual(["c1"]);
    const end = JSON.parse(run.stdout().trim().split("\n").at(-1)!) as { type: string; messages: ToolResultMessage[] };
    expect(end.type).toBe("batch_end");
    expect(end.messages.map((message) => [message.toolCallId, codeOf(message) ?? null, textOf(message)])).toEqual([
      ["c1", null, "aborted c1"],
      ...["c2", "c3", "c4"].map((id) => [id, "TP_ERR_ABORTED", 'Tool "task" was not run: its batch was aborted before a fleet node started it']),
    ]);
  }, 60_000);

  it("an abort announced while the coordinator's Redis is briefly down is announced again once Redis is back", async () => {
    await spawnNode();
    proxy = await startRedisProxy(redis.port);
    const runtime = open({
      tools: fleetTools,
      // The coordinator's own bound on an abort is far off: the node's answer must come first. Its
      // presence key (steady: 16 s) outlives the cut, so the node learns of the abort from the announcement.
      fleet: { redis: proxy.url, ...steadyCoordinator, redisTimeoutMs: 30_000, abortSlackMs: 15_000 },
    });
    const log = newFile("starts");
    const abortLog = newFile("aborts");
    const controller = new AbortController();
    const batch = runtime.executeToolCalls(batchOf([{ id: "c1", arguments: { log, abortLog, gateFile: join(dir, "never") } }]), {
      signal: controller.signal,
    });
    await until(() => startedIn(log).includes("c1"), "c1 started");
    proxy.cut();
    // The coordinator's command connection is reconnecting (not ready): the announcement fails.
    await until(() => proxy!.sawWhileCut("toolpool-coordinator"), "the coordinator reconnecting");
    controller.abort();
    proxy.restore();
    const { messages } = await batch;
    expect([codeOf(messages[0]!) ?? null, textOf(messages[0]!)]).toEqual([null, "aborted c1"]);
    expect(readFileSync(abortLog, "utf8")).toBe("c1 aborted\n");
  }, 60_000);
});
