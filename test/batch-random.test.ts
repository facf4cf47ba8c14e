import fc from "fast-check";
import { supportsPi16, type AfterToolCallResult, type BeforeToolCallResult, type PiVersion } from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

import {
  createSharedRuntime,
  runScenario,
  type Flavor,
  type Mode,
  type Scenario,
  type ScenarioCall,
  type SharedRuntime,
} from "./support/differential.js";
import { GateController } from "./support/gates.js";
import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/batch-random.test.ts");

/**
 * The randomized batch differential: generated batches (known, unknown,
 * invalid, coercible, failing, blocked, terminating calls; hook results and
 * hook throws; sequential and parallel; inline and worker tools; a generated
 * completion order, enforced by gates) run through pi 0.73.1's loop and
 * through toolpool, compared event by event with the messages, the terminate
 * flag and what each hook saw; and again through pi 1.6.0's loop and toolpool
 * with `pi: "1.6"`, with what pi 1.6 added in the mix (blocks that terminate,
 * aborts in `beforeToolCall`, `argumentsError`, truncated responses, results
 * with `usage`, `structuredContent` or `isError`, and hooks overriding them).
 * `RANDOM_SEED` and `RANDOM_BATCHES` change the seed and the count (`npm run
 * test:random` runs many more).
 *
 * Gates let one call finish at a time (its end event is awaited before the
 * next gate opens), so `afterToolCall` hooks never overlap in pi either:
 * toolpool's deliberate difference 1 (hooks one at a time) cannot show, and
 * no batch is excluded for it.
 */
const seed = Number(process.env.RANDOM_SEED ?? 20_261_202);
const batchCount = Number(process.env.RANDOM_BATCHES ?? 500);
/** At most this many calls a batch, all of them able to wait at their gates at once. */
const maxCalls = 6;

type BeforePlan = { kind: "none" } | { kind: "block"; reason: string | undefined; terminate?: boolean } | { kind: "throw"; message: string };
type AfterPlan = { kind: "none" } | { kind: "result"; result: AfterToolCallResult } | { kind: "throw"; message: string };

interface BatchPlan {
  flavor: Flavor;
  mode: Mode;
  calls: { name: string; arguments: Record<string, unknown>; argumentsError?: string; before: BeforePlan; after: AfterPlan }[];
  releaseOrder: number[];
  /** pi 1.6: the index of the call whose `beforeToolCall` aborts the batch. */
  abortAt?: number;
  /** pi 1.6: `"length"` for a truncated response. */
  stopReason?: string;
}

const text = fc.constantFrom("one", "two", "ünï", "", "a longer text with spaces");
const workArguments = fc.oneof(
  { weight: 4, arbitrary: fc.record({ text }, { requiredKeys: [] }) },
  {
    weight: 2,
    arbitrary: fc.record(
      { count: fc.constantFrom("5", " 12 ", true, null), flag: fc.constantFrom("true", 0, "false"), label: fc.constantFrom(7, false, null) },
      { requiredKeys: [] },
    ),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom<Record<string, unknown>>(
      { count: "abc" },
      { extra: true },
      { updates: "notalist" },
      { label: {} },
      { count: 3.5 },
      { flag: "yes", count: "x" },
    ),
  },
  { weight: 2, arbitrary: fc.oneof(fc.record({ fail: text }), fc.record({ throwString: text })) },
  { weight: 2, arbitrary: fc.record({ terminate: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ updates: fc.array(fc.constantFrom("10%", "50%", "done"), { minLength: 1, maxLength: 3 }), text }) },
);
const call = fc.oneof(
  { weight: 8, arbitrary: fc.record({ name: fc.constant("work"), arguments: workArguments }) },
  { weight: 1, arbitrary: fc.record({ name: fc.constant("nope"), arguments: fc.constantFrom({}, { x: 1 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      name: fc.constant("legacy"),
      arguments: fc.constantFrom<Record<string, unknown>>({ q: "old" }, { query: "new", limit: "3" }, { q: 42 }, { nothing: 1 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ name: fc.constant("serial"), arguments: fc.record({ text }, { requiredKeys: [] }) }) },
);
const beforePlan: fc.Arbitrary<BeforePlan> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ kind: "none" as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("block" as const), reason: fc.constantFrom(undefined, "", "not allowed here") }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("throw" as const), message: fc.constantFrom("policy service down", "") }) },
);
const afterPlan: fc.Arbitrary<AfterPlan> = fc.oneof(
  { weight: 5, arbitrary: fc.constant({ kind: "none" as const }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("result" as const),
      result: fc.record(
        {
          content: fc.constantFrom([{ type: "text" as const, text: "replaced" }], undefined),
          details: fc.constantFrom({ replaced: true }, null, undefined),
          isError: fc.boolean(),
          terminate: fc.boolean(),
        },
        { requiredKeys: [] },
      ) as fc.Arbitrary<AfterToolCallResult>,
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("throw" as const), message: fc.constantFrom("after hook exploded") }) },
);

