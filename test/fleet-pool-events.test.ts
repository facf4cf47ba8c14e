import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { createRuntime, type PoolCallEvent, type Runtime } from "toolpool";

import fleetTools from "./fixtures/fleet/fleet-tools.mjs";
import { startNode, stopNodes, steadyLockMs, steadyStalledMs, type TestNode } from "./support/fleet.js";
import { batchOf, until } from "./support/helpers.js";
import { hasRedisServer, startRedis, type TestRedis } from "./support/redis.js";

const toolsModule = new URL("./fixtures/fleet/fleet-tools.mjs", import.meta.url);

describe.runIf(hasRedisServer())("fleet: pool events of remote calls", () => {
  let redis: TestRedis;
  let nodes: TestNode[] = [];
  let runtime: Runtime;

  beforeAll(async () => {
    redis = await startRedis();
    nodes = [await startNode({ redis: redis.url, lockMs: steadyLockMs, stalledMs: steadyStalledMs, tools: toolsModule, name: "e1" })];
    runtime = createRuntime({ tools: fleetTools, fleet: { redis: redis.url, lockDurationMs: steadyLockMs, stalledIntervalMs: steadyStalledMs } });
  });
  afterAll(async () => {
    await runtime?.close({ force: true });
    await stopNodes(nodes);
    await redis?.dispose();
  });

  it("emits queued, started on its node and ended for every remote call, in order, under the pool name fleet", async () => {
    const events: PoolCallEvent[] = [];
    const listener = (event: PoolCallEvent) => events.push(event);
    runtime.poolEvents.on(listener);
    const outcome = await runtime.executeToolCalls(
      batchOf([
        { id: "fine", arguments: { updates: 2 } },
        { id: "late", name: "timed", arguments: { waitMs: 30_000 } },
      ]),
      { sessionKey: "remote" },
    );
    runtime.poolEvents.off(listener);
    expect(outcome.messages.map((message) => message.isError)).toEqual([false, true]);
    const byCall = new Map<string, PoolCallEvent[]>();
    for (const event of events) byCall.set(event.toolCallId, [...(byCall.get(event.toolCallId) ?? []), event]);
    expect([...byCall.keys()].sort()).toEqual(["fine", "late"]);
    for (const sequence of byCall.values()) {
      expect(sequence.map((event) => event.type)).toEqual(["queued", "started", "ended"]);
      const [queued, started, ended] = sequence as [PoolCallEvent, PoolCallEvent & { type: "started" }, PoolCallEvent & { type: "ended" }];
      expect(new Set(sequence.map((event) => `${event.pool} ${event.seq} ${event.batchId} ${event.sessionKey}`)).size).toBe(1);
      expect(queued).toMatchObject({ pool: "fleet", sessionKey: "remote" });
      expect(queued.batchId).toBeTypeOf("string");
      expect(started).toMatchObject({ node: "e1", threadId: undefined });
      expect(started.queueWaitMs).toBe(started.at - queued.at);
      expect(ended).toMatchObject({ node: "e1", threadId: undefined });
      expect(ended.timing).toMatchObject({ submittedAt: queued.at, startedAt: started.at, endedAt: ended.at, node: "e1" });
    }
    expect(byCall.get("fine")!.at(-1)).toMatchObject({ outcome: "ok", code: undefined, tool: "task" });
    expect(byCall.get("late")!.at(-1)).toMatchObject({ outcome: "fault", code: "TP_ERR_TIMEOUT", tool: "timed" });
    // No thread events: the node's threads are its own.
    expect(runtime.poolEvents.threads()).toEqual([]);
  });

  it("has nodes write a start entry only for calls submitted while someone listens", async () => {
    const starts: string[] = [];
    const watcher = new Redis(redis.url);
    const monitor = await watcher.monitor();
    try {
      monitor.on("monitor", (_time: string, args: string[]) => {
        if (args[0]?.toLowerCase() === "xadd" && args[5] === "k" && args[6] === "s") starts.push(args[4]!);
        if (args[0]?.toLowerCase() === "xadd" && args[5] === "k" && args[6] === "e") starts.push(`end ${args[4]}`);
      });
      await runtime.executeToolCalls(batchOf([{ id: "unwatched", arguments: {} }]));
      const listener = () => {};
      runtime.poolEvents.on(listener);
      await runtime.executeToolCalls(batchOf([{ id: "watched", arguments: {} }]));
      runtime.poolEvents.off(listener);
      // Both ends seen by the monitor: whatever it saw of these calls, it saw it all.
      await until(() => starts.filter((entry) => entry.startsWith("end ")).length === 2, "both calls' end entries seen");
      const [unwatchedEnd, watchedEnd] = starts.filter((entry) => entry.startsWith("end ")).map((entry) => entry.slice(4));
      expect(starts.filter((entry) => !entry.startsWith("end "))).toEqual([watchedEnd]);
      expect(unwatchedEnd).not.toBe(watchedEnd);
    } finally {
      monitor.disconnect();
      watcher.disconnect();
    }
  });
});
