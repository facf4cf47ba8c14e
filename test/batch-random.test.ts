import fc from "fast-check";
import { supportsPi16, type AfterToolCallResult, type BeforeToolCallResult, type PiVersion } from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

import {
  capsNeverReached,
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
 *
 * Longer than the house's ~400 lines: one generator of batch plans (each
 * call's kind and arguments, hook plans, pi 1.6's additions, the edge
 * values, aborts) with the translation of a plan into a scenario and the
 * runs that compare it; the arbitraries build on each other and on the
 * plan types, and are used nowhere else.
 */
const seed = Number(process.env.RANDOM_SEED ?? 20_261_202);
const batchCount = Number(process.env.RANDOM_BATCHES ?? 500);
/** At most this many calls a batch, all of them able to wait at their gates at once. */
const maxCalls = 6;

type BeforePlan =
  | { kind: "none" }
  | { kind: "block"; reason: string | undefined; terminate?: boolean }
  | { kind: "throw"; message: string }
  /** Changes the validated arguments in place and lets the call run with them. */
  | { kind: "mutate" };
type AfterPlan =
  | { kind: "none" }
  | { kind: "result"; result: AfterToolCallResult }
  | { kind: "throw"; message: string }
  /** Changes the executed result in place and returns nothing. */
  | { kind: "mutate" };
/** Where a hook or the event sink aborts the batch, with `abortReason`. */
type AbortPlan = { kind: "afterToolCall"; index: number } | { kind: "event"; type: "tool_execution_start" | "tool_execution_end"; index: number };

