/**
 * A spread call shares the pool: its parts take at most its session's fair
 * share of the threads, and give their threads back between steps when a
 * call of another session waits (`ctx.shouldYield()`; grep's parts between
 * chunks of files). Real threads; the order of the pool's own events shows
 * who waited for whom, no clock.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";

import { afterAll, beforeAll, describe, expect } from "vitest";

import { builtinTools, workerTool, type PoolCallEvent, type Runtime, type SpreadOutcome } from "toolpool";

import { FakeClock } from "./support/fake-clock.js";
import { batch, until } from "./support/helpers.js";
import { open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest();

const spreadModule = new URL("./fixtures/tools/spread.mjs", import.meta.url);
const tool = (name: string, exportName: string) =>
  workerTool({ name, description: name, parameters: { type: "object" }, module: spreadModule, exportName });
const tools = [tool("spread_parent", "spreadParent"), tool("noop", "noop"), tool("wait_for_abort", "waitForAbort")];

/** A runtime whose threads have all answered a call (so they count as idle), recording its pool events. */
async function warmRuntime(threads: number, extraTools = tools): Promise<{ runtime: Runtime; events: PoolCallEvent[] }> {
  const runtime = open({ tools: extraTools, pool: { minThreads: threads, maxThreads: threads } });
  const events: PoolCallEvent[] = [];
  runtime.poolEvents.on((event) => events.push(event));
  const warmTool = extraTools.some((candidate) => candidate.name === "noop") ? "noop" : undefined;
  if (warmTool !== undefined) {
    const { messages } = await runtime.executeToolCalls(batch(...Array.from({ length: threads }, (_, i): [string, string] => [`w${i}`, warmTool])));
    expect(new Set(messages.map((m) => (m.details as { threadId: number }).threadId)).size).toBe(threads);
  }
  return { runtime, events };
}

const running = (runtime: Runtime) => runtime.diagnose().pools.flatMap((pool) => pool.calls.filter((call) => call.state === "running"));

/** The index of the first event of `type` for call `toolCallId` of `tool` (or any tool). */
function indexOf(events: PoolCallEvent[], type: PoolCallEvent["type"], toolCallId: string, tool?: string): number {
  const index = events.findIndex((event) => event.type === type && event.toolCallId === toolCallId && (tool === undefined || event.tool === tool));
  expect(index, `${type} of ${toolCallId}`).toBeGreaterThanOrEqual(0);
  return index;
}

describe("a spread call shares the pool", () => {
  it("takes at most its session's fair share of the idle threads", async () => {
    const { runtime } = await warmRuntime(4);
    // Session "other" holds one thread; "spreader" runs its call on another: two sessions, a share of two threads each.
    const controller = new AbortController();
    const held = runtime.executeToolCalls(batch(["h", "wait_for_abort"]), { sessionKey: "other", signal: controller.signal });
    await until(() => running(runtime).length === 1, "the other session's call running");
    const { messages } = await runtime.executeToolCalls(batch(["s", "spread_parent", { part: "echoPart", inputs: [1, 2, 3] }]), {
      sessionKey: "spreader",
    });
    const { outcomes } = messages[0]!.details as { outcomes: SpreadOutcome[] };
    // Two threads are idle, but the spreader's share is two and its call holds one of them: one part runs.
    expect(outcomes.map((outcome) => (outcome.ok ? "ran" : outcome.error))).toEqual(["ran", "not run: no idle thread", "not run: no idle thread"]);
    controller.abort();
    await held;
  });

  it("uses every idle thread while its session is the only one", async () => {
    const { runtime } = await warmRuntime(3);
    const { messages } = await runtime.executeToolCalls(batch(["s", "spread_parent", { part: "echoPart", inputs: [1, 2, 3] }]), {
      sessionKey: "alone",
    });
    const { outcomes } = messages[0]!.details as { outcomes: SpreadOutcome[] };
    expect(outcomes.map((outcome) => (outcome.ok ? "ran" : outcome.error))).toEqual(["ran", "ran", "not run: no idle thread"]);
  });

  it("gives a part's thread back when a call of another session waits", { timeout: 60_000 }, async () => {
    const { runtime, events } = await warmRuntime(2);
    const spread = runtime.executeToolCalls(batch(["s", "spread_parent", { part: "yieldingPart", inputs: [0] }]), { sessionKey: "spreader" });
    // The call and its part hold both threads.
    await until(() => running(runtime).length === 2, "the call and its part running");
    const light = await runtime.executeToolCalls(batch(["l", "noop"]), { sessionKey: "light" });
    expect(light.messages[0]!.isError).toBe(false);
    const { messages } = await spread;
    const { outcomes } = messages[0]!.details as { outcomes: SpreadOutcome<{ yielded: boolean }>[] };
    expect(outcomes).toEqual([{ ok: true, value: expect.objectContaining({ yielded: true }) }]);
    // The light call started while the spread call still ran: it waited for the part's step, not for the call.
    expect(indexOf(events, "started", "l")).toBeLessThan(indexOf(events, "ended", "s", "spread_parent"));
  });

  it("does not ask a part of the waiting call's own session to yield", { timeout: 60_000 }, async () => {
    const { runtime } = await warmRuntime(2);
    const controller = new AbortController();
    const spread = runtime.executeToolCalls(batch(["s", "spread_parent", { part: "yieldingPart", inputs: [0] }]), {
      sessionKey: "same",
      signal: controller.signal,
    });
    await until(() => running(runtime).length === 2, "the call and its part running");
    const mine = runtime.executeToolCalls(batch(["m", "noop"]), { sessionKey: "same" });
    // The session's own call waits in the queue; its part keeps going until the call is aborted.
    await until(() => runtime.poolStats?.queued === 1, "the session's own call queued");
    controller.abort();
    const { messages } = await spread;
    expect(messages[0]!.isError).toBe(true);
    expect((await mine).messages[0]!.isError).toBe(false);
  });
});

