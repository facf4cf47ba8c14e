/**
 * The pool's state machine on a fake thread host and the fake clock: no
 * threads, no dist. The host records what the pool asks of it; the test plays
 * the threads' part by firing the host's events (test/support/fake-thread-host.ts).
 */
import { afterEach, describe, expect, it, vi } from "vitest";

import { type PoolCallEvent, PoolEventSource, type PoolThreadEvent, toolLoadGraceMs, updateTag } from "./support/internals.js";
import { closeFakePools, flush, openFakePool as open, tool } from "./support/fake-thread-host.js";

afterEach(closeFakePools);

describe("WorkerPool (fake host)", () => {
  it("queues a call until a thread is ready, asks for a thread, then posts it with its tool's definition", async () => {
    const { pool, host, run, outcomes, clock } = open();
    run("a");
    expect(host.posted).toEqual([]);
    expect(host.grows).toBe(1);
    expect(pool.stats).toMatchObject({ running: 0, queued: 1 });
    clock.advance(7);
    host.ready(1);
    expect(host.order).toEqual(["a"]);
    expect(host.posted[0]!.task.definition?.toolName).toBe("echo");
    expect(pool.stats).toMatchObject({ running: 1, queued: 0 });
    clock.advance(3);
    host.reply(1, { runMs: 2 });
    await flush();
    expect(outcomes.a).toMatchObject({ kind: "ok", timing: { submittedAt: 0, startedAt: 7, endedAt: 10, threadId: 1, runMs: 2 } });
    expect(pool.stats).toMatchObject({ running: 0, queued: 0, completed: 1 });
  });

  it("starts a call at once on an idle thread, and sends a thread that answered the tool no definition again", async () => {
    const { host, run, outcomes } = open({ maxThreads: 1 });
    host.ready(1);
    run("a");
    run("b");
    expect(host.order).toEqual(["a"]);
    // "a" started without asking for a thread; "b" had to wait.
    expect(host.grows).toBe(1);
    host.reply(1);
    expect(host.order).toEqual(["a", "b"]);
    expect(host.posted[1]!.task.definition).toBeUndefined();
    host.reply(1);
    await flush();
    expect(Object.keys(outcomes).sort()).toEqual(["a", "b"]);
  });

  it("times a call out from its start, not from its arrival: outcome at once, then its thread terminated", async () => {
    const { host, run, outcomes, clock } = open({ maxThreads: 1 });
    const slow = tool("slow", { timeoutMs: 100 });
    host.ready(1);
    run("first");
    run("second", { tool: slow });
    // Queued far longer than its limit: no timeout while it waits.
    clock.advance(1_000);
    expect(host.terminated).toEqual([]);
    host.reply(1);
    expect(host.order).toEqual(["first", "second"]);
    clock.advance(99);
    await flush();
    expect(outcomes.second).toBeUndefined();
    clock.advance(1);
    await flush();
    expect(outcomes.second).toMatchObject({ kind: "error", code: "TP_ERR_TIMEOUT" });
    expect(host.terminated).toEqual([1]);
    // The thread's task then fails; the call is already settled and the thread is not reused.
    host.events.failed(host.lastOn(1).call, 1, new Error("Terminating worker thread"));
    run("third");
    expect(host.order).toEqual(["first", "second"]);
  });

  it("aborts a running call cooperatively, then terminates it after the grace period", async () => {
    const { host, run, outcomes, clock } = open({ abortGraceMs: 50 });
    host.ready(1);
    const controller = new AbortController();
    run("a", { signal: controller.signal });
    host.loaded(1);
    controller.abort();
    clock.advance(49);
    await flush();
    expect(host.terminated).toEqual([]);
    expect(outcomes.a).toBeUndefined();
    clock.advance(1);
    await flush();
    expect(host.terminated).toEqual([1]);
    expect(outcomes.a).toMatchObject({ kind: "error", code: "TP_ERR_ABORTED" });
  });

  it("hands an abort that came while the call waited to the thread it starts on, with the grace period", async () => {
    const { host, run, outcomes, clock } = open({ abortGraceMs: 50 });
    const controller = new AbortController();
    run("a", { signal: controller.signal });
    controller.abort("stop");
    clock.advance(500);
    host.ready(1);
    expect(host.posted[0]!.task.aborted).toBeDefined();
    // A tool that ends on its abort replies within the grace: its outcome is its reply.
    clock.advance(10);
    host.reply(1, { kind: "error", message: "aborted by the tool" });
    clock.advance(100);
    await flush();
    expect(host.terminated).toEqual([]);
    expect(outcomes.a).toMatchObject({ kind: "error", message: "aborted by the tool" });
  });

  it("counts an abort's grace from the tool's load on a thread that had not run it, and ends a load that hangs", async () => {
    const { host, run, outcomes, clock } = open({ abortGraceMs: 50, maxThreads: 1 });
    // Aborted before it starts, on a fresh thread, whose load of the tool's module takes far longer than the grace.
    run("a", { signal: AbortSignal.abort() });
    host.ready(1);
    expect(host.posted[0]!.task).toMatchObject({ definition: { toolName: "echo" }, aborted: expect.anything() });
    clock.advance(5_000);
    expect(host.terminated).toEqual([]);
    // Loaded: the tool answers its abort within the grace, which counts from here.
    host.loaded(1);
    clock.advance(49);
    host.reply(1, { kind: "error", message: "Operation aborted" });
    // On the thread that knows the tool now: no definition, and the grace at once.
    const controller = new AbortController();
    run("b", { signal: controller.signal });
    expect(host.lastOn(1).task.definition).toBeUndefined();
    controller.abort();
    clock.advance(50);
    // A module whose load never ends still ends its aborted call, after the load's allowance and the grace.
    run("c", { signal: AbortSignal.abort(), tool: tool("other") });
    host.ready(2);
    clock.advance(toolLoadGraceMs + 49);
    await flush();
    expect(outcomes.a).toMatchObject({ kind: "error", message: "Operation aborted" });
    expect(outcomes.b).toMatchObject({ kind: "error", code: "TP_ERR_ABORTED", message: expect.stringContaining("did not stop within 50 ms") });
    expect(outcomes.c).toBeUndefined();
    clock.advance(1);
    await flush();
    expect(host.terminated).toEqual([1, 2]);
    expect(outcomes.c).toMatchObject({
      kind: "error",
      code: "TP_ERR_ABORTED",
      message: expect.stringContaining("while its worker was loading its module"),
    });
  });

  it("ends a call whose thread is lost mid-call as a crash, and runs the next on another thread", async () => {
    const { host, run, outcomes } = open({ maxThreads: 1 });
    host.ready(1);
    run("a");
    run("b");
    host.events.lost(1);
    host.events.failed(host.lastOn(1).call, 1, new Error("boom"));
    await flush();
    expect(outcomes.a).toMatchObject({ kind: "error", code: "TP_ERR_WORKER_CRASH" });
    expect(host.order).toEqual(["a"]);
    host.ready(2);
    expect(host.posted[1]).toMatchObject({ threadId: 2, task: { toolCallId: "b" } });
  });

  it("moves waiting calls to fresh threads when threads fail to start, and ends them after 5 failures in a row", async () => {
    const { host, run, outcomes } = open();
    run("a");
    run("b");
    host.bootFailures = 4;
    host.events.stalled();
    expect(host.restarts).toBe(1);
    await flush();
    expect(outcomes).toEqual({});
    host.bootFailures = 5;
    host.events.stalled();
    await flush();
    expect(host.restarts).toBe(1);
    expect(outcomes.a).toMatchObject({ kind: "error", code: "TP_ERR_WORKER_CRASH", message: expect.stringContaining("5 worker threads") });
    expect(outcomes.b).toMatchObject({ kind: "error", code: "TP_ERR_WORKER_CRASH" });
    expect(host.bootFailures).toBe(0);
    // The next call tries fresh threads.
    run("c");
    expect(host.restarts).toBe(2);
  });

  it("answers TP_ERR_QUEUE_FULL at once when every thread is busy and maxQueue calls wait", async () => {
    const { pool, host, run, outcomes } = open({ maxThreads: 1, maxQueue: 1 });
    host.ready(1);
    run("a");
    run("b");
    expect(pool.isQueueFull()).toBe(true);
    run("c");
    await flush();
    expect(outcomes.c).toMatchObject({ kind: "error", code: "TP_ERR_QUEUE_FULL" });
    expect(outcomes.a).toBeUndefined();
    expect(outcomes.b).toBeUndefined();
  });

  it("gives sessions turns on a free thread, and FIFO scheduling ignores sessions", () => {
    for (const [scheduling, expected] of [
      ["fair", ["x", "a1", "b1", "a2", "a3"]],
      ["fifo", ["x", "a1", "a2", "a3", "b1"]],
    ] as const) {
      const { host, run } = open({ maxThreads: 1, scheduling });
      host.ready(1);
      run("x", { session: "x" });
      for (const id of ["a1", "a2", "a3"]) run(id, { session: "a" });
      run("b1", { session: "b" });
      for (let index = 0; index < 4; index++) host.reply(1);
      expect(host.order).toEqual(expected);
    }
  });

  it("keeps a refused call's place: a thread going away does not cost it its turn", () => {
    const { host, run } = open({ maxThreads: 2 });
    host.ready(1);
    run("x", { session: "x" });
    run("a1", { session: "a" });
    run("b1", { session: "b" });
    host.refusing.add(2);
    host.ready(2);
    host.reply(1);
    expect(host.order).toEqual(["x", "a1"]);
    host.reply(1);
    expect(host.order).toEqual(["x", "a1", "b1"]);
  });

  it("holds a reply until the last partial it announces has arrived", async () => {
    const { host, run, outcomes } = open();
    host.ready(1);
    const partials: unknown[] = [];
    run("a", { onUpdate: (partial) => partials.push(partial) });
    const { seq } = host.lastOn(1).task;
    host.reply(1, { updates: 1 });
    await flush();
    expect(outcomes.a).toBeUndefined();
    host.events.message({ [updateTag]: true, seq, partial: { content: [] } });
    await flush();
    expect(partials).toHaveLength(1);
    expect(outcomes.a).toMatchObject({ kind: "ok" });
  });

  it("terminates a thread its leftover work retired, and posts nothing more to it", () => {
    const { host, run } = open({ maxThreads: 2 });
    host.ready(1);
    run("a");
    host.reply(1, { retiredThreadId: 1 });
    expect(host.terminated).toEqual([1]);
    run("b");
    expect(host.order).toEqual(["a"]);
    host.ready(2);
    expect(host.posted[1]!.threadId).toBe(2);
  });

  it("ends running and waiting calls with TP_ERR_CLOSED on a forced close", async () => {
    const { pool, host, run, outcomes } = open({ maxThreads: 1 });
    host.ready(1);
    run("a");
    run("b");
    await pool.close({ force: true });
    await flush();
    expect(outcomes.a).toMatchObject({ kind: "error", code: "TP_ERR_CLOSED" });
    expect(outcomes.b).toMatchObject({ kind: "error", code: "TP_ERR_CLOSED" });
    // The waiting one never reaches the thread when it frees up.
    host.reply(1);
    expect(host.order).toEqual(["a"]);
    await run("c");
    expect(outcomes.c).toMatchObject({ code: "TP_ERR_CLOSED" });
  });

  it("caps running calls per session with maxRunningPerSession, parking the rest", () => {
    const { host, run } = open({ maxThreads: 3, maxRunningPerSession: 1 });
    host.ready(1, 2, 3);
    run("a1", { session: "a" });
    run("a2", { session: "a" });
    run("b1", { session: "b" });
    expect(host.order).toEqual(["a1", "b1"]);
    host.reply(host.lastOn(host.posted[0]!.threadId).threadId);
    expect(host.order).toEqual(["a1", "b1", "a2"]);
  });

  it("makes no event object while nobody listens, and queued, started, ended once someone does", async () => {
    const emit = vi.spyOn(PoolEventSource.prototype, "emit");
    try {
      const { pool, host, run } = open({ maxThreads: 1 });
      host.ready(1);
      run("quiet");
      host.reply(1);
      await flush();
      expect(emit).not.toHaveBeenCalled();
      const events: PoolCallEvent[] = [];
      const listener = (event: PoolCallEvent) => events.push(event);
      pool.events.on(listener);
      run("a", { batchId: "batch-1", sessionKey: "s" });
      run("b", { batchId: "batch-1", sessionKey: "s", tool: tool("slow", { timeoutMs: 10 }) });
      host.reply(1);
      await flush();
      expect(events.map((event) => `${event.type} ${event.toolCallId}`)).toEqual(["queued a", "started a", "queued b", "started b", "ended a"]);
      expect(events[0]).toMatchObject({ batchId: "batch-1", sessionKey: "s", tool: "echo", seq: host.posted[1]!.task.seq });
      expect(events[1]).toMatchObject({ threadId: 1 });
      pool.events.off(listener);
      emit.mockClear();
      run("c");
      expect(emit).not.toHaveBeenCalled();
    } finally {
      emit.mockRestore();
    }
  });

  it("emits ready and exited once per thread only while observed, and lists the threads that may take calls", () => {
    const emitThread = vi.spyOn(PoolEventSource.prototype, "emitThread");
    try {
      const { pool, host, run } = open({ maxThreads: 2 });
      host.ready(1);
      expect(emitThread).not.toHaveBeenCalled();
      const events: PoolThreadEvent[] = [];
      const listener = (event: PoolThreadEvent) => events.push(event);
      pool.events.onThread(listener);
      expect(pool.events.isObserved).toBe(true);
      // A late listener learns the threads there are from the list, then the changes from events.
      expect(pool.events.threads()).toEqual([{ pool: "", threadId: 1 }]);
      host.ready(2);
      // Thread 2, idle last, refuses the call (it is going away): the call goes to thread 1.
      host.refusing.add(2);
      run("a", { batchId: "batch-1" });
      expect(host.lastOn(1).task.toolCallId).toBe("a");
      // The list says which call each thread runs, as its started event said it.
      expect(pool.events.threads()).toEqual([
        {
          pool: "",
          threadId: 1,
          running: expect.objectContaining({ type: "started", toolCallId: "a", batchId: "batch-1", threadId: 1, queueWaitMs: 0 }),
        },
      ]);
      // Its host says it lost thread 1 twice (lost, then the running call failed): one event.
      host.events.lost(1);
      host.events.failed(host.lastOn(1).call, 1, new Error("boom"));
      host.events.lost(2);
      expect(events.map((event) => `${event.change} ${event.threadId}`)).toEqual(["ready 2", "exited 2", "exited 1"]);
      expect(events[0]).toMatchObject({ type: "thread", pool: "" });
      expect(pool.events.threads()).toEqual([]);
      pool.events.offThread(listener);
      emitThread.mockClear();
      host.ready(3);
      expect(emitThread).not.toHaveBeenCalled();
    } finally {
      emitThread.mockRestore();
    }
  });
});
