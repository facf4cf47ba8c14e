import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BroadcastChannel } from "node:worker_threads";

import { afterAll, beforeAll, describe, expect } from "vitest";

import { builtinTools, workerTool, type BatchEvent, type Runtime, type SpreadOutcome } from "toolpool";

import { createGrepTool } from "./support/built.js";
import { batch, until } from "./support/helpers.js";
import { open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest();

const spreadModule = new URL("./fixtures/tools/spread.mjs", import.meta.url);
const tool = (name: string, exportName: string) =>
  workerTool({ name, description: name, parameters: { type: "object" }, module: spreadModule, exportName });
const tools = [
  tool("spread_parent", "spreadParent"),
  tool("spread_and_leave", "spreadAndLeave"),
  tool("spread_badly", "spreadBadly"),
  tool("spread_then_exit", "spreadThenExit"),
  tool("noop", "noop"),
  tool("keep_ctx", "keepCtx"),
  tool("spread_through_kept_ctx", "spreadThroughKeptCtx"),
  tool("forge_spread", "forgeSpread"),
  tool("wait_for_abort", "waitForAbort"),
];

/** A runtime whose `threads` threads have all answered a call, so that they count as idle. */
async function warmRuntime(
  threads: number,
  extra: { abortGraceMs?: number; maxRunningPerSession?: number } = {},
  extraTools: typeof tools = [],
): Promise<Runtime> {
  const runtime = open({ tools: [...tools, ...extraTools], pool: { minThreads: threads, maxThreads: threads, ...extra } });
  const { messages } = await runtime.executeToolCalls(batch(...Array.from({ length: threads }, (_, i): [string, string] => [`w${i}`, "noop"])));
  expect(new Set(messages.map((m) => (m.details as { threadId: number }).threadId)).size).toBe(threads);
  return runtime;
}

async function spreadOnce(runtime: Runtime, part: string, inputs: unknown[]) {
  const { messages } = await runtime.executeToolCalls(batch(["s", "spread_parent", { part, inputs }]));
  expect(messages[0]!.isError).toBe(false);
  return messages[0]!.details as { threadId: number; outcomes: SpreadOutcome<{ input: unknown; threadId: number }>[] };
}

const callsRunning = (runtime: Runtime) => runtime.diagnose().pools.flatMap((pool) => pool.calls);

describe("ctx.spread", () => {
  it("runs each input as a part on another idle thread and answers in input order", async () => {
    const runtime = await warmRuntime(3);
    const { threadId, outcomes } = await spreadOnce(runtime, "echoPart", ["a", "b"]);
    expect(outcomes.map((o) => (o.ok ? o.value.input : o.error))).toEqual(["a", "b"]);
    const partThreads = outcomes.map((o) => (o.ok ? o.value.threadId : 0));
    expect(new Set([threadId, ...partThreads]).size).toBe(3);
  });

  it("does not run inputs beyond the idle threads, and says so", async () => {
    const runtime = await warmRuntime(2);
    const { outcomes } = await spreadOnce(runtime, "echoPart", [1, 2, 3]);
    expect(outcomes[0]).toMatchObject({ ok: true, value: { input: 1 } });
    expect(outcomes.slice(1)).toEqual([
      { ok: false, ran: false, error: "not run: no idle thread" },
      { ok: false, ran: false, error: "not run: no idle thread" },
    ]);
  });

  it("turns a part's throw, a part's crash and a nested spread into outcomes; the call itself succeeds", async () => {
    const runtime = await warmRuntime(2);
    expect((await spreadOnce(runtime, "throwPart", ["x"])).outcomes).toEqual([{ ok: false, ran: true, error: "part failed on x" }]);
    const [crashed] = (await spreadOnce(runtime, "crashPart", [1])).outcomes;
    expect(crashed).toMatchObject({ ok: false, ran: true });
    expect(crashed!.ok ? "" : crashed!.error).toMatch(/^TP_ERR_WORKER_EXIT: /);
    // The crashed thread is replaced; the pool goes on.
    await until(
      () =>
        runtime
          .diagnose()
          .pools[0]!.generations.at(-1)!
          .threads.filter((t) => t.isUsable).length === 2,
      "two usable threads again",
    );
    const [nested] = (await spreadOnce(runtime, "nestedPart", [1])).outcomes;
    expect(nested).toEqual({ ok: false, ran: true, error: "ctx.spread: a part cannot spread further" });
    expect(callsRunning(runtime)).toEqual([]);
  });

  it("rejects bad arguments in the worker", async () => {
    const runtime = await warmRuntime(1);
    const errorOf = async (args: Record<string, unknown>) =>
      ((await runtime.executeToolCalls(batch(["b", "spread_badly", args]))).messages[0]!.details as { error: string | null }).error;
    expect(await errorOf({ exportName: "", inputs: [1] })).toBe("ctx.spread: exportName must be a non-empty string");
    expect(await errorOf({ exportName: "echoPart", inputs: Array.from({ length: 65 }, () => 1) })).toBe(
      "ctx.spread: inputs must be an array of at most 64 inputs",
    );
    expect(await errorOf({ exportName: "echoPart", inputs: [] })).toBeNull();
  });

  it("aborts the parts when the call is aborted: one end event, one error result, no call left", async () => {
    const runtime = await warmRuntime(3, { abortGraceMs: 5_000 });
    const controller = new AbortController();
    const events: BatchEvent[] = [];
    const done = runtime.executeToolCalls(batch(["s", "spread_parent", { part: "waitForAbortPart", inputs: [1, 2] }]), {
      signal: controller.signal,
      emit: (event) => {
        events.push(event);
      },
    });
    await until(() => callsRunning(runtime).filter((call) => call.tool.includes("part")).length === 2, "both parts running");
    controller.abort();
    const { messages } = await done;
    expect(messages).toHaveLength(1);
    expect(messages[0]!.isError).toBe(true);
    expect(events.filter((event) => event.type === "tool_execution_end")).toHaveLength(1);
    await until(() => callsRunning(runtime).length === 0, "no call running");
  });

  it("stops the parts when their call ends without waiting for them, terminating one that ignores its signal", async () => {
    const runtime = await warmRuntime(3, { abortGraceMs: 100 });
    const { messages } = await runtime.executeToolCalls(batch(["s", "spread_and_leave", { part: "waitForAbortPart", inputs: [1] }]));
    expect(messages[0]!.isError).toBe(false);
    await until(() => callsRunning(runtime).length === 0, "no call running");
    await runtime.executeToolCalls(batch(["s", "spread_and_leave", { part: "spinPart", inputs: [1] }]));
    await until(() => callsRunning(runtime).length === 0, "no call running");
    // The terminated thread is replaced, and soon every thread serves again.
    let outcomes: SpreadOutcome[] = [];
    await until(
      async () => {
        ({ outcomes } = await spreadOnce(runtime, "echoPart", [1, 2]));
        return outcomes.length === 2 && outcomes.every((o) => o.ok);
      },
      () => `both parts served (last: ${JSON.stringify(outcomes)})`,
      { everyMs: 20 },
    );
    expect(outcomes.map((o) => o.ok)).toEqual([true, true]);
  });

  it("stops the parts when the calling call's thread dies: the call ends once, with its crash", async () => {
    const runtime = await warmRuntime(3, { abortGraceMs: 200 });
    // The part says when it starts (the caller exits only then) and when its signal aborts.
    const channelName = `spread-then-exit-${process.pid}`;
    const partSaid: string[] = [];
    const channel = new BroadcastChannel(channelName);
    channel.onmessage = (event) => {
      partSaid.push((event as { data: { part: string } }).data.part);
    };
    const events: BatchEvent[] = [];
    const { messages } = await runtime.executeToolCalls(batch(["s", "spread_then_exit", { channel: channelName }]), {
      emit: (event) => {
        events.push(event);
      },
    });
    expect(messages).toHaveLength(1);
    expect(messages[0]!.isError).toBe(true);
    expect(JSON.stringify(messages[0]!.content)).toMatch(/exit/i);
    expect(events.filter((event) => event.type === "tool_execution_end")).toHaveLength(1);
    await until(() => partSaid.includes("aborted"), "the part said it was aborted", { limitMs: 30_000 });
    channel.close();
    expect(partSaid).toEqual(["started", "aborted"]);
    await until(() => callsRunning(runtime).length === 0, "no call running");
  });

  it("ends the call and its parts on a forced close", async () => {
    const runtime = await warmRuntime(3);
    const done = runtime.executeToolCalls(batch(["s", "spread_parent", { part: "spinPart", inputs: [1, 2] }]));
    await until(() => callsRunning(runtime).filter((call) => call.state === "running").length === 3, "three calls running");
    await runtime.close({ force: true });
    const { messages } = await done;
    expect(messages).toHaveLength(1);
    expect(messages[0]!.isError).toBe(true);
  });
});

describe("grep spread over the pool", () => {
  let root: string;
  beforeAll(() => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "toolpool-spread-grep-")));
    writeFileSync(join(root, ".gitignore"), "*.log\n");
    for (let d = 0; d < 12; d++) {
      mkdirSync(join(root, `d${d}`));
      writeFileSync(join(root, `d${d}`, ".gitignore"), d % 2 === 0 ? "skip*.ts\n" : "!keep.log\n");
      for (let f = 0; f < 60; f++) {
        const lines = Array.from({ length: 40 }, (_, i) => (i === (f * 7 + d) % 40 ? `const hit_${d}_${f} = ${i};` : `line ${i} of ${f}`));
        writeFileSync(join(root, `d${d}`, `${f % 5 === 0 ? "skip" : "f"}${f}.ts`), `${lines.join("\n")}\n`);
      }
      writeFileSync(join(root, `d${d}`, "keep.log"), "hit in a log\n");
      writeFileSync(join(root, `d${d}`, "bin.dat"), Buffer.from([104, 105, 116, 0, 10]));
    }
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("gives exactly the one-thread result, truncated or not", async () => {
    const runtime = open({ tools: builtinTools(["grep"], { root }), pool: { minThreads: 3, maxThreads: 3 } });
    const alone = createGrepTool({ realRoot: root, allowWrite: false });
    const ctx = { toolCallId: "t", signal: new AbortController().signal, onUpdate: () => {} };
    for (const args of [
      { pattern: "hit" },
      { pattern: "hit", maxResults: 5000 },
      { pattern: "hit_1[01]_", flags: "i" },
      { pattern: "line 3\\d", maxResults: 5000 },
    ]) {
      const expected = await alone(args, ctx);
      for (let rep = 0; rep < 3; rep++) {
        const { messages } = await runtime.executeToolCalls(batch(["g", "grep", args]));
        expect(messages[0]!.content).toEqual(expected.content);
        expect(messages[0]!.details).toEqual(expected.details);
      }
    }
  });

  it("searches every chunk itself when its parts fail, are not run, or the spread rejects", async () => {
    const alone = createGrepTool({ realRoot: root, allowWrite: false });
    const ctx = { toolCallId: "t", signal: new AbortController().signal, onUpdate: () => {} };
    const expected = await alone({ pattern: "hit", maxResults: 5000 }, ctx);
    const answers: ((inputs: readonly unknown[]) => Promise<SpreadOutcome[]>)[] = [
      async (inputs) => inputs.map(() => ({ ok: false, error: "TP_ERR_WORKER_CRASH: gone", ran: true })),
      async (inputs) => inputs.map(() => ({ ok: false, error: "not run: no idle thread", ran: false })),
      async () => {
        throw new Error("ctx.spread: the pool is gone");
      },
    ];
    for (const answer of answers) {
      let requests = 0;
      const spread = (exportName: string, inputs: readonly unknown[]) => {
        requests += 1;
        expect(exportName).toBe("searchPart");
        return answer(inputs);
      };
      const result = await alone({ pattern: "hit", maxResults: 5000 }, { ...ctx, spread } as typeof ctx);
      expect(requests).toBe(1);
      expect(result).toEqual(expected);
    }
  });
});

