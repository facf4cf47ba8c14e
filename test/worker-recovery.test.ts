import { execFileSync } from "node:child_process";
import { closeSync, constants, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

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