interface BatchPlan {
  flavor: Flavor;
  mode: Mode;
  calls: { name: string; arguments: Record<string, unknown>; argumentsError?: string; before: BeforePlan; after: AfterPlan }[];
  releaseOrder: number[];
  /** pi 1.6: the index of the call whose `beforeToolCall` aborts the batch. */
  abortAt?: number;
  /** pi 1.6: `"length"` for a truncated response. */
  stopReason?: string;
  /** An abort from `afterToolCall` or the sink. */
  abortPlan?: AbortPlan;
  /** What the batch is aborted with. @default none: the AbortError */
  abortReason?: { value: unknown };
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
      // (`explode`: prepareArguments throws.)
      arguments: fc.constantFrom<Record<string, unknown>>(
        { q: "old" },
        { query: "new", limit: "3" },
        { q: 42 },
        { nothing: 1 },
        { explode: "old shape" },
      ),
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

/** Odd values a `work` call may return instead of a result (see fixtures/tools/edge-cases.mjs). */
const oddValues = ["string", "number", "empty", "array", "noContent", "nullContent"];
/** pi 0.73.1 rejects the whole batch for these (docs/design.md, deliberate difference 4): only pi 1.6's runs have them. */
const noResultValues = ["null", "undefined"];
const abortReasons: fc.Arbitrary<{ value: unknown } | undefined> = fc.constantFrom(
  undefined,
  { value: "stopped by user" },
  { value: new Error("the user pressed stop") },
  { value: { code: 42, by: "user" } },
);

/**
 * What the suites had not reached: execute returning a plain value at once,
 * odd return values, partials changed after sending and sent microtasks
 * after the tool settled (inline tools: a worker drops those by design),
 * hooks that change arguments or results in place, and aborts from
 * `afterToolCall` or from the sink as it receives a start or end event, with
 * a reason of the caller's, which the stopped calls report.
 */
function withEdgeAdditions(plan: fc.Arbitrary<BatchPlan>, pi: PiVersion): fc.Arbitrary<BatchPlan> {
  const odd = pi === "1.6" ? [...oddValues, ...noResultValues] : oddValues;
  return plan.chain((base) =>
    fc
      .record({
        calls: fc.tuple(
          ...base.calls.map(() =>
            fc.record({
              sync: fc.oneof({ weight: 7, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
              returns: fc.oneof({ weight: 7, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom(...odd) }),
              mutate: fc.boolean(),
              lateAt: fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.nat(4) }),
              before: fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constant({ kind: "mutate" as const }) }),
              after: fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constant({ kind: "mutate" as const }) }),
            }),
          ),
        ),
        abortPlan: fc.oneof(
          { weight: 6, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: fc.record({ kind: fc.constant("afterToolCall" as const), index: fc.nat(maxCalls - 1) }) },
          {
            weight: 2,
            arbitrary: fc.record({
              kind: fc.constant("event" as const),
              type: fc.constantFrom("tool_execution_start" as const, "tool_execution_end" as const),
              index: fc.nat(maxCalls - 1),
            }),
          },
        ),
        abortReason: abortReasons,
      })
      .map(({ calls, abortPlan, abortReason }) => {
        const isParallel = base.mode === "parallel" && !base.calls.some((c) => c.name === "serial");
        let syncWorkers = 0;
        // A worker call that returns at once ends whenever its thread answers: before or after the
        // partials other threads send meanwhile. In a parallel batch of worker calls, only where none sends any.
        const othersSendPartials = base.calls.some((c) => "updates" in c.arguments);
        const hasAbort = (abortPlan !== undefined && abortPlan.index < base.calls.length) || base.abortAt !== undefined;
        const plannedCalls = base.calls.map((planCall, index) => {
          const edge = calls[index]!;
          const isWork = planCall.name === "work";
          const extra: Record<string, unknown> = {};
          if (isWork) {
            // Two worker calls returning at once would end in whichever order their threads answer.
            if (edge.sync && !(base.flavor === "worker" && isParallel && (othersSendPartials || syncWorkers++ > 0))) extra.sync = true;
            if (edge.returns !== undefined) extra.returns = edge.returns;
            if (edge.mutate) extra.mutate = true;
            // pi 0.73.1 emits a late partial at once, even while an afterToolCall hook runs; toolpool
            // delivers it after the hook (docs/design.md, deliberate difference 1): pi 1.6's rule only.
            if (edge.lateAt !== undefined && base.flavor === "inline" && pi === "1.6") extra.lateAt = edge.lateAt;
            if (hasAbort && abortReason !== undefined) extra.showReason = true;
          }
          return {
            ...planCall,
            arguments: { ...planCall.arguments, ...extra },
            before: edge.before ?? planCall.before,
            after: edge.after ?? planCall.after,
          };
        });
        // Calls that return at once finish together, so their afterToolCall hooks overlap in pi
        // (where deliberate difference 1 shows), and a worker one ends while the others' threads may
        // still be on their way to their gates. In a parallel batch with such a call, an abort comes
        // only from a start event: during preparation, before anything runs.
        const target = abortPlan === undefined ? undefined : plannedCalls[abortPlan.index];
        const hasSyncCall = plannedCalls.some((c) => (c.arguments as Record<string, unknown>).sync === true);
        const isRacy = isParallel && hasSyncCall && !(abortPlan?.kind === "event" && abortPlan.type === "tool_execution_start");
        return {
          ...base,
          calls: plannedCalls,
          ...(abortPlan === undefined || target === undefined || isRacy ? {} : { abortPlan }),
          ...(abortReason === undefined ? {} : { abortReason }),
        };
      }),
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
    ...(plan.abortPlan?.kind === "afterToolCall" ? { abortInAfterToolCall: `c${plan.abortPlan.index + 1}` } : {}),
    ...(plan.abortPlan?.kind === "event" ? { abortOnEvent: { type: plan.abortPlan.type, toolCallId: `c${plan.abortPlan.index + 1}` } } : {}),
    ...(plan.abortReason === undefined ? {} : { abortReason: plan.abortReason.value }),
    beforeToolCall: ({ toolCall, args }): BeforeToolCallResult | undefined => {
      const before = planOf(toolCall.id).before;
      if (before.kind === "mutate") {
        if (typeof args === "object" && args !== null) (args as Record<string, unknown>).text = "changed by beforeToolCall";
        return undefined;
      }
      if (before.kind === "throw") throw new Error(before.message);
      if (before.kind !== "block") return undefined;
      return {
        block: true,
        ...(before.reason === undefined ? {} : { reason: before.reason }),
        ...(before.terminate === undefined ? {} : { terminate: before.terminate }),
      };
    },
    afterToolCall: ({ toolCall, result }): AfterToolCallResult | undefined => {
      const after = planOf(toolCall.id).after;
      if (after.kind === "mutate") {
        if (typeof result === "object" && result !== null) {
          const changed = result as unknown as Record<string, unknown>;
          changed.details = { changedBy: "afterToolCall" };
          if (Array.isArray(changed.content)) changed.content.push({ type: "text", text: "added by afterToolCall" });
        }
        return undefined;
      }
      if (after.kind === "throw") throw new Error(after.message);
      return after.kind === "result" ? { ...after.result } : undefined;
    },
  };
}

