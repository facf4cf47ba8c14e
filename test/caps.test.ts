import { createRuntime, type AgentTool, type AgentToolResult, type BatchEvent, type Runtime, type RuntimeOptions } from "toolpool";
import { afterEach, describe, expect, it } from "vitest";

import { execute as probeExecute } from "./fixtures/tools/concurrency-probe.mjs";
import { counts, gateArgs, inlineProbe, orDeadlock, workerProbe } from "./support/cap-probes.js";
import { GateController } from "./support/gates.js";
import { batch, type CallSpec, textOf, until } from "./support/helpers.js";

const gates = new GateController();
let runtime: Runtime | undefined;

function start(options: RuntimeOptions): Runtime {
  runtime = createRuntime({ pool: { maxThreads: 4 }, ...options });
  return runtime;
}

afterEach(async () => {
  await runtime?.close({ force: true });
  runtime = undefined;
  gates.reset();
});

/**
 * Opens the gates of `keys`, whose calls arrive in that order, `held` of them
 * waiting at once: each time the newest waiting one (so calls end out of the
 * model's order), then waits for the next call to arrive; once none is left
 * to arrive, for the opened call to end (`hasEnded`, where given), so that
 * calls end in the order opened. Returns the order opened.
 */
async function openInTurn(keys: string[], held: number, hasEnded?: (key: string) => boolean): Promise<string[]> {
  const opened: string[] = [];
  const holding: string[] = [];
  let next = 0;
  while (next < Math.min(held, keys.length)) {
    await gates.whenWaiting(keys[next]!);
    holding.push(keys[next++]!);
  }
  while (holding.length > 0) {
    const key = holding.pop()!;
    gates.open(key);
    opened.push(key);
    if (next < keys.length) {
      await gates.whenWaiting(keys[next]!);
      holding.push(keys[next++]!);
    } else if (hasEnded !== undefined && holding.length > 0) {
      await until(() => hasEnded(key), `the call of ${key} ended`);
    }
  }
  return opened;
}

const keysOf = (prefix: string, count: number) => Array.from({ length: count }, (_, index) => `${prefix}${index}`);

