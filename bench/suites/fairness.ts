/**
 * Suite "fairness": sessions sharing one pool, first come first served
 * against sessions taking turns (`pool.scheduling` `"fifo"` vs `"fair"`).
 *
 * A flood session asks for `floodCalls` CPU-bound calls of ~`callMs` ms;
 * `lightDelayMs` later, `lightSessions` light sessions ask for `lightCalls`
 * calls each. Measured per run and policy: each session's batch latency
 * (from its own start) and the makespan (flood start to the last batch's
 * end). Then the per-call dispatch overhead of the two queues: single-call
 * no-op batches, `concurrency` in flight, each batch a session of its own
 * (the fair queue's busiest case: a line made and dropped per call).
 * Policies run interleaved, repetition by repetition.
 */
import { createRuntime, workerTool, type AssistantMessage, type Runtime } from "toolpool";

import { noopParameters } from "../lib/constants.js";
import { advanceProgress, logStep } from "../lib/progress.js";
import { rotate, runInFlight } from "../lib/run-loop.js";
import { summarize, type Summary } from "../lib/stats.js";
import type { SpinCalibration } from "./cpu-batch.js";

export interface FairnessOptions {
  threads: number;
  floodCalls: number;
  lightSessions: number;
  lightCalls: number;
  lightDelayMs: number;
  spin: SpinCalibration;
  reps: number;
  dispatchCalls: number;
  concurrency: number;
  dispatchReps: number;
}

export type SchedulingPolicy = "fifo" | "fair";

export interface FairnessPolicyFigures {
  policy: SchedulingPolicy;
  floodLatencyMs: Summary;
  /** The mean of the light sessions' latencies, per run. */
  lightLatencyMs: Summary;
  /** The slowest light session, per run. */
  slowestLightMs: Summary;
  makespanMs: Summary;
  /** Light latency ÷ flood latency, per run. */
  lightOverFlood: Summary;
  /** µs per no-op call, 64 in flight. */
  dispatchUs: Summary;
}

export interface FairnessResult {
  options: Omit<FairnessOptions, "spin"> & { callMs: number };
  policies: FairnessPolicyFigures[];
  /** fair ÷ fifo makespan (medians). */
  makespanRatio: number;
  /** fair ÷ fifo dispatch µs (medians), and per repetition. */
  dispatchRatio: number;
  pairedDispatchRatios: Summary;
}

const spinModule = new URL("../tools/spin.js", import.meta.url);
const noopModule = new URL("../tools/noop.js", import.meta.url);

export function estimateFairnessMs(options: FairnessOptions): number {
  const cpuCalls = options.floodCalls + options.lightSessions * options.lightCalls;
  const runMs = (cpuCalls * options.spin.targetMs) / options.threads;
  return 2 * options.reps * runMs + 2 * options.dispatchReps * options.dispatchCalls * 0.1;
}

