/**
 * Caps of nested calls (`coordinator/call-caps.ts`): a call that a capped
 * call's execute makes through `runtime.runToolCall` is its child, counts
 * against its caps, and runs in an ancestor's slot where a cap is full.
 */
import { createRuntime, type AgentTool, type Runtime, type RuntimeOptions, type ToolCall } from "toolpool";
import { afterAll, afterEach, describe, expect, it } from "vitest";

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
});
