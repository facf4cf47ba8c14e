/**
 * The pool's recovery from lost threads, on the fake thread host: threads
 * that crash, that die before they are ready, that leftover work retires.
 * The host's own side (Piscina's instances, threads that will not exit) is
 * checked on real threads in worker-recovery.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";

import { closeFakePools, flush, openFakePool as open } from "./support/fake-thread-host.js";

afterEach(closeFakePools);

describe("WorkerPool recovery (fake host)", () => {
  it("runs the calls waiting behind a thread lost before it was ready, on threads started afresh", async () => {
    const { pool, host, run, outcomes } = open({ maxThreads: 1 });
    host.ready(1);
    run("exiting");
    run("w1");
    run("w2");
    host.crash(1, Object.assign(new Error("exited"), { exitCode: 3 }));
    await flush();
    expect(outcomes.exiting).toMatchObject({ kind: "error" });
    // Its replacement dies while starting: the host stalls, and calls wait, so the pool has it start afresh.
    host.failStarts();
    expect(host.restarts).toBe(1);
    host.ready(2);
    host.reply(2);
    host.reply(2);
    await flush();
    expect(host.posted.map(({ threadId, task }) => `${task.toolCallId}@${threadId}`)).toEqual(["exiting@1", "w1@2", "w2@2"]);
    expect([outcomes.w1?.kind, outcomes.w2?.kind]).toEqual(["ok", "ok"]);
    expect(pool.stats).toMatchObject({ queued: 0, running: 0 });
  });

  it("keeps going through repeated failed starts, with calls waiting each time: a thread that starts clears the count", async () => {
    const { host, run, outcomes } = open({ maxThreads: 1 });
    let thread = 1;
    host.ready(thread);
    for (let round = 0; round < 6; round++) {
      run(`x${round}`);
      const waiting = Array.from({ length: 4 }, (_, index) => `w${round}-${index}`);
      for (const id of waiting) run(id);
      host.crash(thread);
      host.failStarts();
      expect(host.restarts, `round ${round}`).toBe(round + 1);
      host.ready(++thread);
      for (const _ of waiting) host.reply(thread);
      await flush();
      expect(
        waiting.map((id) => outcomes[id]?.kind),
        `round ${round}`,
      ).toEqual(["ok", "ok", "ok", "ok"]);
    }
  });

  it("ends the waiting calls once threads keep failing to start, and starts afresh for the next call", async () => {
    const { host, run, outcomes } = open({ maxThreads: 1 });
    run("a");
    for (let start = 1; start < 5; start++) host.failStarts();
    expect(host.restarts).toBe(4);
    await flush();
    expect(outcomes.a).toBeUndefined();
    host.failStarts();
    await flush();
    expect(outcomes.a).toMatchObject({ kind: "error", code: "TP_ERR_WORKER_CRASH", message: expect.stringContaining("5 worker threads in a row") });
    run("b");
    expect(host.restarts).toBe(5);
    host.ready(1);
    host.reply(1);
    await flush();
    expect(outcomes.b).toMatchObject({ kind: "ok" });
  });

  it("serves waiting calls after the last usable thread is retired for leftover work", async () => {
    const { pool, host, run, outcomes } = open({ maxThreads: 1 });
    host.ready(1);
    for (const id of ["leaving", "w1", "w2", "w3"]) run(id);
    host.reply(1, { retiredThreadId: 1 });
    expect(host.terminated).toEqual([1]);
    // Nothing more goes to the retired thread, even before its loss is reported.
    expect(host.order).toEqual(["leaving"]);
    host.events.lost(1);
    host.ready(2);
    for (let index = 0; index < 3; index++) host.reply(2);
    await flush();
    expect(host.order).toEqual(["leaving", "w1", "w2", "w3"]);
    expect(["leaving", "w1", "w2", "w3"].map((id) => outcomes[id]?.kind)).toEqual(["ok", "ok", "ok", "ok"]);
    expect(pool.stats.queued).toBe(0);
  });

  it("serves waiting calls after a retired thread's replacement dies while starting", async () => {
    const { host, run, outcomes } = open({ maxThreads: 1 });
    host.ready(1);
    for (const id of ["exiting", "w1", "leaving", "w3"]) run(id);
    host.crash(1);
    host.failStarts();
    host.ready(2);
    host.reply(2);
    host.reply(2, { retiredThreadId: 2 });
    expect(host.terminated).toEqual([2]);
    host.events.lost(2);
    host.failStarts();
    expect(host.restarts).toBe(2);
    host.ready(3);
    host.reply(3);
    await flush();
    expect(host.posted.map(({ threadId, task }) => `${task.toolCallId}@${threadId}`)).toEqual(["exiting@1", "w1@2", "leaving@2", "w3@3"]);
    expect(["w1", "leaving", "w3"].map((id) => outcomes[id]?.kind)).toEqual(["ok", "ok", "ok"]);
  });
});