describe("caps", () => {
  it("runs at most 2 of a worker tool with maxConcurrency: 2 in a batch of 8, in pi's order of events", async () => {
    const probe = counts();
    const rt = start({ tools: [workerProbe("probe", probe.shared, 2)] });
    const keys = keysOf("w2-", 8);
    const events: BatchEvent[] = [];
    const outcome = rt.executeToolCalls(batch(...keys.map((key, index): CallSpec => [`c${index}`, "probe", { gate: key }])), {
      emit: (event) => void events.push(event),
    });
    await gates.whenWaiting(keys[0]!);
    await gates.whenWaiting(keys[1]!);
    // The six others wait for a slot before the pool: it never saw them.
    const stats = rt.poolStats!;
    expect(stats.running + stats.queued).toBe(2);
    const ended = (key: string) => events.some((event) => event.type === "tool_execution_end" && event.toolCallId === `c${keys.indexOf(key)}`);
    const opened = await openInTurn(keys, 2, ended);
    const { messages } = await outcome;
    expect(probe.most()).toBe(2);
    expect(probe.started()).toBe(8);
    // pi's order: every start in the model's order, ends in completion order, then the messages in the model's order.
    const ids = (type: string) => events.filter((event) => event.type === type).map((event) => (event as { toolCallId: string }).toolCallId);
    expect(events.slice(0, 8).map((event) => event.type)).toEqual(Array(8).fill("tool_execution_start"));
    expect(ids("tool_execution_start")).toEqual(keys.map((_, index) => `c${index}`));
    expect(ids("tool_execution_end")).toEqual(opened.map((key) => `c${keys.indexOf(key)}`));
    expect(events.slice(16).map((event) => event.type)).toEqual(Array(8).fill(["message_start", "message_end"]).flat());
    expect(messages.map((message) => message.toolCallId)).toEqual(keys.map((_, index) => `c${index}`));
    expect(messages.map((message) => textOf(message))).toEqual(keys.map((key) => `ran ${key}`));
  });

  it("runs at most maxConcurrency calls of a batch at once, whatever their tools", async () => {
    const probe = counts();
    const rt = start({ tools: [workerProbe("a", probe.shared), workerProbe("b", probe.shared)] });
    const keys = keysOf("b3-", 6);
    const outcome = rt.executeToolCalls(batch(...keys.map((key, index): CallSpec => [`c${index}`, index % 2 ? "a" : "b", { gate: key }])), {
      maxConcurrency: 3,
    });
    for (const key of keys.slice(0, 3)) await gates.whenWaiting(key);
    expect(rt.poolStats!.running + rt.poolStats!.queued).toBe(3);
    await openInTurn(keys, 3);
    await outcome;
    expect(probe.most()).toBe(3);
    expect(probe.started()).toBe(6);
  });

  it("caps an inline tool named in the runtime's maxConcurrency", async () => {
    const probe = counts();
    const rt = start({ tools: [inlineProbe("inline", probe.shared)], maxConcurrency: { inline: 2 } });
    const keys = keysOf("i2-", 5);
    const outcome = rt.executeToolCalls(batch(...keys.map((key, index): CallSpec => [`c${index}`, "inline", { gate: key }])));
    await gates.whenWaiting(keys[0]!);
    await gates.whenWaiting(keys[1]!);
    // An inline call counts the moment its execute runs: the others have not.
    expect(probe.started()).toBe(2);
    await openInTurn(keys, 2);
    await outcome;
    expect([probe.most(), probe.started()]).toEqual([2, 5]);
  });

  it("shares maxConcurrencyPerSession across the batches of one session, not with other sessions", async () => {
    const probe = counts();
    const other = counts();
    const rt = start({ tools: [workerProbe("probe", probe.shared), inlineProbe("other", other.shared)], maxConcurrencyPerSession: 2 });
    const first = rt.executeToolCalls(batch(["a0", "probe", { gate: "s-a0" }], ["a1", "probe", { gate: "s-a1" }]), { sessionKey: "one" });
    const second = rt.executeToolCalls(batch(["b0", "probe", { gate: "s-b0" }], ["b1", "probe", { gate: "s-b1" }]), { sessionKey: "one" });
    await gates.whenWaiting("s-a0");
    await gates.whenWaiting("s-a1");
    expect(rt.poolStats!.running + rt.poolStats!.queued).toBe(2);
    // Another session is not held back by session "one"'s cap.
    const elsewhere = rt.executeToolCalls(batch(["o0", "other", { gate: "s-o0" }], ["o1", "other", { gate: "s-o1" }]), { sessionKey: "two" });
    await gates.whenWaiting("s-o0");
    await gates.whenWaiting("s-o1");
    gates.open("s-o0");
    gates.open("s-o1");
    await elsewhere;
    await openInTurn(["s-a0", "s-a1", "s-b0", "s-b1"], 2);
    await Promise.all([first, second]);
    expect([probe.most(), probe.started(), other.most()]).toEqual([2, 4, 2]);
  });

  it("holds a batch without a sessionKey, its own session, to the lower of its batch cap and the session cap", async () => {
    const probe = counts();
    const rt = start({ tools: [inlineProbe("inline", probe.shared)], maxConcurrencyPerSession: 2 });
    const keys = keysOf("own-", 4);
    const outcome = rt.executeToolCalls(batch(...keys.map((key, index): CallSpec => [`c${index}`, "inline", { gate: key }])), { maxConcurrency: 3 });
    await openInTurn(keys, 2);
    await outcome;
    expect([probe.most(), probe.started()]).toEqual([2, 4]);
  });
});

