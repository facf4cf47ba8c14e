import { describe, expect, it } from "vitest";

import { createRuntime, workerTool } from "toolpool";
import { McpCallGate, McpRefusal, mcpCallGatePools, type McpCallSlot } from "toolpool/mcp";

const signal = () => new AbortController().signal;

/** Whether `acquire` granted a place within a turn of the event loop (a call that waits for a release never does). */
async function startsAtOnce(acquired: Promise<McpCallSlot | undefined>): Promise<McpCallSlot | "waiting"> {
  const waiting = new Promise<"waiting">((resolve) => setImmediate(() => resolve("waiting")));
  return (await Promise.race([acquired, waiting]))!;
}

describe("McpCallGate", () => {
  it("hands free threads to waiting calls with sessions taking turns, one call each", async () => {
    const gate = new McpCallGate({ maxRunning: 1 });
    let running = (await gate.acquire("a", signal(), true))!;
    const granted: string[] = [];
    const slots = new Map<string, McpCallSlot>();
    for (const [session, name] of [
      ["a", "a1"],
      ["a", "a2"],
      ["a", "a3"],
      ["b", "b1"],
      ["b", "b2"],
    ] as const) {
      void gate.acquire(session, signal(), true).then((slot) => {
        granted.push(name);
        slots.set(name, slot!);
      });
    }
    expect(gate.waiting).toBe(5);
    for (let index = 0; index < 5; index++) {
      running.release();
      await new Promise((resolve) => setImmediate(resolve));
      running = slots.get(granted.at(-1)!)!;
    }
    expect(granted).toEqual(["a1", "b1", "a2", "b2", "a3"]);
    running.release();
    expect([gate.running, gate.waiting]).toEqual([0, 0]);
  });

  it("lets a call cancelled while it waits leave without ever getting a thread", async () => {
    const gate = new McpCallGate({ maxRunning: 1 });
    const running = (await gate.acquire("a", signal(), true))!;
    const controller = new AbortController();
    const cancelled = gate.acquire("a", controller.signal, true);
    const next = gate.acquire("b", signal(), true);
    controller.abort();
    expect(await cancelled).toBeUndefined();
    expect(gate.waiting).toBe(1);
    running.release();
    expect(await next).toBeDefined();
    expect(gate.running).toBe(1);
    // An aborted signal never gets a place, even with threads free.
    const aborted = new AbortController();
    aborted.abort();
    expect(await new McpCallGate({ maxRunning: 4 }).acquire("a", aborted.signal, true)).toBeUndefined();
  });

  it("refuses a call past maxSessionCalls or maxQueue with TP_ERR_QUEUE_FULL, and never queues a call that uses no thread", async () => {
    const gate = new McpCallGate({ maxRunning: 1, maxQueue: 1, maxSessionCalls: 2, retryAfterSeconds: 5 });
    await gate.acquire("a", signal(), true);
    void gate.acquire("a", signal(), true);
    const perSession = await gate.acquire("a", signal(), false).catch((error: unknown) => error);
    expect(perSession).toBeInstanceOf(McpRefusal);
    expect((perSession as McpRefusal).data).toEqual({ code: "TP_ERR_QUEUE_FULL", retryAfterSeconds: 5 });
    expect((perSession as McpRefusal).message).toContain("maxSessionCalls 2");
    const queue = await gate.acquire("b", signal(), true).catch((error: unknown) => error);
    expect((queue as McpRefusal).message).toContain("maxQueue 1");
    expect((queue as McpRefusal).code).toBe(-32000);
    // An inline tool's call runs at once, whatever waits.
    expect(await gate.acquire("b", signal(), false)).toBeDefined();
  });

  it("says which calls of a POST it refuses as they arrive, each counting for the next, as acquire would refuse them", async () => {
    const gate = new McpCallGate({ maxRunning: 1, pools: { io: 1 }, maxQueue: 2, maxSessionCalls: 6, retryAfterSeconds: 3 });
    const held = (await gate.acquire("a", signal(), true))!;
    // The shared pool is full: two calls may wait; the io pool's place is free; inline calls never wait.
    const pools = [true, "io", true, false, true, false, false] as const;
    const kind = (refusal: McpRefusal | undefined) =>
      refusal === undefined ? "admitted" : refusal.message.includes("maxSessionCalls 6") ? "session full" : "queue full";
    const refusals = gate.refusalsOf("a", pools);
    expect(refusals.map(kind)).toEqual(["admitted", "admitted", "admitted", "admitted", "queue full", "admitted", "session full"]);
    expect(refusals[4]!.message).toContain("maxQueue 2");
    expect(refusals[4]!.data).toEqual({ code: "TP_ERR_QUEUE_FULL", retryAfterSeconds: 3 });
    expect(refusals[6]!.data).toEqual({ code: "TP_ERR_QUEUE_FULL", retryAfterSeconds: 3 });
    // It only tells: nothing was counted.
    expect([gate.running, gate.waiting]).toEqual([1, 0]);
    // acquire, given the same calls in the same order, refuses the same ones.
    const acquired: string[] = [];
    for (const pool of pools) {
      const outcome = await startsAtOnce(gate.acquire("a", signal(), pool)).catch((error: unknown) => error as McpRefusal);
      acquired.push(outcome === "waiting" ? "admitted" : outcome instanceof McpRefusal ? kind(outcome) : "admitted");
    }
    expect(acquired).toEqual(["admitted", "admitted", "admitted", "admitted", "queue full", "admitted", "session full"]);
    expect(gate.waiting).toBe(2);
    held.release();
  });

  it("refuses in refusalsOf only calls acquire refuses, counting session shares as acquire does", async () => {
    const kind = (outcome: McpRefusal | undefined) =>
      outcome === undefined ? "admitted" : outcome.message.includes("maxSessionCalls") ? "session full" : "queue full";
    /** What `acquire`, called once per call in order, does with each. */
    const acquired = async (gate: McpCallGate, session: string, pools: readonly (boolean | string)[]) => {
      const outcomes: string[] = [];
      for (const pool of pools) {
        const outcome = await startsAtOnce(gate.acquire(session, signal(), pool)).catch((error: unknown) => error as McpRefusal);
        outcomes.push(outcome instanceof McpRefusal ? kind(outcome) : "admitted");
      }
      return outcomes;
    };
    // A session at its share of a pool with a thread free: its next call waits, and the queue is then full.
    const gate = new McpCallGate({ maxRunning: 2, maxSessionRunning: 1, maxQueue: 1, maxSessionCalls: 3 });
    const pools = [true, true, true, false];
    expect(gate.refusalsOf("a", pools).map(kind)).toEqual(["admitted", "admitted", "queue full", "admitted"]);
    expect(await acquired(gate, "a", pools)).toEqual(["admitted", "admitted", "queue full", "admitted"]);

    // Random gates, random calls already there, random POSTs: refusalsOf says what acquire then does.
    let seed = 43;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return Math.floor(seed / 65536) % n;
    };
    const choices = [true, false, "io", "fleet", "none"] as const;
    for (let round = 0; round < 150; round += 1) {
      const options = {
        maxRunning: 1 + random(3),
        pools: { io: random(2) === 0 ? 1 + random(4) : { places: 1 + random(4), maxSessionRunning: 1 + random(3) }, fleet: 1 + random(3) },
        ...(random(2) === 0 ? {} : { maxSessionRunning: 1 + random(4) }),
        maxQueue: random(4),
        maxSessionCalls: 1 + random(6),
      };
      const randomGate = new McpCallGate(options);
      for (let index = random(8); index > 0; index -= 1) {
        await startsAtOnce(randomGate.acquire(random(2) === 0 ? "a" : "b", signal(), choices[random(choices.length)]!)).catch(() => {});
      }
      const post = Array.from({ length: 1 + random(8) }, () => choices[random(choices.length)]!);
      const told = randomGate.refusalsOf("a", post).map(kind);
      expect({ options, post, outcomes: await acquired(randomGate, "a", post) }).toEqual({ options, post, outcomes: told });
    }
  });

  it("counts each pool's places apart: another session's call on an idle pool starts while one session holds a pool", async () => {
    const gate = new McpCallGate({ maxRunning: 2, pools: { "pool:io": 2 }, maxSessionRunning: 2 });
    // Session a holds every place of the shared pool with long calls (two `sleep 25` in bash).
    await gate.acquire("a", signal(), true);
    await gate.acquire("a", signal(), "shared");
    const b = await startsAtOnce(gate.acquire("b", signal(), "pool:io"));
    expect(b).not.toBe("waiting");
    expect([gate.running, gate.waiting]).toEqual([3, 0]);
    (b as McpCallSlot).release();
  });

  it("bounds the places of a pool one session holds to its share (half the pool's, rounded up): another session's call on that pool starts at once", async () => {
    const gate = new McpCallGate({ maxRunning: 2, pools: { "pool:io": 3 } });
    expect([gate.sessionShare(), gate.sessionShare("pool:io"), gate.sessionShare("no such pool")]).toEqual([1, 2, 1]);
    const a1 = (await gate.acquire("a", signal(), true))!;
    // At its share: the session's next call on the pool waits, though a thread is free.
    const a2 = gate.acquire("a", signal(), true);
    expect(await startsAtOnce(a2)).toBe("waiting");
    // A later call of the same session on a pool where it is below its share goes first.
    const aIo = await startsAtOnce(gate.acquire("a", signal(), "pool:io"));
    expect(aIo).not.toBe("waiting");
    const b = await startsAtOnce(gate.acquire("b", signal(), true));
    expect(b).not.toBe("waiting");
    expect([gate.running, gate.waiting]).toEqual([3, 1]);
    // a's waiting call gets the place a gives back, not b's.
    (b as McpCallSlot).release();
    expect(await startsAtOnce(a2)).toBe("waiting");
    a1.release();
    expect(await startsAtOnce(a2)).not.toBe("waiting");
    // maxSessionRunning sets the share; past a pool's places it is the whole pool.
    expect(new McpCallGate({ maxRunning: 4, pools: { x: 2 }, maxSessionRunning: 3 }).sessionShare("x")).toBe(2);
    expect(new McpCallGate({ maxRunning: 4, maxSessionRunning: 3 }).sessionShare()).toBe(3);
  });

  it("holds a session to a pool's own per-session cap: its call past the cap waits here, and another session's call starts on the idle thread", async () => {
    // coding-io with 4 threads and --coding-threads-per-session 1: the pool runs one call of a session at a time.
    const gate = new McpCallGate({ maxRunning: 2, pools: { "pool:io": { places: 4, maxSessionRunning: 1 } } });
    expect(gate.sessionShare("pool:io")).toBe(1);
    await gate.acquire("a", signal(), "pool:io");
    expect(await startsAtOnce(gate.acquire("a", signal(), "pool:io"))).toBe("waiting");
    expect(await startsAtOnce(gate.acquire("b", signal(), "pool:io"))).not.toBe("waiting");
    expect([gate.running, gate.waiting]).toEqual([2, 1]);
    // Without maxSessionRunning the pool's cap is the share, above half the pool too; maxSessionRunning still bounds it.
    expect(new McpCallGate({ maxRunning: 2, pools: { io: { places: 4, maxSessionRunning: 3 } } }).sessionShare("io")).toBe(3);
    expect(new McpCallGate({ maxRunning: 2, pools: { io: { places: 4, maxSessionRunning: 3 } }, maxSessionRunning: 2 }).sessionShare("io")).toBe(2);
    expect(new McpCallGate({ maxRunning: 2, pools: { io: { places: 4, maxSessionRunning: 3 } }, maxSessionRunning: 9 }).sessionShare("io")).toBe(3);
    // "shared" names the shared pool: its places and cap.
    expect(new McpCallGate({ maxRunning: 2, pools: { shared: { places: 4, maxSessionRunning: 1 } } }).sessionShare()).toBe(1);
  });

  it("takes each pool's threads and per-session cap from mcpCallGatePools as the runtime makes the pool", async () => {
    const module = new URL("./fixtures/tools/turns.mjs", import.meta.url);
    const tool = (name: string, pool?: { name: string; maxThreads?: number; maxRunningPerSession?: number }) =>
      workerTool({ name, description: name, parameters: { type: "object" }, module, ...(pool === undefined ? {} : { pool }) });
    // The first tool naming "io" gives neither: the runtime takes them from the first that does.
    const runtime = createRuntime({
      tools: [tool("plain"), tool("first", { name: "io" }), tool("second", { name: "io", maxThreads: 4, maxRunningPerSession: 3 })],
      pool: { maxThreads: 2, minThreads: 1 },
    });
    try {
      expect(mcpCallGatePools(runtime)).toEqual({ "pool:io": { places: 4, maxSessionRunning: 3 } });
    } finally {
      await runtime.close({ force: true });
    }
    const capped = createRuntime({
      tools: [tool("plain"), tool("io", { name: "io", maxThreads: 3 })],
      pool: { maxThreads: 2, minThreads: 1, maxRunningPerSession: 1 },
    });
    try {
      expect(mcpCallGatePools(capped)).toEqual({ shared: { places: 2, maxSessionRunning: 1 }, "pool:io": { places: 3, maxSessionRunning: 1 } });
    } finally {
      await capped.close({ force: true });
    }
  });

  it.each([
    [{ maxRunning: 1, pools: { io: 0 } }, "Expected `pools.io` to be an integer >= 1, got `0` (number)"],
    [
      { maxRunning: 1, pools: { io: { places: 2, maxSessionRunning: 0 } } },
      "Expected `pools.io.maxSessionRunning` to be an integer >= 1, got `0` (number)",
    ],
    [{ maxRunning: 1, pools: [] }, "Expected `pools` to be an object of places by pool name, got `[]` (array)"],
    [{ maxRunning: 1, maxSessionRunning: 0 }, "Expected `maxSessionRunning` to be an integer >= 1, got `0` (number)"],
    [{ maxRunning: 0 }, "Expected `maxRunning` to be an integer >= 1, got `0` (number)"],
    [{ maxRunning: 1, maxQueue: -1 }, "Expected `maxQueue` to be an integer >= 0, got `-1` (number)"],
    [{ maxRunning: 1, maxSessionCalls: 1.5 }, "Expected `maxSessionCalls` to be an integer >= 1, got `1.5` (number)"],
    [{ maxRunning: 1, retryAfterSeconds: "1" }, 'Expected `retryAfterSeconds` to be an integer >= 0, got `"1"` (string)'],
  ])("refuses options %j with TP_ERR_INVALID_OPTION", (options, message) => {
    expect(() => new McpCallGate(options as never)).toThrow(expect.objectContaining({ code: "TP_ERR_INVALID_OPTION", message }));
  });
});