export async function runFairnessSuite(options: FairnessOptions): Promise<FairnessResult> {
  const policies: SchedulingPolicy[] = ["fifo", "fair"];
  const runtimes = new Map<SchedulingPolicy, Runtime>(
    policies.map((scheduling) => [
      scheduling,
      createRuntime({
        tools: [
          workerTool({ name: "spin", description: "CPU-bound", parameters: { type: "object" }, module: spinModule }),
          workerTool({ name: "noop", description: "Returns a constant", parameters: noopParameters, module: noopModule }),
        ],
        pool: { maxThreads: options.threads, minThreads: options.threads, scheduling },
      }),
    ]),
  );
  const runs = new Map(policies.map((policy) => [policy, [] as RunFigures[]]));
  const dispatch = new Map(policies.map((policy) => [policy, [] as number[]]));
  try {
    logStep(
      `fairness: flood of ${options.floodCalls} × ~${options.spin.measuredMs.toFixed(0)} ms calls, ` +
        `${options.lightSessions} light sessions × ${options.lightCalls} calls ${options.lightDelayMs} ms later, ${options.threads} threads`,
    );
    // Warm-up: every thread of both runtimes started and has loaded both tools.
    for (const policy of policies) await runScenario(runtimes.get(policy)!, { ...options, floodCalls: options.threads, lightSessions: 1 });
    const runMs = estimateFairnessMs({ ...options, reps: 1, dispatchReps: 0 }) / 2;
    for (let rep = 0; rep < options.reps; rep++) {
      for (const policy of rotate(policies, rep)) runs.get(policy)!.push(await runScenario(runtimes.get(policy)!, options));
      advanceProgress(2 * runMs, `fairness: rep ${rep + 1}/${options.reps} done`);
    }
    for (const policy of policies) await measureDispatch(runtimes.get(policy)!, Math.min(1_000, options.dispatchCalls), options.concurrency);
    for (let rep = 0; rep < options.dispatchReps; rep++) {
      for (const policy of rotate(policies, rep))
        dispatch.get(policy)!.push(await measureDispatch(runtimes.get(policy)!, options.dispatchCalls, options.concurrency));
      advanceProgress(2 * options.dispatchCalls * 0.1, `fairness: dispatch rep ${rep + 1}/${options.dispatchReps} done`);
    }
  } finally {
    await Promise.all([...runtimes.values()].map((runtime) => runtime.close()));
  }
  const figures = policies.map((policy): FairnessPolicyFigures => {
    const samples = runs.get(policy)!;
    return {
      policy,
      floodLatencyMs: summarize(samples.map((s) => s.floodMs)),
      lightLatencyMs: summarize(samples.map((s) => mean(s.lightMs))),
      slowestLightMs: summarize(samples.map((s) => Math.max(...s.lightMs))),
      makespanMs: summarize(samples.map((s) => s.makespanMs)),
      lightOverFlood: summarize(samples.map((s) => mean(s.lightMs) / s.floodMs)),
      dispatchUs: summarize(dispatch.get(policy)!),
    };
  });
  const [fifo, fair] = figures as [FairnessPolicyFigures, FairnessPolicyFigures];
  const fifoDispatch = dispatch.get("fifo")!;
  const { spin, ...rest } = options;
  return {
    options: { ...rest, callMs: spin.measuredMs },
    policies: figures,
    makespanRatio: fair.makespanMs.median / fifo.makespanMs.median,
    dispatchRatio: fair.dispatchUs.median / fifo.dispatchUs.median,
    pairedDispatchRatios: summarize(dispatch.get("fair")!.map((us, index) => us / fifoDispatch[index]!)),
  };
}

interface RunFigures {
  floodMs: number;
  lightMs: number[];
  makespanMs: number;
}

function spinBatch(prefix: string, calls: number, iterations: number): AssistantMessage {
  return {
    role: "assistant",
    content: Array.from({ length: calls }, (_, index) => ({ type: "toolCall", id: `${prefix}-${index}`, name: "spin", arguments: { iterations } })),
  };
}

async function runTimedBatch(runtime: Runtime, message: AssistantMessage, sessionKey: string): Promise<number> {
  const start = performance.now();
  const { messages } = await runtime.executeToolCalls(message, { sessionKey });
  const failed = messages.find((m) => m.isError);
  if (failed !== undefined) throw new Error(`fairness: call ${failed.toolCallId} failed: ${JSON.stringify(failed.content)}`);
  return performance.now() - start;
}

async function runScenario(runtime: Runtime, options: FairnessOptions): Promise<RunFigures> {
  const { iterations } = options.spin;
  const start = performance.now();
  const flood = runTimedBatch(runtime, spinBatch("flood", options.floodCalls, iterations), "flood");
  await new Promise((resolve) => setTimeout(resolve, options.lightDelayMs));
  const light = Array.from({ length: options.lightSessions }, (_, session) =>
    runTimedBatch(runtime, spinBatch(`light${session}`, options.lightCalls, iterations), `light-${session}`),
  );
  const [floodMs, ...lightMs] = await Promise.all([flood, ...light]);
  return { floodMs: floodMs!, lightMs, makespanMs: performance.now() - start };
}

const noopCall = (id: string): AssistantMessage => ({ role: "assistant", content: [{ type: "toolCall", id, name: "noop", arguments: {} }] });

/** µs per call: single-call batches, `concurrency` in flight, each batch a session of its own. */
async function measureDispatch(runtime: Runtime, calls: number, concurrency: number): Promise<number> {
  const start = performance.now();
  await runInFlight((index) => runtime.executeToolCalls(noopCall(`n${index}`)), calls, concurrency);
  return ((performance.now() - start) * 1_000) / calls;
}

function mean(values: readonly number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}
