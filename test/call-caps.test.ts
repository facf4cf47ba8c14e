/**
 * Caps of nested calls (`coordinator/call-caps.ts`): a call that a capped
 * call's execute makes through `runtime.runToolCall` is its child, counts
 * against its caps, and runs in an ancestor's slot where a cap is full, one
 * child per slot at a time.
 */
import { createRuntime, type AgentTool, type Runtime, type RuntimeOptions, type ToolCall } from "toolpool";
import { afterAll, afterEach, describe, expect, it } from "vitest";

import { execute as probeExecute } from "./fixtures/tools/concurrency-probe.mjs";
import { call, counts, inlineProbe, orDeadlock, workerProbe } from "./support/cap-probes.js";
import { GateController } from "./support/gates.js";
import { batch, textOf, until } from "./support/helpers.js";

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
afterAll(() => gates.close());

/** An inline tool that runs `children` through `runtime.runToolCall`, all at once, and says what they returned. */
function delegating(name: string, children: (args: Record<string, unknown>) => ToolCall[]): AgentTool {
  return {
    name,
    label: name,
    description: "",
    parameters: { type: "object" },
    execute: async (_id, args) => {
      const outcomes = await Promise.all(children(args as Record<string, unknown>).map((child) => runtime!.runToolCall(child)));
      return { content: [{ type: "text", text: outcomes.map((outcome) => textOf(outcome.result)).join(", ") }], details: {} };
    },
  };
}

/**
 * An inline tool that, given `calls`, runs them all at once through
 * `runtime.runToolCall` (passing on its signal) and joins what they
 * returned; given a `gate`, is a probe counting into `shared`.
 */
function fanning(name: string, shared: Int32Array): AgentTool {
  return {
    name,
    label: name,
    description: "",
    parameters: { type: "object" },
    execute: async (_id, args, signal) => {
      const { gate, calls } = args as { gate?: string; calls?: ToolCall[] };
      if (gate !== undefined) return probeExecute({ gate, shared }, { signal });
      const outcomes = await Promise.all(calls!.map((child) => runtime!.runToolCall(child, { signal })));
      return { content: [{ type: "text", text: outcomes.map((outcome) => textOf(outcome.result)).join(", ") }], details: {} };
    },
  };
}

/** `count` calls of `tool`, each held at a gate named as its call id. */
const gatedCalls = (prefix: string, tool: string, count: number): ToolCall[] =>
  Array.from({ length: count }, (_, index) => call(`${prefix}${index}`, tool, { gate: `${prefix}${index}` }));

/**
 * Opens the gates of `keys` one at a time, each once its call waits at it,
 * checking each time that no more than `cap` of the calls run.
 */
async function openOneAtATime(keys: string[], cap: number, running: () => number): Promise<void> {
  const opened = new Set<string>();
  const waiting = () => keys.filter((key) => !opened.has(key) && gates.isWaiting(key));
  const nextWaiting = () => waiting()[0];
  while (opened.size < keys.length) {
    // As many at their gates as the cap lets run: the cap is reached, not merely not passed.
    const full = Math.min(cap, keys.length - opened.size);
    await until(
      () => waiting().length >= full,
      () => `${full} calls at their gates, ${opened.size} of ${keys.length} opened`,
      { limitMs: 60_000 },
    );
    expect(running()).toBeLessThanOrEqual(cap);
    const key = nextWaiting()!;
    gates.open(key);
    opened.add(key);
  }
}

/** How an inline `fan` call, run under one cap kind set to 2, starts its children, of `child`. */
interface FanScenario {
  options: Omit<RuntimeOptions, "tools">;
  child: "fan" | "probe";
  run: (rt: Runtime, calls: ToolCall[]) => Promise<unknown>;
}

const inBatch =
  (options: Parameters<Runtime["executeToolCalls"]>[1]) =>
  async (rt: Runtime, calls: ToolCall[]): Promise<unknown> =>
    (await rt.executeToolCalls(batch(["p", "fan", { calls }]), options)).messages[0];

