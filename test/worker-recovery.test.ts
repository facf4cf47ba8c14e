import { execFileSync } from "node:child_process";
import { closeSync, constants, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BroadcastChannel } from "node:worker_threads";

import { afterEach, describe, expect, it } from "vitest";

import { minimumResourceLimits, workerTool, type PoolOptions } from "toolpool";

// The host's side of recovery on real threads (the build's pool: Piscina's
// instances, heaps that run out, a thread that will not exit); the pool's
// state machine is checked on a fake host in worker-pool-recovery.test.ts.
import { systemClock, resolveRuntimeOptions, type WorkerCallOutcome, WorkerPool } from "./support/built.js";
import { FakeClock } from "./support/fake-clock.js";
import { until } from "./support/helpers.js";

const faults = new URL("./fixtures/tools/faults.mjs", import.meta.url);
const anyArgs = { type: "object" };
const faultTool = workerTool({ name: "fault", description: "fault", parameters: anyArgs, module: faults });
const limitedFaultTool = workerTool({ name: "limited", description: "fault", parameters: anyArgs, module: faults, timeoutMs: 50 });

let pools: WorkerPool[] = [];
const openPool = (pool: PoolOptions, clock = systemClock) => {
  const options = resolveRuntimeOptions({ tools: [], pool }).pool;
  const created = new WorkerPool(options, clock, () => {});
  pools.push(created);
  return created;
};
afterEach(async () => {
  await Promise.all(pools.map((pool) => pool.close({ force: true })));
  pools = [];
});

let callCount = 0;
const run = (pool: WorkerPool, args: Record<string, unknown>, tool = faultTool) => pool.run({ tool, toolCallId: `c${++callCount}`, args });

const isOk = (outcome: WorkerCallOutcome) => outcome.kind === "ok";
const codeOf = (outcome: WorkerCallOutcome) => (outcome.kind === "error" ? outcome.code : undefined);

/** Terminates, from outside, every thread Piscina has not yet marked ready; returns how many. */
function killBootingThreads(pool: WorkerPool): number {
  const booting = pool
    .diagnose()
    .generations.at(-1)!
    .threads.filter((thread) => !thread.isUsable);
  for (const { threadId } of booting) void pool.workers.find((worker) => worker.threadId === threadId)?.terminate();
  return booting.length;
}

describe("WorkerPool recovery", () => {
  it("runs the calls waiting behind a worker that was killed before it was ready", async () => {
    const pool = openPool({ maxThreads: 1 });
    const exiting = run(pool, { fault: "exit", code: 3 });
    const waiting = [run(pool, { value: 1 }), run(pool, { value: 2 })];
    expect(codeOf(await exiting)).toBe("TP_ERR_WORKER_EXIT");
    // Piscina started the replacement synchronously when the worker exited;
    // its ready message cannot have arrived within the same turn.
    expect(killBootingThreads(pool)).toBe(1);
    const outcomes = await Promise.all(waiting);
    expect(outcomes.map(isOk)).toEqual([true, true]);
    // Piscina would not replace that loss (its bootstrap latch): a fresh instance took the calls.
    expect(pool.diagnose().generationsStarted).toBe(2);
    expect(pool.stats).toMatchObject({ queued: 0, running: 0 });
    // The latched instance is destroyed once its calls have ended.
    await until(() => pool.diagnose().generations.length === 1, "the latched instance destroyed");
    expect(pool.diagnose().generations[0]!.isLatched).toBe(false);
  });

  it("ends the calls whose worker's heap runs out with TP_ERR_OUT_OF_MEMORY and runs the others, at the smallest limits a runtime accepts", async () => {
    // The floor itself, with a young generation as small as V8 allows: on
    // every Node CI runs, workers must start with it and a heap overrun must
    // stay a call's error (a heap too small to start aborts the process).
    const pool = openPool({ maxThreads: 2, resourceLimits: { ...minimumResourceLimits, maxYoungGenerationSizeMb: 1 } });
    const calls = Array.from({ length: 6 }, (_, index) => (index % 2 === 0 ? run(pool, { fault: "oom" }) : run(pool, { value: index })));
    const outcomes = await Promise.all(calls);
    expect(outcomes.map((outcome) => codeOf(outcome) ?? outcome.kind)).toEqual([
      "TP_ERR_OUT_OF_MEMORY",
      "ok",
      "TP_ERR_OUT_OF_MEMORY",
      "ok",
      "TP_ERR_OUT_OF_MEMORY",
      "ok",
    ]);
    // Each overrun cost its worker; the replacements serve the next calls.
    const later = await Promise.all([run(pool, { value: 7 }), run(pool, { value: 8 })]);
    expect(later.map(isOk)).toEqual([true, true]);
    expect(pool.stats).toMatchObject({ queued: 0, running: 0 });
  });

  // Only Node 20 fails a worker whose heap is too small to start as a worker:
  // later Nodes abort the whole process, so the runtime refuses such limits
  // (minimumResourceLimits) and this pool gets them past that check.
  it.runIf(process.versions.node.startsWith("20."))(
    "ends waiting calls with TP_ERR_WORKER_CRASH when workers keep failing to start, and tries afresh for the next call (Node 20 only)",
    async () => {
      const options = resolveRuntimeOptions({ tools: [], pool: { maxThreads: 2 } }).pool;
      const pool = new WorkerPool({ ...options, resourceLimits: { maxOldGenerationSizeMb: 1, maxYoungGenerationSizeMb: 1 } }, systemClock, () => {});
      pools.push(pool);
      const outcomes = await Promise.all(Array.from({ length: 5 }, (_, value) => run(pool, { value })));
      for (const outcome of outcomes) {
        expect(outcome.kind).toBe("error");
        expect(["TP_ERR_WORKER_CRASH", "TP_ERR_OUT_OF_MEMORY"]).toContain(codeOf(outcome));
      }
      const later = await run(pool, { value: 9 });
      expect(later.kind).toBe("error");
      expect(pool.stats).toMatchObject({ queued: 0, running: 0 });
    },
  );

  it("moves waiting calls off a thread that cannot be terminated, also during a graceful close, and still closes", async () => {
    const directory = mkdtempSync(join(tmpdir(), "toolpool-fifo-"));
    const fifo = join(directory, "fifo");
    execFileSync("mkfifo", [fifo]);
    const clock = new FakeClock();
    const pool = openPool({ maxThreads: 1 }, clock);
    try {
      // Blocks in open(2) until a writer comes: termination cannot reach it.
      const blocked = run(pool, { fault: "open-fifo", path: fifo }, limitedFaultTool);
      const waiting = run(pool, { value: 1 });
      await until(() => pool.stats.running === 1, "the blocked call running");
      clock.advance(50);
      expect(codeOf(await blocked)).toBe("TP_ERR_TIMEOUT");
      // A graceful close waits for the waiting call, which a stuck thread must not strand.
      const closing = pool.close();
      // The thread has not exited; after the exit watch the instance counts as a thread short.
      clock.advance(2_000);
      expect(isOk(await waiting)).toBe(true);
      expect(pool.diagnose().generationsStarted).toBe(2);
      await closing;
    } finally {
      // Let the blocked thread go, so the process can end.
      try {
        closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
      } catch {
        // No reader left: nothing to release.
      }
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

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