const usage = fc.record({
  input: fc.nat(100),
  output: fc.nat(100),
  cacheRead: fc.constant(0),
  cacheWrite: fc.constant(0),
  totalTokens: fc.nat(200),
  cost: fc.constant({ input: 0.1, output: 0.2, cacheRead: 0, cacheWrite: 0, total: 0.3 }),
});
const structured = fc.constantFrom<unknown>({ a: 1 }, [1, 2], "text", 0, null, { nested: { b: [true] } });
/** What pi 1.6 added: result fields, and a single value where pi-ai 1.6 coerces to a list. */
const pi16WorkArguments = fc.oneof(
  { weight: 3, arbitrary: fc.record({ usage, structured, reportError: fc.boolean(), noContent: fc.boolean(), text }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: fc.constantFrom<Record<string, unknown>>({ updates: "single" }, { label: null, count: "2" }, { flag: "no" }) },
);
const pi16BeforePlan: fc.Arbitrary<BeforePlan> = fc.oneof(
  { weight: 4, arbitrary: beforePlan },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("block" as const), reason: fc.constantFrom(undefined, "stop"), terminate: fc.boolean() }) },
);
const pi16AfterPlan: fc.Arbitrary<AfterPlan> = fc.oneof(
  { weight: 3, arbitrary: afterPlan },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("result" as const),
      result: fc.record(
        {
          content: fc.constantFrom([{ type: "text" as const, text: "replaced" }], undefined),
          structuredContent: fc.constantFrom<unknown>({ replaced: 1 }, undefined),
          usage: fc.option(usage, { nil: undefined }),
          isError: fc.boolean(),
        },
        { requiredKeys: [] },
      ) as fc.Arbitrary<AfterToolCallResult>,
    }),
  },
);

/** pi 1.6's additions over a generated batch plan. */
function withPi16Additions(plan: fc.Arbitrary<BatchPlan>): fc.Arbitrary<BatchPlan> {
  return plan.chain((base) =>
    fc
      .record({
        calls: fc.tuple(
          ...base.calls.map((planCall) =>
            fc.record({
              extra: fc.oneof({ weight: 3, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: pi16WorkArguments }),
              argumentsError: fc.oneof(
                { weight: 12, arbitrary: fc.constant(undefined) },
                { weight: 1, arbitrary: fc.constant("Unexpected end of JSON input") },
              ),
              before: fc.oneof({ weight: 2, arbitrary: fc.constant(planCall.before) }, { weight: 1, arbitrary: pi16BeforePlan }),
              after: fc.oneof({ weight: 2, arbitrary: fc.constant(planCall.after) }, { weight: 1, arbitrary: pi16AfterPlan }),
            }),
          ),
        ),
        abortAt: fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.nat(maxCalls - 1) }),
        stopReason: fc.oneof({ weight: 15, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constant("length") }),
      })
      .map(({ calls, abortAt, stopReason }) => ({
        ...base,
        calls: base.calls.map((planCall, index) => {
          const { extra, argumentsError, before, after } = calls[index]!;
          const isWork = planCall.name === "work" && !("fail" in planCall.arguments) && !("throwString" in planCall.arguments);
          return {
            ...planCall,
            arguments: isWork ? { ...planCall.arguments, ...extra } : planCall.arguments,
            ...(argumentsError === undefined ? {} : { argumentsError }),
            before,
            after,
          };
        }),
        ...(abortAt === undefined || abortAt >= base.calls.length ? {} : { abortAt }),
        ...(stopReason === undefined ? {} : { stopReason }),
      })),
  );
}

