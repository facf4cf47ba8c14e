/**
 * The per-call work guard: what one ordinary call costs each thread, in
 * counts, so that a change that silently doubles it fails here. Speed itself
 * is measured in bench/ (suite `dispatch`), never asserted in a test.
 *
 * A child process (`fixtures/per-call/measure.mjs`) runs 2,000 no-op calls,
 * one batch of one call each, 64 in flight, on a runtime of one worker
 * thread, and reports per call:
 * - the messages each thread posted (every `postMessage` of a port, a
 *   broadcast channel or a worker, counted in both threads by a preload);
 * - the bytes each thread allocated on its JS heap: heap growth across the
 *   calls, with a young generation large enough that no collection runs
 *   meanwhile (the check refuses a measurement during which one did).
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";
import { builtIndexUrl } from "./support/build-paths.js";

/** Per-call figures of one thread. */
interface ThreadWork {
  postsPerCall: number;
  posts: Record<string, number>;
  allocatedBytesPerCall: number;
  collections: number;
}

/**
 * The budgets: about 1.2 × what an ordinary call costs today, measured per
 * Node major since V8's own allocations differ (main thread: Node 20 and 22
 * ~14.1–14.5 KB, Node 26 ~15.5–16.1 KB; worker ~3.4–3.6 KB on all three; one
 * message each way; no collection during the run). Raise them only with the
 * profile that shows the new work is worth it.
 */
const nodeMajor = Number(process.versions.node.split(".")[0]);
const budget = {
  mainPostsPerCall: 1,
  workerPostsPerCall: 1,
  mainBytesPerCall: nodeMajor >= 24 ? 19_500 : 17_000,
  workerBytesPerCall: 4_600,
};

const calls = 2_000;
const fixtures = new URL("./fixtures/per-call/", import.meta.url);

function measure(): Promise<{ main: ThreadWork; worker: ThreadWork }> {
  const args = [
    "--require",
    fileURLToPath(new URL("count-posts.cjs", fixtures)),
    "--expose-gc",
    // 2,000 calls of ~12 KB fit in one semi-space: no scavenge meanwhile.
    "--min-semi-space-size=64",
    "--max-semi-space-size=64",
    fileURLToPath(new URL("measure.mjs", fixtures)),
    builtIndexUrl.href,
    String(calls),
  ];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { timeout: 120_000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`measure.mjs failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as { main: ThreadWork; worker: ThreadWork });
    });
  });
}

describe("per-call work of an ordinary worker call", () => {
  it("posts one message each way and allocates within budget on both threads", async () => {
    const work = await measure();
    const figures = JSON.stringify(work);
    // A collection during the calls would hide allocations: the measurement would not count.
    expect(work.main.collections, figures).toBe(0);
    expect(work.worker.collections, figures).toBe(0);
    // The task to the worker, and its reply: nothing else per call (partials, aborts and boot messages are not ordinary).
    expect(work.main.postsPerCall, figures).toBeLessThanOrEqual(budget.mainPostsPerCall);
    expect(work.worker.postsPerCall, figures).toBeLessThanOrEqual(budget.workerPostsPerCall);
    expect(work.main.posts.port, figures).toBe(calls);
    expect(work.worker.posts.port, figures).toBe(calls + 1);
    expect(work.main.allocatedBytesPerCall, figures).toBeGreaterThan(0);
    expect(work.main.allocatedBytesPerCall, figures).toBeLessThanOrEqual(budget.mainBytesPerCall);
    expect(work.worker.allocatedBytesPerCall, figures).toBeGreaterThan(0);
    expect(work.worker.allocatedBytesPerCall, figures).toBeLessThanOrEqual(budget.workerBytesPerCall);
  }, 180_000);
});