describe("a spread grep and a light session on a 2-thread pool", () => {
  let root: string;
  beforeAll(() => {
    // 6,400 files: 100 chunks of 64, far more than one part's step.
    root = realpathSync(mkdtempSync(join(tmpdir(), "toolpool-spread-fair-")));
    for (let d = 0; d < 64; d++) {
      mkdirSync(join(root, `d${d}`));
      for (let f = 0; f < 100; f++) writeFileSync(join(root, `d${d}`, `f${f}.txt`), `line one\nneedle ${d}/${f}\nline three\n`);
    }
    // Synchronous writes cannot hang, but 6,400 of them took over 20 s on a machine busy with two other suites.
  }, 120_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  // The yield itself is proven above on a part that runs until asked; here the real grep, whose parts ask between chunks.
  it("starts the light call while the grep still runs, and the grep's result is the one it gives alone", { timeout: 120_000 }, async () => {
    const { runtime, events } = await warmRuntime(2, builtinTools(["grep", "hash"], { root }));
    writeFileSync(join(root, "small.txt"), "small\n");
    // Warm both threads with the light tool, in two sessions at once.
    await Promise.all(["w0", "w1"].map((id) => runtime.executeToolCalls(batch([id, "hash", { path: "small.txt" }]), { sessionKey: id })));
    const grep = runtime.executeToolCalls(batch(["g", "grep", { pattern: "needle", maxResults: 5_000 }]), { sessionKey: "heavy" });
    // The grep's part is running on the second thread (it carries the grep call's id).
    await until(
      () => running(runtime).length === 2 || events.some((event) => event.type === "ended" && event.toolCallId === "g"),
      "the grep's part running",
    );
    const partRan = running(runtime).length === 2;
    const light = await runtime.executeToolCalls(batch(["l", "hash", { path: "small.txt" }]), { sessionKey: "light" });
    expect(light.messages[0]!.isError).toBe(false);
    const { messages } = await grep;
    expect(messages[0]!.isError).toBe(false);
    // The same as the grep run alone: the chunks the part left were searched by the call's own thread.
    const alone = await runtime.executeToolCalls(batch(["g2", "grep", { pattern: "needle", maxResults: 5_000 }]), { sessionKey: "heavy" });
    expect(messages[0]!.content).toEqual(alone.messages[0]!.content);
    expect(messages[0]!.details).toEqual(alone.messages[0]!.details);
    // Only meaningful when the part was caught running (the walk and search may be quicker than the test on a fast machine).
    if (partRan) expect(indexOf(events, "started", "l")).toBeLessThan(indexOf(events, "ended", "g", "grep"));
    expect(partRan, "the grep's part was running when the light call came").toBe(true);
  });
});

describe("a part that never gives its thread back", () => {
  it("is preempted when a call of another session waits: that call runs on the thread that replaces it, and the spread call learns why its part failed", {
    timeout: 120_000,
  }, async () => {
    // A long time limit, the spread call's only end besides its part's preemption: the light call must not wait for it.
    const bounded = [
      workerTool({
        name: "spread_parent",
        description: "s",
        parameters: { type: "object" },
        module: spreadModule,
        exportName: "spreadParent",
        timeoutMs: 60_000,
      }),
      tool("noop", "noop"),
    ];
    const { runtime, events } = await warmRuntime(2, bounded);
    // The part loops without ever asking whether to yield, as a regular expression that backtracks for ever does.
    const spread = runtime.executeToolCalls(batch(["s", "spread_parent", { part: "spinPart", inputs: [0] }]), { sessionKey: "spreader" });
    await until(() => running(runtime).length === 2, "the call and its part running");
    const light = await runtime.executeToolCalls(batch(["l", "noop"]), { sessionKey: "light" });
    expect(light.messages[0]!.isError).toBe(false);
    const { messages } = await spread;
    const { outcomes } = messages[0]!.details as { outcomes: SpreadOutcome[] };
    expect(outcomes).toEqual([
      { ok: false, ran: true, error: expect.stringMatching(/^TP_ERR_ABORTED: .*did not give its thread back within \d+ ms/) },
    ]);
    // The light call ran on the thread that replaced the part's, not on the call's after its time limit.
    expect(messages[0]!.isError).toBe(false);
    expect(indexOf(events, "started", "l")).toBeGreaterThan(indexOf(events, "ended", "s", "spread_parent (part: spinPart)"));
  });
});

describe("a part aborted while asked to yield", () => {
  it("keeps its abort's whole grace: it is not terminated when the earlier yield's grace runs out", { timeout: 120_000 }, async () => {
    const clock = new FakeClock();
    const runtime = open({
      tools: [
        workerTool({ name: "spread_parent", description: "s", parameters: { type: "object" }, module: spreadModule, exportName: "spreadParent" }),
        tool("noop", "noop"),
      ],
      pool: { minThreads: 2, maxThreads: 2, abortGraceMs: 500 },
      clock,
    });
    await runtime.executeToolCalls(batch(["w0", "noop"], ["w1", "noop"]));
    const controller = new AbortController();
    const spread = runtime.executeToolCalls(batch(["s", "spread_parent", { part: "spinPart", inputs: [0] }]), {
      sessionKey: "spreader",
      signal: controller.signal,
    });
    const calls = () => runtime.diagnose().pools.flatMap((pool) => pool.calls);
    // Running, and their tools loaded on their threads: an abort's grace counts from the load (on the fake clock).
    await until(
      () => calls().filter((call) => call.state === "running" && call.isLoading !== true).length === 2,
      "the call and its part running, their tools loaded",
    );
    // A call of another session waits: the part is asked to yield, and would be preempted 500 ms on.
    const light = runtime.executeToolCalls(batch(["l", "noop"]), { sessionKey: "light" });
    await until(() => calls().some((call) => call.state === "waiting"), "the light call waiting");
    clock.advance(400);
    controller.abort();
    await until(() => calls().filter((call) => call.state === "running" && call.isAborted).length === 2, "the call and its part aborted");
    // The yield's grace runs out: an aborted part is left to its abort's own grace, 500 ms from the abort.
    clock.advance(100);
    await delay(50);
    expect(running(runtime).length, "the part still on its thread within its abort's grace").toBe(2);
    clock.advance(400);
    const { messages } = await spread;
    expect(messages[0]!.isError).toBe(true);
    expect((await light).messages[0]!.isError).toBe(false);
  });
});

describe("a grep whose pattern backtracks for ever, and a light session on a 2-thread pool", () => {
  let root: string;
  beforeAll(() => {
    // 300 files, each a line on which /^(a|a)+$/ backtracks 2^40 times: no file is ever searched to its end.
    root = realpathSync(mkdtempSync(join(tmpdir(), "toolpool-spread-stuck-")));
    for (let f = 0; f < 300; f++) writeFileSync(join(root, `f${String(f).padStart(3, "0")}.txt`), `${"a".repeat(40)}b\n`);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("preempts the grep's stuck part: the light call ends while the grep still runs, and the grep ends with a clear error", {
    timeout: 300_000,
  }, async () => {
    // A long time limit, the grep's only end without an abort: the light call must not wait for it.
    const { runtime, events } = await warmRuntime(2, builtinTools(["grep", "hash"], { root, timeoutMs: 60_000 }));
    writeFileSync(join(root, "small.txt"), "small\n");
    // Both threads load grep (a part runs on the second): its next part starts searching as soon as it is posted.
    await runtime.executeToolCalls(batch(["w", "grep", { pattern: "^b" }]), { sessionKey: "heavy" });
    const ended = (id: string, tool: (name: string) => boolean) =>
      events.find((event) => event.type === "ended" && event.toolCallId === id && tool(event.tool));
    /** Two calls of two sessions at once ran on two threads: both threads are up and idle (a terminated one has been replaced). */
    let warmRound = 0;
    const twoThreadsIdle = async (): Promise<boolean> => {
      const ids = [`a${warmRound}`, `b${warmRound}`];
      warmRound += 1;
      await Promise.all(ids.map((id) => runtime.executeToolCalls(batch([id, "hash", { path: "small.txt" }]), { sessionKey: id })));
      const threads = new Set(
        ids
          .map((id) => events.find((event) => event.type === "started" && event.toolCallId === id))
          .map((event) => event?.type === "started" && event.threadId),
      );
      return threads.size === 2;
    };
    let preempted = 0;
    // A part may yet give its thread back by itself (asked before it reached a file): then the scenario is run again, at most
    // seven times, each time leaving the part longer to reach its first file (on a loaded machine a new part starts slowly).
    // The wait decides only whether an attempt catches the part in a file; no outcome is asserted on it.
    for (let attempt = 0; attempt < 7 && preempted === 0; attempt++) {
      // Threads terminated by the last attempt are replaced: the grep's part needs an idle one.
      await until(twoThreadsIdle, "two idle threads");
      const controller = new AbortController();
      const grep = runtime.executeToolCalls(batch([`g${attempt}`, "grep", { pattern: "^(a|a)+$" }]), {
        sessionKey: "heavy",
        signal: controller.signal,
      });
      try {
        await until(() => running(runtime).length === 2, "the grep's part running");
        await delay(25 * 2 ** attempt);
        const light = await runtime.executeToolCalls(batch([`l${attempt}`, "hash", { path: "small.txt" }]), { sessionKey: "light" });
        expect(light.messages[0]!.isError).toBe(false);
        expect(
          ended(`g${attempt}`, (name) => name === "grep"),
          "the grep call ended before the light call",
        ).toBeUndefined();
        const part = ended(`g${attempt}`, (name) => name !== "grep");
        if (part?.type === "ended" && part.code === "TP_ERR_ABORTED") preempted += 1;
      } finally {
        // The grep's own thread is stuck in a file too; the batch's abort ends it with a clear error.
        controller.abort();
      }
      const { messages } = await grep;
      expect(messages[0]!.isError).toBe(true);
      expect(JSON.stringify(messages[0]!.content)).toMatch(/did not stop within \d+ ms of the abort/);
      expect(indexOf(events, "ended", `l${attempt}`)).toBeLessThan(indexOf(events, "ended", `g${attempt}`, "grep"));
    }
    expect(preempted, "a part caught stuck in a file and preempted").toBe(1);
  });
});

describe("a spread call's parts count against its caps", () => {
  it("runs no more parts than its tool's cap leaves, and gives their slots back when they end", async () => {
    const runtime = open({ tools, pool: { minThreads: 4, maxThreads: 4 }, maxConcurrency: { spread_parent: 2 } });
    const { messages: warm } = await runtime.executeToolCalls(batch(...Array.from({ length: 4 }, (_, i): [string, string] => [`w${i}`, "noop"])));
    expect(new Set(warm.map((m) => (m.details as { threadId: number }).threadId)).size).toBe(4);
    for (const round of [1, 2]) {
      const { messages } = await runtime.executeToolCalls(batch([`s${round}`, "spread_parent", { part: "echoPart", inputs: [1, 2, 3] }]), {
        sessionKey: "alone",
      });
      const { outcomes } = messages[0]!.details as { outcomes: SpreadOutcome[] };
      // Three idle threads, but the cap of 2 holds the call and one part: the same in the second round, the slots given back.
      expect(outcomes.map((outcome) => (outcome.ok ? "ran" : outcome.error))).toEqual([
        "ran",
        "not run: a cap of the call is full",
        "not run: a cap of the call is full",
      ]);
    }
    expect(runtime.capWaits()).toEqual([]);
  });
});