describe("ctx.spread, misused", () => {
  it("rejects at once through the ctx of a call that has ended", async () => {
    const runtime = await warmRuntime(1);
    await runtime.executeToolCalls(batch(["k", "keep_ctx"]));
    const { messages } = await runtime.executeToolCalls(batch(["m", "spread_through_kept_ctx"]));
    expect(messages[0]!.details).toMatchObject({ settled: "rejected: ctx.spread: the call has ended" });
  });

  it("refuses a request for a call that another thread runs, and starts no part for it", async () => {
    // Fresh pool: the three warm-up calls are numbered 1 to 3, the batch's calls 4 and 5.
    const runtime = await warmRuntime(3);
    const controller = new AbortController();
    const { messages } = await runtime.executeToolCalls(batch(["w", "wait_for_abort"], ["f", "forge_spread", { seq: 4 }]), {
      signal: controller.signal,
      emit: (event: BatchEvent) => {
        if (event.type === "tool_execution_end" && event.toolCallId === "f") controller.abort();
      },
    });
    expect(messages[1]!.details).toEqual({ reply: { id: 987654, error: "the call is not running on this thread (it has ended)" } });
    expect(runtime.poolStats?.completed).toBe(5);
  });

  it("keeps parts within the session's maxRunningPerSession", async () => {
    const runtime = open({ tools, pool: { minThreads: 3, maxThreads: 3, maxRunningPerSession: 2 } });
    // Three sessions at once, so that every thread answers a call and counts as idle.
    const warm = await Promise.all([0, 1, 2].map((i) => runtime.executeToolCalls(batch([`w${i}`, "noop"]))));
    expect(new Set(warm.map(({ messages }) => (messages[0]!.details as { threadId: number }).threadId)).size).toBe(3);
    const { outcomes } = await spreadOnce(runtime, "echoPart", ["a", "b"]);
    // The call holds one of its session's two places: one part runs, the other is not run.
    expect(outcomes.map((o) => (o.ok ? "ran" : o.error))).toEqual(["ran", "not run: no idle thread"]);
  });

  it("gives each tool's parts that tool's name and result limit, even when tools share a module", async () => {
    const small = workerTool({
      name: "small",
      description: "",
      parameters: { type: "object" },
      module: spreadModule,
      exportName: "spreadParent",
      maxResultBytes: 2_000,
    });
    const big = workerTool({
      name: "big",
      description: "",
      parameters: { type: "object" },
      module: spreadModule,
      exportName: "spreadParent",
      maxResultBytes: 1_000_000,
    });
    const runtime = await warmRuntime(2, {}, [small, big]);
    const run = async (name: string) => {
      const { messages } = await runtime.executeToolCalls(batch(["s", name, { part: "sizedPart", inputs: [{ bytes: 50_000 }] }]));
      return (messages[0]!.details as { outcomes: SpreadOutcome[] }).outcomes[0]!;
    };
    expect(await run("small")).toMatchObject({
      ok: false,
      ran: true,
      error: expect.stringContaining('TP_ERR_RESULT_TOO_LARGE: Tool "small (part: sizedPart)" returned'),
    });
    expect(await run("big")).toMatchObject({ ok: true });
  });

  it("runs at most 64 different exports per tool", async () => {
    const runtime = await warmRuntime(2);
    for (let i = 0; i < 64; i++) {
      const { outcomes } = await spreadOnce(runtime, `nope${i}`, [1]);
      expect(outcomes[0]).toMatchObject({ ok: false, ran: true, error: expect.stringContaining(`TP_ERR_TOOL_LOAD`) });
    }
    const { outcomes } = await spreadOnce(runtime, "echoPart", [1]);
    expect(outcomes[0]).toEqual({
      ok: false,
      ran: false,
      error: 'not run: tool "spread_parent" already spreads 64 different exports, the most one tool may',
    });
  });
});
