import { BroadcastChannel } from "node:worker_threads";

import { describe, expect } from "vitest";

import { workerTool, type BatchEvent, type ToolExecutionEndEvent } from "toolpool";

import { FakeClock } from "./support/fake-clock.js";
import { deferred, GateController } from "./support/gates.js";
import { batch } from "./support/helpers.js";
import { open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest();

const behaviours = new URL("./fixtures/tools/behaviours.mjs", import.meta.url);
const scripted = new URL("./fixtures/tools/scripted.mjs", import.meta.url);
const barrier = new URL("./fixtures/tools/barrier.mjs", import.meta.url);
const anyArgs = { type: "object" };

const tool = (name: string, module: URL, exportName: string, extra: { timeoutMs?: number } = {}) =>
  workerTool({ name, description: name, parameters: anyArgs, module, exportName, ...extra });

/** Collects a batch's events and lets a test wait for one. */
function recorder() {
  const events: BatchEvent[] = [];
  const waiters: { match: (event: BatchEvent) => boolean; resolve: () => void }[] = [];
  const emit = (event: BatchEvent) => {
    events.push(event);
    for (const waiter of waiters.filter((w) => w.match(event))) waiter.resolve();
  };
  const when = (match: (event: BatchEvent) => boolean) => {
    if (events.some(match)) return Promise.resolve();
    const { promise, resolve } = deferred();
    waiters.push({ match, resolve });
    return promise;
  };
  const update = (id: string) => when((e) => e.type === "tool_execution_update" && e.toolCallId === id);
  return { events, emit, when, update };
}

describe("WorkerPool", () => {
  it("runs CPU-bound calls at the same time while the main event loop keeps turning", async () => {
    const runtime = open({ tools: [tool("spin", barrier, "execute")], pool: { maxThreads: 2 } });
    const shared = new Int32Array(new SharedArrayBuffer(12));
    // The main thread ticks slot 1 from its event loop; each call spins, never
    // yielding, until both calls have joined and the loop has ticked 20 times.
    let isDone = false;
    const tick = () => {
      Atomics.add(shared, 1, 1);
      if (!isDone) setTimeout(tick, 1);
    };
    tick();
    const args = { shared, parties: 2, ticks: 20, maxSpins: 5_000_000 };
    const { messages } = await runtime.executeToolCalls(batch(["a", "spin", args], ["b", "spin", args]));
    isDone = true;
    const [a, b] = messages.map((message) => message.details as { met: boolean; startedAt: number; endedAt: number });
    expect(messages.map((message) => message.isError)).toEqual([false, false]);
    expect([a!.met, b!.met]).toEqual([true, true]);
    expect(Atomics.load(shared, 2)).toBe(2);
    // Each started before the other ended: their execution windows overlap.
    expect(a!.startedAt).toBeLessThan(b!.endedAt);
    expect(b!.startedAt).toBeLessThan(a!.endedAt);
  });

  it("delivers partial results while the tool still runs", async () => {
    const gates = new GateController();
    try {
      const runtime = open({ tools: [tool("work", scripted, "execute")], pool: { maxThreads: 1 } });
      const rec = recorder();
      const done = runtime.executeToolCalls(batch(["u", "work", { updates: ["first", "second"], gate: "partials:u" }]), {
        emit: rec.emit,
      });
      await gates.whenWaiting("partials:u");
      await rec.when(
        (e) => e.type === "tool_execution_update" && e.partialResult.content[0]?.type === "text" && e.partialResult.content[0].text === "second",
      );
      // Both partials arrived and the call has not ended: it is still waiting at its gate.
      expect(rec.events.map((e) => e.type)).toEqual(["tool_execution_start", "tool_execution_update", "tool_execution_update"]);
      gates.open("partials:u");
      const { messages } = await done;
      expect(messages[0]!.isError).toBe(false);
      expect(rec.events.map((e) => e.type).slice(3)).toEqual(["tool_execution_end", "message_start", "message_end"]);
    } finally {
      gates.close();
    }
  });

  it("hands back whatever a tool returns, arrays and pairs included, as it returned it", async () => {
    // The commonest reply crosses as a [result, runMs] pair; a result that is itself an array must not be mistaken for one.
    // A fake clock that never moves: a run time the pool timed itself would be 0.
    const runtime = open({ tools: [tool("echo", behaviours, "echo")], pool: { maxThreads: 1 }, clock: new FakeClock() });
    const echo = runtime.agentTools()[0]!;
    const results: unknown[] = [[1, "two"], [{ content: [] }, 5], [], null, "text", 0, { content: [{ type: "text", text: "x" }], details: { n: 1 } }];
    for (const [index, result] of results.entries()) {
      expect(await echo.execute(`e${index}`, { result })).toEqual(result);
    }
    // And the run time the thread measured arrives with it (an end event's meta.runMs).
    const runs: number[] = [];
    runtime.on("tool_execution_end", (_event, meta) => runs.push(meta.runMs ?? Number.NaN));
    await runtime.executeToolCalls(batch(["r", "echo", { result: { content: [], details: {} }, spinMs: 20 }]));
    expect(runs).toHaveLength(1);
    expect(runs[0]).toBeGreaterThanOrEqual(20);
  });

  it("lets a busy loop see an abort through ctx.signal.aborted, without terminating it", async () => {
    const clock = new FakeClock();
    const runtime = open({ tools: [tool("poll", behaviours, "spinUntilAborted")], pool: { maxThreads: 1 }, clock });
    const controller = new AbortController();
    const rec = recorder();
    const done = runtime.executeToolCalls(batch(["p", "poll"]), { signal: controller.signal, emit: rec.emit });
    await rec.update("p");
    controller.abort();
    const { messages } = await done;
    expect(messages[0]!.content).toEqual([{ type: "text", text: "stopped after abort (AbortError)" }]);
    expect(messages[0]!.details).toEqual({});
  });

  it("fires the abort event of a call that awaits", async () => {
    // A fake clock: the grace period never runs out on a busy machine.
    const runtime = open({ tools: [tool("wait", behaviours, "awaitAbort")], pool: { maxThreads: 1 }, clock: new FakeClock() });
    const controller = new AbortController();
    const rec = recorder();
    const done = runtime.executeToolCalls(batch(["w", "wait"]), { signal: controller.signal, emit: rec.emit });
    await rec.update("w");
    controller.abort();
    const { messages } = await done;
    expect(messages[0]!.content).toEqual([{ type: "text", text: "abort event (AbortError)" }]);
  });

  it("fires the abort event for a signal first taken after the abort", async () => {
    const runtime = open({ tools: [tool("late", behaviours, "listenLate")], pool: { maxThreads: 1 }, clock: new FakeClock() });
    const channelName = `late-${process.pid}`;
    const go = new BroadcastChannel(channelName);
    try {
      const controller = new AbortController();
      const rec = recorder();
      const done = runtime.executeToolCalls(batch(["l", "late", { channel: channelName }]), { signal: controller.signal, emit: rec.emit });
      await rec.update("l");
      controller.abort();
      go.postMessage("go");
      const { messages } = await done;
      expect(messages[0]!.content).toEqual([{ type: "text", text: "heard the abort late" }]);
    } finally {
      go.close();
    }
  });

  it("never lets the abort of one call reach a listener an earlier call left on its signal", async () => {
    const runtime = open({
      tools: [tool("leave", behaviours, "listenAndLeave"), tool("wait", behaviours, "awaitAbort"), tool("say", behaviours, "say")],
      // One thread, so all three calls share a worker (and could share a signal).
      pool: { maxThreads: 1, leftoverGraceMs: 0 },
      clock: new FakeClock(),
    });
    const channelName = `leaked-abort-${process.pid}`;
    const heard: unknown[] = [];
    const listener = new BroadcastChannel(channelName);
    const heardSync = deferred();
    listener.onmessage = (event) => {
      heard.push((event as { data: unknown }).data);
      if ((event as { data: unknown }).data === "sync") heardSync.resolve();
    };
    try {
      await runtime.executeToolCalls(batch(["first", "leave", { channel: channelName }]));
      const controller = new AbortController();
      const rec = recorder();
      const aborted = runtime.executeToolCalls(batch(["second", "wait"]), { signal: controller.signal, emit: rec.emit });
      await rec.update("second");
      controller.abort();
      expect((await aborted).messages[0]!.content).toEqual([{ type: "text", text: "abort event (AbortError)" }]);
      // Messages from one worker arrive in order: anything the first call's
      // listener said would come before this.
      await runtime.executeToolCalls(batch(["third", "say", { channel: channelName, text: "sync" }]));
      await heardSync.promise;
      expect(heard).toEqual(["sync"]);
    } finally {
      listener.close();
    }
  });

  it("terminates a call that ignores the abort once the grace period has passed; finished siblings keep their results", async () => {
    const clock = new FakeClock();
    const runtime = open({
      tools: [tool("stubborn", behaviours, "spinForever"), tool("quick", behaviours, "quick")],
      pool: { maxThreads: 2, abortGraceMs: 300 },
      clock,
    });
    const controller = new AbortController();
    const rec = recorder();
    const done = runtime.executeToolCalls(batch(["q", "quick"], ["s", "stubborn"]), { signal: controller.signal, emit: rec.emit });
    await rec.update("s");
    await rec.when((e) => e.type === "tool_execution_end" && e.toolCallId === "q");
    controller.abort();
    clock.advance(299);
    expect(rec.events.some((e) => e.type === "tool_execution_end" && e.toolCallId === "s")).toBe(false);
    clock.advance(1);
    const { messages } = await done;
    expect(messages.map((m) => [m.toolCallId, m.isError, m.details])).toEqual([
      ["q", false, { value: null }],
      ["s", true, { code: "TP_ERR_ABORTED" }],
    ]);
    expect(messages[1]!.content[0]).toMatchObject({ text: expect.stringContaining("did not stop within 300 ms") });
    // The pool replaced the terminated worker and serves the next batch.
    const next = await runtime.executeToolCalls(batch(["n", "quick"]));
    expect(next.messages[0]!.isError).toBe(false);
  });

  it("rejects agentTools()' execute with the error the tool threw: its class, name, message and plain fields", async () => {
    const runtime = open({ tools: [tool("throw_as", behaviours, "throwAs")], pool: { maxThreads: 1 } });
    const [agentTool] = runtime.agentTools();
    const { throwAs } = (await import(behaviours.href)) as { throwAs: (args: unknown) => Promise<never> };
    /** What a caller can tell of a rejection; a field the worker cannot send (an object) is left out. */
    const seen = (error: unknown) =>
      error instanceof Error
        ? {
            isTypeError: error instanceof TypeError,
            name: error.name,
            message: error.message,
            fields: Object.fromEntries(Object.entries(error).filter(([, value]) => typeof value !== "object")),
          }
        : { thrown: String(error) };
    for (const kind of ["system", "typed", "named", "string"]) {
      const own = await throwAs({ kind }).catch((error: unknown) => error);
      const pooled = await agentTool!.execute(kind, { kind }).catch((error: unknown) => error);
      expect(pooled, kind).toBeInstanceOf(Error);
      expect(seen(pooled), kind).toEqual(own instanceof Error ? seen(own) : { isTypeError: false, name: "Error", message: String(own), fields: {} });
    }
    const system = await agentTool!.execute("s", { kind: "system" }).catch((error: unknown) => error);
    expect(system).toMatchObject({ code: "ENOENT", syscall: "open", errno: -2 });
    const shadowing = await agentTool!.execute("x", { kind: "shadowing" }).catch((error: unknown) => error);
    expect(String(shadowing)).toBe("Error: shadowed");
    expect(shadowing).toMatchObject({ code: "E_SHADOW" });
    expect(Object.keys(shadowing as object)).toEqual(["code"]);
  });

  it("listens to a batch's signal once, however many of its calls the pool holds", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const runtime = open({ tools: [tool("quick", behaviours, "quick")], pool: { maxThreads: 2 } });
      const controller = new AbortController();
      // One signal for many batches of many calls, as a server's session or a harness gives.
      for (let round = 0; round < 3; round++) {
        const calls = Array.from({ length: 24 }, (_, index): [string, string] => [`c${round}-${index}`, "quick"]);
        const { messages } = await runtime.executeToolCalls(batch(...calls), { signal: controller.signal });
        expect(messages.filter((message) => message.isError)).toEqual([]);
      }
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((warning) => warning.name === "MaxListenersExceededWarning")).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("reports utilization as its threads' share of the pool's capacity over the last 10 s, running calls included", async () => {
    const gates = new GateController();
    try {
      const clock = new FakeClock();
      const runtime = open({ tools: [tool("gated", scripted, "execute")], pool: { minThreads: 2, maxThreads: 2 }, clock });
      expect(runtime.poolStats!.utilization).toBe(0);
      // One call on one of two threads for 1,000 ms of clock time, then none for 1,000 ms.
      const done = runtime.executeToolCalls(batch(["g", "gated", { gate: "utilization:g" }]));
      await gates.whenWaiting("utilization:g");
      clock.advance(1000);
      expect(runtime.poolStats!.utilization).toBeCloseTo(0.5, 5);
      gates.open("utilization:g");
      expect((await done).messages[0]!.isError).toBe(false);
      clock.advance(1000);
      expect(runtime.poolStats!.utilization).toBeCloseTo(0.25, 5);
      // Past the window the call no longer counts: an idle hour does not hide a busy minute.
      clock.advance(11_000);
      expect(runtime.poolStats!.utilization).toBe(0);
    } finally {
      gates.close();
    }
  });

  it("counts timeoutMs from the start of execution, never from the queue", async () => {
    const gates = new GateController();
    try {
      const clock = new FakeClock();
      const runtime = open({
        tools: [tool("gated", scripted, "execute", { timeoutMs: 300 }), tool("stubborn", behaviours, "spinForever", { timeoutMs: 300 })],
        pool: { maxThreads: 1 },
        clock,
      });
      const rec = recorder();
      // One thread: `s` waits in the queue while `g` runs.
      const done = runtime.executeToolCalls(batch(["g", "gated", { gate: "timeout:g" }], ["s", "stubborn"]), { emit: rec.emit });
      await gates.whenWaiting("timeout:g");
      clock.advance(250);
      gates.open("timeout:g");
      await rec.update("s");
      // `s` has been queued for 250 ms of clock time and has just started.
      clock.advance(250);
      expect(rec.events.some((e) => e.type === "tool_execution_end" && e.toolCallId === "s")).toBe(false);
      clock.advance(50);
      const { messages } = await done;
      expect(messages.map((m) => [m.isError, m.details])).toEqual([
        [false, expect.objectContaining({ toolCallId: "g" })],
        [true, { code: "TP_ERR_TIMEOUT" }],
      ]);
      expect((rec.events.find((e) => e.type === "tool_execution_end" && e.toolCallId === "s") as ToolExecutionEndEvent).result.content[0]).toEqual({
        type: "text",
        text: 'Tool "stubborn" timed out after 300 ms; its worker was terminated while the tool was still running, so it may have had some of its effects',
      });
    } finally {
      gates.close();
    }
  });

  it("reports a missing export as TP_ERR_TOOL_LOAD for each call", async () => {
    const runtime = open({ tools: [tool("missing", behaviours, "doesNotExist"), tool("quick", behaviours, "quick")] });
    const { messages } = await runtime.executeToolCalls(batch(["m1", "missing"], ["q", "quick"], ["m2", "missing"]));
    expect(messages.map((m) => [m.isError, (m.details as { code?: string }).code])).toEqual([
      [true, "TP_ERR_TOOL_LOAD"],
      [false, undefined],
      [true, "TP_ERR_TOOL_LOAD"],
    ]);
    expect(messages[0]!.content[0]).toMatchObject({ text: expect.stringContaining('no function export "doesNotExist"') });
  });

  it("answers a full queue at once with TP_ERR_QUEUE_FULL", async () => {
    const gates = new GateController();
    try {
      const runtime = open({ tools: [tool("work", scripted, "execute")], pool: { maxThreads: 1, maxQueue: 1 } });
      const done = runtime.executeToolCalls(
        batch(["a", "work", { gate: "queue:a" }], ["b", "work", { text: "queued" }], ["c", "work", { text: "rejected" }]),
      );
      await gates.whenWaiting("queue:a");
      gates.open("queue:a");
      const { messages } = await done;
      expect(messages.map((m) => [m.toolCallId, m.isError, (m.details as { code?: string }).code])).toEqual([
        ["a", false, undefined],
        ["b", false, undefined],
        ["c", true, "TP_ERR_QUEUE_FULL"],
      ]);
    } finally {
      gates.close();
    }
  });
});