const scenarios: [string, FanScenario][] = [
  ["maxConcurrencyPerSession: 2, inline children", { options: { maxConcurrencyPerSession: 2 }, child: "fan", run: inBatch({ sessionKey: "s" }) }],
  ["a batch's maxConcurrency: 2, worker children", { options: {}, child: "probe", run: inBatch({ maxConcurrency: 2 }) }],
  ["the tool's maxConcurrency: 2, children of the same tool", { options: { maxConcurrency: { fan: 2 } }, child: "fan", run: inBatch({}) }],
  [
    "maxConcurrencyPerSession: 2 through agentTools(), worker children",
    {
      options: { maxConcurrencyPerSession: 2 },
      child: "probe",
      run: (rt, calls) =>
        rt
          .agentTools()
          .find((tool) => tool.name === "fan")!
          .execute("p", { calls }),
    },
  ],
];

describe("caps of nested calls", () => {
  it("never deadlocks a call against its parent: a child over a full cap its ancestor holds runs in the ancestor's slot", async () => {
    const probe = counts();
    start({
      tools: [
        // `outer` (cap 1) runs an `outer` child, which runs two worker probes (cap 1): each child needs a slot its parent holds.
        delegating("outer", (args) => (args.depth === 1 ? [call("p0", "probe", { gate: "n-p0" })] : [call("inner", "outer", { depth: 1 })])),
        workerProbe("probe", probe.shared, 1),
      ],
      maxConcurrency: { outer: 1 },
      maxConcurrencyPerSession: 1,
    });
    const outcome = runtime!.executeToolCalls(batch(["c0", "outer"]), { maxConcurrency: 1 });
    const opened = gates.whenWaiting("n-p0").then(() => gates.open("n-p0"));
    const settled = await orDeadlock(outcome);
    expect(settled).not.toBe("deadlocked");
    await opened;
    expect(textOf((settled as Awaited<typeof outcome>).messages[0])).toBe("ran n-p0");
  });

  it("counts a nested call against its parent's session: another batch of the session waits for it", async () => {
    const probe = counts();
    const later = counts();
    start({
      tools: [
        delegating("parent", () => [call("child", "probe", { gate: "ns-child" })]),
        inlineProbe("probe", probe.shared),
        inlineProbe("later", later.shared),
      ],
      maxConcurrencyPerSession: 2,
    });
    const parentBatch = runtime!.executeToolCalls(batch(["p", "parent"]), { sessionKey: "s" });
    // The parent holds one slot of the session, its child the other.
    await gates.whenWaiting("ns-child");
    let hasStarted = false;
    const laterBatch = runtime!.executeToolCalls(batch(["l", "later", { gate: "ns-later" }]), {
      sessionKey: "s",
      emit: (event) => void (event.type === "tool_execution_start" && (hasStarted = true)),
    });
    await until(() => hasStarted, "the later batch's start event");
    // Its call is prepared and waits for a slot: a few turns of the event loop change nothing.
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(later.started()).toBe(0);
    gates.open("ns-child");
    await gates.whenWaiting("ns-later");
    expect(later.started()).toBe(1);
    gates.open("ns-later");
    await Promise.all([parentBatch, laterBatch]);
    expect(probe.started()).toBe(1);
  });

  it("counts nested calls against their tool's cap across parents", async () => {
    const probe = counts();
    start({
      tools: [delegating("parent", (args) => [call(`${args.id}`, "probe", { gate: `nt-${args.id}` })]), workerProbe("probe", probe.shared, 1)],
    });
    const outcome = runtime!.executeToolCalls(batch(["p0", "parent", { id: "a" }], ["p1", "parent", { id: "b" }]));
    await gates.whenWaiting("nt-a");
    expect(runtime!.poolStats!.running + runtime!.poolStats!.queued).toBe(1);
    // Parent p0's child asks first: it gets the slot, p1's waits for it.
    gates.open("nt-a");
    await gates.whenWaiting("nt-b");
    gates.open("nt-b");
    await outcome;
    expect([probe.most(), probe.started()]).toEqual([1, 2]);
  });

  it.each(scenarios)("lends the parent's slot to one child at a time: 20 children at once run 2 at most, under %s", async (_kind, scenario) => {
    const probe = counts();
    const rt = start({ tools: [fanning("fan", probe.shared), workerProbe("probe", probe.shared)], ...scenario.options });
    const calls = gatedCalls("fan-", scenario.child, 20);
    const keys = calls.map((child) => child.id);
    const outcome = scenario.run(rt, calls);
    // Once every child has asked for its slots: one runs in the slot left free, one in its parent's, 18 wait.
    const asked = () => probe.started() + rt.capWaits().length + rt.poolStats!.queued;
    await until(
      () => asked() === 20,
      () => `every child started or waiting (${probe.started()} started)`,
    );
    await until(() => probe.running() >= 2, "two children running");
    expect(probe.running()).toBe(2);
    const waits = rt.capWaits();
    expect(waits).toHaveLength(18);
    for (const wait of waits) expect(keys).toContain(wait.toolCallId);
    await openOneAtATime(keys, 2, probe.running);
    const settled = await orDeadlock(outcome);
    expect(settled).not.toBe("deadlocked");
    expect(textOf(settled as Parameters<typeof textOf>[0]).split(", ")).toEqual(keys.map((key) => `ran ${key}`));
    expect([probe.most(), probe.started()]).toEqual([2, 20]);
    expect(rt.capWaits()).toEqual([]);
  });

  it.each([
    ["maxConcurrencyPerSession: 2, inline grandchildren", { maxConcurrencyPerSession: 2 }, "fan", { sessionKey: "s" }],
    ["a batch's maxConcurrency: 2, worker grandchildren", {}, "probe", { maxConcurrency: 2 }],
  ] as const)("lends a slot on down two levels of nesting, one call per slot, under %s", async (_kind, options, leaf, batchOptions) => {
    const probe = counts();
    const rt = start({ tools: [fanning("fan", probe.shared), workerProbe("probe", probe.shared)], ...options });
    // The parent runs 3 children, each of which runs 4 grandchildren, all at once.
    const children = [0, 1, 2].map((index) => call(`mid-${index}`, "fan", { calls: gatedCalls(`deep-${index}-`, leaf, 4) }));
    const keys = children.flatMap((child) => (child.arguments.calls as ToolCall[]).map((grandchild) => grandchild.id));
    const outcome = rt.executeToolCalls(batch(["p", "fan", { calls: children }]), batchOptions);
    await openOneAtATime(keys, 2, probe.running);
    const settled = await orDeadlock(outcome);
    expect(settled).not.toBe("deadlocked");
    const { messages } = settled as Awaited<typeof outcome>;
    expect(textOf(messages[0]).split(", ")).toEqual(keys.map((key) => `ran ${key}`));
    expect([probe.most(), probe.started()]).toEqual([2, 12]);
  });

  it("ends the children waiting for their parent's slot when the batch is aborted", async () => {
    const probe = counts();
    const rt = start({ tools: [fanning("fan", probe.shared)], maxConcurrencyPerSession: 2 });
    const abort = new AbortController();
    const outcome = rt.executeToolCalls(batch(["p", "fan", { calls: gatedCalls("ab-", "fan", 20) }]), { sessionKey: "s", signal: abort.signal });
    await until(() => rt.capWaits().length === 18, "18 children waiting");
    abort.abort();
    const settled = await orDeadlock(outcome);
    expect(settled).not.toBe("deadlocked");
    expect(rt.capWaits()).toEqual([]);
    expect([probe.running(), probe.most()]).toEqual([0, 2]);
  });

  it("ends the children waiting for their parent's slot when the runtime is closed by force", async () => {
    const probe = counts();
    const rt = start({ tools: [fanning("fan", probe.shared)], maxConcurrencyPerSession: 2 });
    const outcome = rt.executeToolCalls(batch(["p", "fan", { calls: gatedCalls("fc-", "fan", 20) }]), { sessionKey: "s" });
    await until(() => rt.capWaits().length === 18, "18 children waiting");
    expect(await orDeadlock(rt.close({ force: true }))).not.toBe("deadlocked");
    const settled = await orDeadlock(outcome);
    expect(settled).not.toBe("deadlocked");
    expect((settled as Awaited<typeof outcome>).messages[0]).toMatchObject({ isError: true });
    await until(() => rt.capWaits().length === 0, "no child waiting");
  });
});