describe("caps of calls through agentTools()", () => {
  it("runs at most 2 of a capped worker tool called 6 times at once through its AgentTool, and lists the waiting ones", async () => {
    const probe = counts();
    const rt = start({ tools: [workerProbe("probe", probe.shared, 2)] });
    const tool = rt.agentTools()[0]!;
    const keys = keysOf("at-", 6);
    const results = Promise.all(keys.map((key, index) => tool.execute(`a${index}`, { gate: key })));
    await gates.whenWaiting(keys[0]!);
    await gates.whenWaiting(keys[1]!);
    // The other four wait for the cap, not for a thread (the pool has 4), and say so.
    await until(() => rt.capWaits().length === 4, "four calls waiting for the cap");
    expect(rt.capWaits().map((wait) => [wait.tool, wait.toolCallId, wait.batchId])).toEqual(
      keys.slice(2).map((_, index) => ["probe", `a${index + 2}`, ""]),
    );
    expect(probe.started()).toBe(2);
    await openInTurn(keys, 2);
    expect((await results).map((result) => textOf(result))).toEqual(keys.map((key) => `ran ${key}`));
    expect([probe.most(), probe.started()]).toEqual([2, 6]);
  });

  it("caps an inline tool's calls through its AgentTool, which reads through to the tool: private fields, getters, methods", async () => {
    const probe = counts();
    class Probe {
      readonly #label = "a probe";
      readonly name = "inline";
      readonly description = "";
      readonly parameters = gateArgs;
      get label(): string {
        return this.#label;
      }
      prepareArguments(args: unknown): unknown {
        return { ...(args as object), by: this.#label };
      }
      execute(_id: string, args: unknown, signal?: AbortSignal) {
        return probeExecute({ ...(args as object), shared: probe.shared }, { signal });
      }
    }
    const probeTool = new Probe();
    Object.defineProperty(probeTool, "executionMode", { value: "sequential", enumerable: false });
    const rt = start({ tools: [probeTool as unknown as AgentTool], maxConcurrency: { inline: 1 } });
    const tool = rt.agentTools()[0]!;
    expect([tool.label, tool.executionMode, tool.prepareArguments?.({ gate: "g" })]).toEqual(["a probe", "sequential", { gate: "g", by: "a probe" }]);
    const keys = keysOf("ai-", 3);
    const results = Promise.all(keys.map((key, index) => tool.execute(`i${index}`, { gate: key })));
    await gates.whenWaiting(keys[0]!);
    await openInTurn(keys, 1);
    expect((await results).map((result) => textOf(result))).toEqual(keys.map((key) => `ran ${key}`));
    expect([probe.most(), probe.started()]).toEqual([1, 3]);
  });

  it("gives back the tool's own promise when the call gets its slot at once, so pi awaits it in the turns it would", () => {
    const own = Promise.resolve({ content: [{ type: "text" as const, text: "own" }], details: {} });
    const tool: AgentTool = { name: "own", label: "own", description: "", parameters: { type: "object" }, execute: () => own };
    const rt = start({ tools: [tool], maxConcurrency: { own: 1 } });
    expect(rt.agentTools()[0]!.execute("o1", {})).toBe(own);
  });

  it("caps frozen tools and tools on a frozen prototype", async () => {
    const ok = async () => ({ content: [{ type: "text" as const, text: "ok" }], details: {} });
    const frozen = Object.freeze({ name: "frozen", label: "frozen", description: "", parameters: { type: "object" }, execute: ok });
    const base = Object.freeze({ label: "based", description: "", parameters: { type: "object" }, execute: ok });
    const based = Object.create(base, { name: { value: "based", enumerable: true }, execute: { value: ok, enumerable: true } }) as AgentTool;
    const rt = start({ tools: [frozen, based], maxConcurrency: { frozen: 1, based: 1 } });
    const [one, two] = rt.agentTools();
    expect([one!.name, one!.label, two!.name, two!.label]).toEqual(["frozen", "frozen", "based", "based"]);
    expect(textOf(await one!.execute("f1", {}))).toBe("ok");
    expect(textOf(await two!.execute("b1", {}))).toBe("ok");
  });

  it("lets close() finish the calls waiting for a cap, and close({ force: true }) end the rest", async () => {
    const probe = counts();
    const hung: AgentTool = {
      name: "hung",
      label: "hung",
      description: "",
      parameters: { type: "object" },
      execute: () => new Promise(() => {}),
    };
    const rt = start({ tools: [workerProbe("probe", probe.shared, 1), hung], maxConcurrency: { hung: 1 } });
    const [probeTool, hungTool] = rt.agentTools();
    // A graceful close waits for the worker call waiting behind the running one.
    const first = probeTool!.execute("p1", { gate: "cl-1" });
    const second = probeTool!.execute("p2", { gate: "cl-2" });
    await gates.whenWaiting("cl-1");
    expect(rt.capWaits().map((wait) => wait.toolCallId)).toEqual(["p2"]);
    void hungTool!.execute("h1", {});
    const waitingBehindHung = hungTool!.execute("h2", {});
    const batchBehindHung = rt.executeToolCalls(batch(["b1", "hung"]));
    const closed = rt.close();
    gates.open("cl-1");
    await gates.whenWaiting("cl-2");
    gates.open("cl-2");
    expect([textOf(await first), textOf(await second)]).toEqual(["ran cl-1", "ran cl-2"]);
    // The hung call holds its slot: only a close by force ends what waits behind it.
    const forced = orDeadlock(rt.close({ force: true }));
    expect(await forced).not.toBe("deadlocked");
    await closed;
    await expect(waitingBehindHung).rejects.toMatchObject({ code: "TP_ERR_CLOSED" });
    const { messages } = await batchBehindHung;
    expect(messages[0]).toMatchObject({ isError: true });
    expect(rt.capWaits()).toEqual([]);
  });

  it("never deadlocks an AgentTool's call against the nested calls it makes", async () => {
    // `outer` (cap 1), called through its AgentTool, runs an `outer` child through runtime.runToolCall, which needs the slot its parent holds.
    const outer: AgentTool = {
      name: "outer",
      label: "outer",
      description: "",
      parameters: { type: "object" },
      execute: async (_id, args) => {
        if ((args as { depth?: number }).depth === 1) return { content: [{ type: "text", text: "inner ran" }], details: {} };
        const child = await runtime!.runToolCall({ type: "toolCall", id: "inner", name: "outer", arguments: { depth: 1 } });
        return { content: [{ type: "text", text: `outer ran, ${textOf(child.result)}` }], details: {} };
      },
    };
    const rt = start({ tools: [outer], maxConcurrency: { outer: 1 } });
    const settled = await orDeadlock(rt.agentTools()[0]!.execute("c0", {}));
    expect(settled).not.toBe("deadlocked");
    expect(textOf(settled as AgentToolResult<unknown>)).toBe("outer ran, inner ran");
  });

  it("gives the runtime's own tools where no cap is set", () => {
    const probe = counts();
    const inline = inlineProbe("inline", probe.shared);
    expect(start({ tools: [inline] }).agentTools()[0]).toBe(inline);
  });
});

describe("caps that are refused", () => {
  it.each([
    [{ maxConcurrency: { probe: 0 } }, "`maxConcurrency.probe`"],
    [{ maxConcurrency: { probe: 1.5 } }, "`maxConcurrency.probe`"],
    [{ maxConcurrency: 3 }, "`maxConcurrency`"],
    [{ maxConcurrency: { nope: 2 } }, "`maxConcurrency`"],
    [{ maxConcurrencyPerSession: 0 }, "`maxConcurrencyPerSession`"],
  ] as [RuntimeOptions, string][])("refuses %j at start, naming the option", (options, named) => {
    const shared = counts().shared;
    expect(() => createRuntime({ tools: [inlineProbe("probe", shared)], ...options })).toThrow(
      expect.objectContaining({ code: "TP_ERR_INVALID_OPTION", message: expect.stringContaining(named) }),
    );
  });

  it("refuses a worker tool's maxConcurrency that is not a positive integer", () => {
    for (const maxConcurrency of [0, -1, 2.5, "2"]) {
      expect(() => workerProbe("probe", counts().shared, maxConcurrency as number)).toThrow(
        expect.objectContaining({ code: "TP_ERR_INVALID_TOOL", message: expect.stringContaining("`maxConcurrency`") }),
      );
    }
  });

  it("refuses a batch's maxConcurrency that is not a positive integer, at the call", async () => {
    const rt = start({ tools: [inlineProbe("probe", counts().shared)] });
    for (const maxConcurrency of [0, 1.5, "3", Number.NaN]) {
      await expect(
        rt.executeToolCalls(batch(["c0", "probe", { gate: "never" }]), { maxConcurrency: maxConcurrency as number }),
      ).rejects.toMatchObject({
        code: "TP_ERR_INVALID_BATCH",
        message: expect.stringContaining("`maxConcurrency`"),
      });
    }
  });
});