const batchPlan: fc.Arbitrary<BatchPlan> = fc
  .record({
    flavor: fc.constantFrom<Flavor>("inline", "worker"),
    mode: fc.constantFrom<Mode>("parallel", "sequential"),
    calls: fc.array(fc.record({ name: call.map((c) => c.name), arguments: fc.constant({}), before: beforePlan, after: afterPlan }), {
      minLength: 0,
      maxLength: maxCalls,
    }),
    callBodies: fc.array(call, { minLength: maxCalls, maxLength: maxCalls }),
    // A batch terminates only when every call asks: make some batches where all do.
    terminateAll: fc.oneof(
      { weight: 4, arbitrary: fc.constant("no" as const) },
      { weight: 1, arbitrary: fc.constantFrom("by result" as const, "by hook" as const) },
    ),
  })
  .chain(({ flavor, mode, calls, callBodies, terminateAll }) => {
    const planned = calls.map((planCall, index) => {
      const body = callBodies[index]!;
      if (terminateAll === "by result") return { ...planCall, name: "work", arguments: { terminate: true } };
      if (terminateAll === "by hook") return { ...planCall, ...body, after: { kind: "result" as const, result: { terminate: true } } };
      return { ...planCall, ...body };
    });
    const indexes = planned.map((_, index) => index);
    return fc
      .shuffledSubarray(indexes, { minLength: indexes.length, maxLength: indexes.length })
      .map((releaseOrder) => ({ flavor, mode, calls: planned, releaseOrder }));
  });

/**
 * Excluded by name, from toolpool's deliberate difference 2 (worker tools run
 * on worker threads): the partials of worker calls running at once reach the
 * coordinator in the order their threads send them, where pi's single thread
 * emits them call by call. Each run of consecutive `tool_execution_update`
 * events is put in call order (stably: one call's partials keep their order).
 * Each call's partials still come after its start and before its end, and
 * every other event keeps its place.
 */
function interleaveUpdatesByCall(events: unknown[]): unknown[] {
  const result = [...events];
  const isUpdate = (event: unknown) => (event as { type: string }).type === "tool_execution_update";
  for (let start = 0; start < result.length; start++) {
    if (!isUpdate(result[start])) continue;
    let end = start;
    while (end < result.length && isUpdate(result[end])) end++;
    const run = result.slice(start, end) as { toolCallId: string }[];
    run.sort((a, b) => Number(a.toolCallId.slice(1)) - Number(b.toolCallId.slice(1)));
    result.splice(start, run.length, ...run);
    start = end;
  }
  return result;
}

function scenarioOf(plan: BatchPlan): Scenario {
  const calls: ScenarioCall[] = plan.calls.map((planCall, index) => ({
    id: `c${index + 1}`,
    name: planCall.name,
    arguments: planCall.arguments,
    ...(planCall.argumentsError === undefined ? {} : { argumentsError: planCall.argumentsError }),
  }));
  const planOf = (id: string) => plan.calls[Number(id.slice(1)) - 1]!;
  return {
    calls,
    releaseOrder: plan.releaseOrder.map((index) => `c${index + 1}`),
    ...(plan.abortAt === undefined ? {} : { abortInBeforeToolCall: `c${plan.abortAt + 1}` }),
    ...(plan.stopReason === undefined ? {} : { stopReason: plan.stopReason }),
    beforeToolCall: ({ toolCall }): BeforeToolCallResult | undefined => {
      const before = planOf(toolCall.id).before;
      if (before.kind === "throw") throw new Error(before.message);
      if (before.kind !== "block") return undefined;
      return {
        block: true,
        ...(before.reason === undefined ? {} : { reason: before.reason }),
        ...(before.terminate === undefined ? {} : { terminate: before.terminate }),
      };
    },
    afterToolCall: ({ toolCall }): AfterToolCallResult | undefined => {
      const after = planOf(toolCall.id).after;
      if (after.kind === "throw") throw new Error(after.message);
      return after.kind === "result" ? { ...after.result } : undefined;
    },
  };
}

