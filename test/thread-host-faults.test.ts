/**
 * The Piscina host's handling of tasks that never reach their thread and of
 * threads lost while calls wait, on real threads (the build's pool).
 */
import { BroadcastChannel } from "node:worker_threads";

import { afterEach, describe, expect, it } from "vitest";

import { workerTool, type PoolOptions } from "toolpool";

import { systemClock, resolveRuntimeOptions, WorkerPool } from "./support/built.js";
import { until } from "./support/helpers.js";

const faults = new URL("./fixtures/tools/faults.mjs", import.meta.url);
const faultTool = workerTool({ name: "fault", description: "fault", parameters: { type: "object" }, module: faults });

let pools: WorkerPool[] = [];
const openPool = (pool: PoolOptions) => {
  const created = new WorkerPool(resolveRuntimeOptions({ tools: [], pool }).pool, systemClock, () => {});
  pools.push(created);
  return created;
};
afterEach(async () => {
  await Promise.all(pools.map((pool) => pool.close({ force: true })));
  pools = [];
});

let callCount = 0;
const run = (pool: WorkerPool, args: Record<string, unknown>) => pool.run({ tool: faultTool, toolCallId: `c${++callCount}`, args });

describe("PiscinaHost: a task that cannot be posted", () => {
  it("keeps its thread usable after a call whose arguments cannot be cloned to the thread", async () => {
    const pool = openPool({ maxThreads: 1 });
    expect((await run(pool, { value: 1 })).kind).toBe("ok");
    // Piscina's postMessage throws (DataCloneError): the task is rejected, the thread itself is fine.
    const refused = await run(pool, { value: () => 1 });
    expect(refused).toMatchObject({ kind: "error", message: expect.stringContaining("cannot be sent to a worker thread") });
    // The one thread is still alive in Piscina and counted by the host, yet the pool forgot it.
    // A hang here (the thread forgotten) ends the test at its time limit.
    expect((await run(pool, { value: 2 })).kind).toBe("ok");
  }, 30_000);
});

describe("PiscinaHost: a context that cannot be cloned (public workerTool API)", () => {
  it("fails that call alone: the next call of another tool still runs on the one thread", async () => {
    const pool = openPool({ maxThreads: 1 });
    const badContext = workerTool({
      name: "bad-context",
      description: "bad context",
      parameters: { type: "object" },
      module: faults,
      context: () => ({ callback: () => 1 }),
    });
    const refused = await pool.run({ tool: badContext, toolCallId: "bad", args: { value: 1 } });
    expect(refused.kind).toBe("error");
    // A hang here (the thread forgotten) ends the test at its time limit.
    expect((await run(pool, { value: 2 })).kind).toBe("ok");
  }, 30_000);
});

describe("PiscinaHost: a thread lost while calls wait", () => {
  it("starts a thread for a waiting call when a thread above minThreads crashes, while the other one stays busy", async () => {
    const pool = openPool({ maxThreads: 2, minThreads: 1 });
    const channel = new BroadcastChannel("review-thread-lost");
    try {
      let started = 0;
      const onUpdate = () => {
        started += 1;
      };
      const holding = pool.run({ tool: faultTool, toolCallId: "holding", args: { fault: "killable", channel: "review-thread-lost" }, onUpdate });
      const dying = pool.run({ tool: faultTool, toolCallId: "dying", args: { fault: "killable", channel: "review-thread-lost" }, onUpdate });
      await until(() => started === 2, "both calls running");
      // Both threads busy: this call waits in the pool's queue.
      const waiting = run(pool, { value: 3 });
      channel.postMessage("dying");
      expect((await dying).kind).toBe("error");
      // One thread is left, busy for good; Piscina keeps only minThreads (1) up, and nothing asks for another.
      expect((await waiting).kind).toBe("ok");
      void holding;
    } finally {
      channel.close();
    }
  }, 60_000);

  it("starts a thread for a waiting call when a thread above minThreads is terminated at a call's time limit", async () => {
    const pool = openPool({ maxThreads: 2, minThreads: 1 });
    const limited = workerTool({ name: "limited", description: "fault", parameters: { type: "object" }, module: faults, timeoutMs: 200 });
    const channel = new BroadcastChannel("review-thread-limit");
    try {
      let started = 0;
      const holding = pool.run({
        tool: faultTool,
        toolCallId: "holding-2",
        args: { fault: "killable", channel: "review-thread-limit" },
        onUpdate: () => {
          started += 1;
        },
      });
      await until(() => started === 1, "the holding call running");
      const spinning = pool.run({ tool: limited, toolCallId: "spinning", args: { fault: "spin" } });
      // Submitted while the second thread starts: it waits behind the spinning call.
      const waiting = run(pool, { value: 4 });
      const spun = await spinning;
      expect(spun.kind === "error" ? spun.code : spun.kind).toBe("TP_ERR_TIMEOUT");
      expect((await waiting).kind).toBe("ok");
      void holding;
    } finally {
      channel.close();
    }
  }, 60_000);
});

describe("PiscinaHost: a call that cannot be sent, taken by a freed thread", () => {
  it("fails that call alone when it is handed to a thread as it frees up, and the thread serves on", async () => {
    const pool = openPool({ maxThreads: 1 });
    // The first call holds the one thread; the other two wait, the bad one handed over as the thread frees.
    const first = run(pool, { value: 1 });
    const refused = run(pool, { value: () => 1 });
    const next = run(pool, { value: 2 });
    expect((await first).kind).toBe("ok");
    expect(await refused).toMatchObject({ kind: "error", message: expect.stringContaining("cannot be sent to a worker thread") });
    expect((await next).kind).toBe("ok");
  }, 30_000);
});