for (const pi of ["0.73", "1.6"] satisfies PiVersion[]) {
  describe.skipIf(pi === "1.6" && !supportsPi16())(`toolpool against pi ${pi === "1.6" ? "1.6.0" : "0.73.1"}, randomized batches`, () => {
    const plans = withEdgeAdditions(pi === "1.6" ? withPi16Additions(batchPlan) : batchPlan, pi);
    const gates = new GateController();
    const runtimes = new Map<string, SharedRuntime>();
    // With caps, every tool's, the session's and the batch's at the largest batch's size: never reached.
    const caps = capsNeverReached(maxCalls);
    const runtimeFor = (flavor: Flavor, mode: Mode, isCapped = false): SharedRuntime => {
      const key = `${flavor}/${mode}${isCapped ? "/capped" : ""}`;
      let shared = runtimes.get(key);
      if (shared === undefined) {
        shared = createSharedRuntime(flavor, mode, maxCalls, pi, isCapped ? caps.runtime : {});
        runtimes.set(key, shared);
      }
      return shared;
    };
    afterAll(async () => {
      gates.close();
      await Promise.all([...runtimes.values()].map((shared) => shared.runtime.close()));
    });

    it(`gives pi's events, messages and hook views for ${batchCount} generated batches (seed ${seed})`, { timeout: 600_000 }, async () => {
      const tally = {
        batches: 0,
        calls: 0,
        parallel: 0,
        worker: 0,
        terminated: 0,
        errorResults: 0,
        endEvents: 0,
        aborted: 0,
        truncated: 0,
        /** What the edge additions reached. */
        syncReturns: 0,
        oddReturns: 0,
        mutatedPartials: 0,
        latePartials: 0,
        mutatingHooks: 0,
        abortsFromHookOrSink: 0,
        abortReasons: 0,
        /** Batches run with caps that are never reached (one in four). */
        capped: 0,
      };
      await fc.assert(
        fc.asyncProperty(plans, async (plan) => {
          const scenario = scenarioOf(plan);
          let oracle = await runScenario(scenario, "pi", plan.flavor, plan.mode, gates, true, undefined, { pi });
          const isCapped = tally.batches % 4 === 3;
          let toolpool = await runScenario(
            scenario,
            "toolpool",
            plan.flavor,
            plan.mode,
            gates,
            true,
            runtimeFor(plan.flavor, plan.mode, isCapped),
            {},
            isCapped ? caps.batch : {},
          );
          if (isCapped) tally.capped++;
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
          const argsOf = (c: BatchPlan["calls"][number]) => c.arguments as Record<string, unknown>;
          tally.syncReturns += plan.calls.filter((c) => argsOf(c).sync === true).length;
          tally.oddReturns += plan.calls.filter((c) => argsOf(c).returns !== undefined).length;
          tally.mutatedPartials += plan.calls.filter((c) => argsOf(c).mutate === true && Array.isArray(argsOf(c).updates)).length;
          tally.latePartials += plan.calls.filter((c) => argsOf(c).lateAt !== undefined).length;
          tally.mutatingHooks += plan.calls.filter((c) => c.before.kind === "mutate" || c.after.kind === "mutate").length;
          if (plan.abortPlan !== undefined) tally.abortsFromHookOrSink++;
          if (plan.abortReason !== undefined && (plan.abortPlan !== undefined || plan.abortAt !== undefined)) tally.abortReasons++;
          tally.errorResults += (oracle.messages as { isError: boolean }[]).filter((message) => message.isError).length;
          tally.endEvents += (oracle.events as { type: string }[]).filter((event) => event.type === "tool_execution_end").length;
        }),
        { seed, numRuns: batchCount },
      );
      console.info(`batch differential, pi ${pi} (seed ${seed}):`, tally);
      expect(tally.capped).toBeGreaterThan(0);
      expect(tally.batches).toBe(batchCount);
      expect(tally.endEvents).toBe(tally.calls);
      expect(tally.terminated).toBeGreaterThan(0);
      expect(tally.parallel).toBeGreaterThan(batchCount * 0.2);
      expect(tally.worker).toBeGreaterThan(batchCount * 0.3);
      if (pi === "1.6") {
        expect(tally.aborted).toBeGreaterThan(0);
        expect(tally.truncated).toBeGreaterThan(0);
      }
      // Every edge dimension is reached by a run of the default size.
      for (const reached of ["syncReturns", "oddReturns", "mutatedPartials", "mutatingHooks", "abortsFromHookOrSink", "abortReasons"] as const) {
        expect(tally[reached], reached).toBeGreaterThan(0);
      }
      if (pi === "1.6") expect(tally.latePartials).toBeGreaterThan(0);
    });
  });
}