for (const pi of ["0.73", "1.6"] satisfies PiVersion[]) {
  describe.skipIf(pi === "1.6" && !supportsPi16())(`toolpool against pi ${pi === "1.6" ? "1.6.0" : "0.73.1"}, randomized batches`, () => {
    const plans = pi === "1.6" ? withPi16Additions(batchPlan) : batchPlan;
    const gates = new GateController();
    const runtimes = new Map<string, SharedRuntime>();
    const runtimeFor = (flavor: Flavor, mode: Mode): SharedRuntime => {
      const key = `${flavor}/${mode}`;
      let shared = runtimes.get(key);
      if (shared === undefined) {
        shared = createSharedRuntime(flavor, mode, maxCalls, pi);
        runtimes.set(key, shared);
      }
      return shared;
    };
    afterAll(async () => {
      gates.close();
      await Promise.all([...runtimes.values()].map((shared) => shared.runtime.close()));
    });

    it(`gives pi's events, messages and hook views for ${batchCount} generated batches (seed ${seed})`, { timeout: 600_000 }, async () => {
      const tally = { batches: 0, calls: 0, parallel: 0, worker: 0, terminated: 0, errorResults: 0, endEvents: 0, aborted: 0, truncated: 0 };
      await fc.assert(
        fc.asyncProperty(plans, async (plan) => {
          const scenario = scenarioOf(plan);
          let oracle = await runScenario(scenario, "pi", plan.flavor, plan.mode, gates, true, undefined, { pi });
          let toolpool = await runScenario(scenario, "toolpool", plan.flavor, plan.mode, gates, true, runtimeFor(plan.flavor, plan.mode));
          const isParallel = plan.mode === "parallel" && !plan.calls.some((c) => c.name === "serial");
          if (plan.flavor === "worker" && isParallel) {
            oracle = { ...oracle, events: interleaveUpdatesByCall(oracle.events) };
            toolpool = { ...toolpool, events: interleaveUpdatesByCall(toolpool.events) };
          }
          expect(toolpool).toEqual(oracle);
          expect(toolpool.messages).toHaveLength(plan.calls.length);
          tally.batches++;
          tally.calls += plan.calls.length;
          if (isParallel) tally.parallel++;
          if (plan.flavor === "worker") tally.worker++;
          if (oracle.terminate) tally.terminated++;
          if (plan.abortAt !== undefined) tally.aborted++;
          if (plan.stopReason !== undefined) tally.truncated++;
          tally.errorResults += (oracle.messages as { isError: boolean }[]).filter((message) => message.isError).length;
          tally.endEvents += (oracle.events as { type: string }[]).filter((event) => event.type === "tool_execution_end").length;
        }),
        { seed, numRuns: batchCount },
      );
      console.info(`batch differential, pi ${pi} (seed ${seed}):`, tally);
      expect(tally.batches).toBe(batchCount);
      expect(tally.endEvents).toBe(tally.calls);
      expect(tally.terminated).toBeGreaterThan(0);
      expect(tally.parallel).toBeGreaterThan(batchCount * 0.2);
      expect(tally.worker).toBeGreaterThan(batchCount * 0.3);
      if (pi === "1.6") {
        expect(tally.aborted).toBeGreaterThan(0);
        expect(tally.truncated).toBeGreaterThan(0);
      }
    });
  });
}
