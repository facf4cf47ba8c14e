import { afterEach, describe, expect } from "vitest";

import { workerTool, type Runtime } from "toolpool";

import { GateController } from "./support/gates.js";
import { batch, until } from "./support/helpers.js";
import { open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest({ force: true });

const turns = new URL("./fixtures/tools/turns.mjs", import.meta.url);
const anyArgs = { type: "object" };
const turnTool = workerTool({ name: "turn", description: "reports its start order", parameters: anyArgs, module: turns });
const heavyTool = workerTool({ name: "heavy", description: "reports its start order", parameters: anyArgs, module: turns, cost: 3 });

let gates: GateController;
afterEach(async () => {
  gates?.close();
});

/** Until the pool reaches a state it gets to by itself; a failure shows the last stats. */
const untilStats = (runtime: Runtime, predicate: (stats: NonNullable<Runtime["poolStats"]>) => boolean) =>
  until(
    () => predicate(runtime.poolStats!),
    () => `pool stats matching ${predicate} (last: ${JSON.stringify(runtime.poolStats)})`,
  );

/** Start order by call id, from the results. */
const startOrder = (outcomes: { messages: { toolCallId: string; details: unknown }[] }[]) =>
  outcomes
    .flatMap(({ messages }) => messages)
    .sort((a, b) => (a.details as { order: number }).order - (b.details as { order: number }).order)
    .map((message) => message.toolCallId);

describe("sessions", () => {
  it("gives sessions turns on a busy pool: the next call comes from the next session, FIFO within one", async () => {
    gates = new GateController();
    const runtime = open({ tools: [turnTool], pool: { maxThreads: 1 } });
    const a = runtime.executeToolCalls(batch(["a0", "turn", { gate: "a0" }], ["a1", "turn"], ["a2", "turn"], ["a3", "turn"], ["a4", "turn"]), {
      sessionKey: "A",
    });
    await gates.whenWaiting("a0");
    await untilStats(runtime, (stats) => stats.queued === 4);
    const b = runtime.executeToolCalls(batch(["b1", "turn"], ["b2", "turn"]), { sessionKey: "B" });
    await untilStats(runtime, (stats) => stats.queued === 6);
    const c = runtime.executeToolCalls(batch(["c1", "turn"], ["c2", "turn"]), { sessionKey: "C" });
    await untilStats(runtime, (stats) => stats.queued === 8 && stats.sessionsWaiting === 3);
    gates.open("a0");
    const outcomes = await Promise.all([a, b, c]);
    // a0 was session A's turn in the first round.
    expect(startOrder(outcomes)).toEqual(["a0", "b1", "c1", "a1", "b2", "c2", "a2", "a3", "a4"]);
    // Per-batch order is untouched: messages in call order.
    expect(outcomes[0]!.messages.map((message) => message.toolCallId)).toEqual(["a0", "a1", "a2", "a3", "a4"]);
  });

  it("treats each batch without a sessionKey as a session of its own", async () => {
    gates = new GateController();
    const runtime = open({ tools: [turnTool], pool: { maxThreads: 1 } });
    const first = runtime.executeToolCalls(batch(["x0", "turn", { gate: "x0" }], ["x1", "turn"], ["x2", "turn"]));
    await gates.whenWaiting("x0");
    await untilStats(runtime, (stats) => stats.queued === 2);
    const second = runtime.executeToolCalls(batch(["y1", "turn"], ["y2", "turn"]));
    await untilStats(runtime, (stats) => stats.queued === 4);
    gates.open("x0");
    expect(startOrder(await Promise.all([first, second]))).toEqual(["x0", "y1", "x1", "y2", "x2"]);
  });

  it("charges a call of a costly tool several turns of its session's share", async () => {
    gates = new GateController();
    const runtime = open({ tools: [turnTool, heavyTool], pool: { maxThreads: 1 } });
    const hold = runtime.executeToolCalls(batch(["g", "turn", { gate: "g" }]), { sessionKey: "G" });
    await gates.whenWaiting("g");
    const heavy = runtime.executeToolCalls(batch(["h1", "heavy"], ["h2", "heavy"]), { sessionKey: "H" });
    await untilStats(runtime, (stats) => stats.queued === 2);
    const light = runtime.executeToolCalls(batch(["l1", "turn"], ["l2", "turn"], ["l3", "turn"], ["l4", "turn"], ["l5", "turn"], ["l6", "turn"]), {
      sessionKey: "L",
    });
    await untilStats(runtime, (stats) => stats.queued === 8);
    gates.open("g");
    const order = startOrder(await Promise.all([hold, heavy, light]));
    expect(order).toEqual(["g", "l1", "l2", "h1", "l3", "l4", "l5", "h2", "l6"]);
  });

  it("caps the threads one session holds (maxRunningPerSession), leaving the rest to others", async () => {
    gates = new GateController();
    const runtime = open({ tools: [turnTool], pool: { maxThreads: 2, maxRunningPerSession: 1 } });
    const a = runtime.executeToolCalls(batch(["a1", "turn", { gate: "a1" }], ["a2", "turn"], ["a3", "turn"]), { sessionKey: "A" });
    await gates.whenWaiting("a1");
    // A thread is free, but session A holds its one.
    await untilStats(runtime, (stats) => stats.running === 1 && stats.queued === 2);
    const b = await runtime.executeToolCalls(batch(["b1", "turn"]), { sessionKey: "B" });
    expect(b.messages[0]!.isError).toBe(false);
    expect(runtime.poolStats).toMatchObject({ running: 1, queued: 2, sessionsWaiting: 1 });
    gates.open("a1");
    const outcome = await a;
    expect(outcome.messages.map((message) => message.isError)).toEqual([false, false, false]);
  });

  it("caps the threads one session holds of a named pool (its maxRunningPerSession), and of that pool only", async () => {
    gates = new GateController();
    const pooled = workerTool({
      name: "pooled",
      description: "reports its start order",
      parameters: anyArgs,
      module: turns,
      pool: { name: "io", maxThreads: 2, maxRunningPerSession: 1 },
    });
    const runtime = open({ tools: [turnTool, pooled], pool: { maxThreads: 2 } });
    // The shared pool has no cap: session A holds both its threads.
    const shared = runtime.executeToolCalls(batch(["s1", "turn", { gate: "s1" }], ["s2", "turn", { gate: "s2" }]), { sessionKey: "A" });
    await gates.whenWaiting("s1");
    await gates.whenWaiting("s2");
    const a = runtime.executeToolCalls(batch(["a1", "pooled", { gate: "a1" }], ["a2", "pooled"], ["a3", "pooled"]), { sessionKey: "A" });
    await gates.whenWaiting("a1");
    // A thread of "io" is free, but session A holds its one.
    await untilStats(runtime, (stats) => stats.running === 3 && stats.queued === 2);
    const b = await runtime.executeToolCalls(batch(["b1", "pooled"]), { sessionKey: "B" });
    expect(b.messages[0]!.isError).toBe(false);
    expect(runtime.poolStats).toMatchObject({ running: 3, queued: 2 });
    gates.open("a1");
    gates.open("s1");
    gates.open("s2");
    const outcomes = await Promise.all([a, shared]);
    expect(outcomes.flatMap((outcome) => outcome.messages.map((message) => message.isError))).toEqual([false, false, false, false, false]);
  });

  it("keeps the cap on a warm pool, where Piscina places calls without queueing them, and keeps a session's order", async () => {
    gates = new GateController();
    const runtime = open({ tools: [turnTool], pool: { maxThreads: 2, maxRunningPerSession: 1 } });
    // Warm: both threads ready, so a call arriving at an idle pool skips Piscina's queue.
    await runtime.executeToolCalls(batch(["w1", "turn"], ["w2", "turn"]), { sessionKey: "W" });
    const first = runtime.executeToolCalls(batch(["a1", "turn", { gate: "a1" }]), { sessionKey: "A" });
    await gates.whenWaiting("a1");
    const second = runtime.executeToolCalls(batch(["a2", "turn", { gate: "a2" }]), { sessionKey: "A" });
    await untilStats(runtime, (stats) => stats.queued === 1);
    const third = runtime.executeToolCalls(batch(["a3", "turn"]), { sessionKey: "A" });
    await untilStats(runtime, (stats) => stats.queued === 2);
    // One thread idles: session A holds its one.
    expect(runtime.poolStats).toMatchObject({ running: 1, queued: 2, sessionsWaiting: 1 });
    gates.open("a1");
    await gates.whenWaiting("a2");
    expect(runtime.poolStats).toMatchObject({ running: 1, queued: 1 });
    gates.open("a2");
    const order = startOrder(await Promise.all([first, second, third]));
    expect(order.slice(-3)).toEqual(["a1", "a2", "a3"]);
  });

  it("gives a capped session's next call its turn when a running one ends without freeing Piscina's thread (time limit)", async () => {
    gates = new GateController();
    const limited = workerTool({
      name: "limited",
      description: "spins",
      parameters: anyArgs,
      module: new URL("./fixtures/tools/faults.mjs", import.meta.url),
      timeoutMs: 100,
    });
    const runtime = open({ tools: [turnTool, limited], pool: { maxThreads: 2, minThreads: 1, maxRunningPerSession: 1 } });
    const outcome = await runtime.executeToolCalls(batch(["s1", "limited", { fault: "spin" }], ["s2", "turn"], ["s3", "turn"]), { sessionKey: "S" });
    expect(outcome.messages.map((message) => (message.details as { code?: string } | undefined)?.code ?? "ok")).toEqual([
      "TP_ERR_TIMEOUT",
      "ok",
      "ok",
    ]);
  });

  it("refuses a sessionKey that is not a short non-empty string", async () => {
    const runtime = open({ tools: [turnTool], pool: { maxThreads: 1 } });
    for (const sessionKey of ["", "x".repeat(257), 42]) {
      await expect(runtime.executeToolCalls(batch(["z", "turn"]), { sessionKey: sessionKey as string })).rejects.toMatchObject({
        code: "TP_ERR_INVALID_BATCH",
      });
    }
  });
});
