/**
 * Suite 1 (and the figures of suite 3): batches of CPU-bound calls. pi runs
 * them in process (its parallel mode only interleaves awaits, so synchronous
 * work serializes and stalls the event loop); toolpool runs them on the worker
 * pool; bare Piscina, tinypool and workerpool run the same function on pools
 * of the same size. Same iteration count, same process, interleaved
 * repetitions. Bare Piscina is the control: it tells a slow toolpool batch
 * from a machine that was busy.
 *
 * Around every batch: the main thread's event-loop delay
 * (`monitorEventLoopDelay`, 1 ms resolution), the process's CPU time, and
 * each call's own start and end (stamped where it ran).
 */
import { monitorEventLoopDelay } from "node:perf_hooks";

import type { AgentTool as PiAgentTool } from "@mariozechner/pi-agent-core";
import type { ToolCall as PiToolCall } from "@mariozechner/pi-ai";
import { Piscina } from "piscina";
import { createRuntime, workerTool, type AssistantMessage, type Runtime } from "toolpool";

import { calibrateSpin, runSpinCall, spin, type SpinResult, type SpinTrace } from "../lib/busy.js";
import { spinParameters } from "../lib/constants.js";
import { createTinypool, createWorkerpool, type PeerPool, type Peers } from "../lib/peers.js";
import { runPiBatch } from "../lib/pi-oracle.js";
import { advanceProgress, logStep } from "../lib/progress.js";
import { rotate } from "../lib/run-loop.js";
import { summarize, type Summary } from "../lib/stats.js";

/** The spin loop's iteration count for the target call length, found once per run by {@link calibrate}. */
export interface SpinCalibration {
  targetMs: number;
  iterations: number;
  /** What `iterations` took on the main thread when calibrated. */
  measuredMs: number;
  /** The text every spin call's result must carry. */
  expectedText: string;
}

export interface CpuBatchOptions {
  /** Batch sizes (calls per batch) and the measured repetitions of each. */
  batches: { calls: number; reps: number }[];
  /** The call length: every call runs this many iterations. */
  spin: SpinCalibration;
  /** Warm-up repetitions, with the first batch size; every pool is warm after them. */
  warmups: number;
  /** Pool size (min = max). */
  threads: number;
  /** Cores of the machine: the ideal speedup is min(calls, threads, cores). */
  cores: number;
}

/** What one measured batch of one contender looked like. */
export interface BatchSample {
  wallMs: number;
  loopDelayP50Ms: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  /** Process CPU time (all threads) / wall time. */
  cpuPerWall: number;
  /** Sum of the calls' own durations / wall time: how many ran at once, on average. */
  callConcurrency: number;
  /** Median duration of one call, measured where it ran. */
  callMs: number;
  /** Distinct threads that ran calls. */
  threadsUsed: number;
}

/** Raw and summarized figures of one contender. */
export interface ContenderFigures {
  name: string;
  samples: BatchSample[];
  wall: Summary;
  loopDelayP50: Summary;
  loopDelayP99: Summary;
  loopDelayMax: Summary;
  cpuPerWall: Summary;
  callConcurrency: Summary;
  callMs: Summary;
}

/** Speedup of one contender over pi's in-process loop. */
export interface SpeedupFigures {
  name: string;
  /** pi median / contender median. */
  ratioOfMedians: number;
  /** pi_i / contender_i of each repetition (paired, same rep). */
  paired: Summary;
  /** ratioOfMedians / ideal. */
  efficiency: number;
}

export interface BatchFigures {
  calls: number;
  reps: number;
  /** min(calls, threads, cores): the best speedup this pool could reach on this machine. */
  ideal: number;
  contenders: ContenderFigures[];
  /** Every contender but pi itself. */
  speedups: SpeedupFigures[];
}

export interface CpuBatchResult {
  options: CpuBatchOptions;
  batches: BatchFigures[];
}

export interface BatchResult {
  isError: boolean;
  content: unknown;
  details: unknown;
}

/** A contender: `runBatch(calls)` runs one batch of `calls` spin calls and returns its results in call order. */
export interface CpuContender {
  name: string;
  runBatch: (calls: number) => Promise<readonly BatchResult[]>;
}

export const cpuContenders = {
  pi: "pi (inline tool, in process)",
  toolpool: "toolpool executeToolCalls",
  piOverPool: "pi loop + toolpool agentTools()",
  piscina: "bare Piscina 5 (control)",
  tinypool: "bare tinypool",
  workerpool: "bare workerpool",
} as const;

export const spinModule = new URL("../tools/spin.js", import.meta.url);

/** The spin tool calls of a batch, as an assistant message carries them. */
export function createSpinCalls(calls: number, iterations: number): PiToolCall[] {
  return Array.from({ length: calls }, (_, index) => ({ type: "toolCall", id: `call_${index}`, name: "spin", arguments: { iterations } }));
}

/** pi's tool: the spin loop inline, on the main thread. */
export function createPiSpinTool(): PiAgentTool {
  return {
    name: "spin",
    label: "spin",
    description: "Busy CPU loop",
    parameters: spinParameters as unknown as PiAgentTool["parameters"],
    execute: async (_id, args) => runSpinCall((args as { iterations: number }).iterations),
  };
}

/** pi's loop over `calls` inline spin calls. */
export function createPiContender(iterations: number): CpuContender {
  const tool = createPiSpinTool();
  return { name: cpuContenders.pi, runBatch: async (calls) => (await runPiBatch([tool], createSpinCalls(calls, iterations))).toolResults };
}

/** A toolpool runtime with the spin worker tool on `threads` threads. */
export function createSpinRuntime(threads: number): Runtime {
  return createRuntime({
    tools: [workerTool({ name: "spin", description: "Busy CPU loop", parameters: spinParameters, module: spinModule })],
    pool: { maxThreads: threads, minThreads: threads },
  });
}

export function createToolpoolContender(runtime: Runtime, iterations: number, name: string = cpuContenders.toolpool): CpuContender {
  return {
    name,
    runBatch: async (calls) =>
      (await runtime.executeToolCalls({ role: "assistant", content: createSpinCalls(calls, iterations) } as AssistantMessage)).messages,
  };
}

/** Bare Piscina sized like toolpool's pool; `close` it when done. */
export function createPiscinaContender(
  threads: number,
  idleTimeout: number,
  iterations: number,
  name: string = cpuContenders.piscina,
): CpuContender & { close: () => Promise<void> } {
  const piscina = new Piscina({ filename: spinModule.href, minThreads: threads, maxThreads: threads, idleTimeout, concurrentTasksPerWorker: 1 });
  piscina.on("error", (error: unknown) => logStep(`bare Piscina error: ${String(error)}`));
  return { ...createPoolContender(name, (task) => piscina.run(task), iterations), close: () => piscina.close() };
}

function createPoolContender(name: string, run: (task: unknown) => Promise<unknown>, iterations: number): CpuContender {
  return {
    name,
    runBatch: async (calls) => {
      const results = await Promise.all(Array.from({ length: calls }, () => run({ iterations }) as Promise<SpinResult>));
      return results.map((result) => ({ isError: false, ...result }));
    },
  };
}

/** Expected ms of one repetition of every contender: pi in process, then each pool with `threads` calls at once. */
function repetitionMs(calls: number, options: CpuBatchOptions, poolContenders: number): number {
  return calls * options.spin.targetMs * (1 + poolContenders / Math.min(calls, options.threads, options.cores));
}

/** Expected duration, for the progress bar. */
export function estimateCpuBatchMs(options: CpuBatchOptions, poolContenders: number): number {
  const first = options.batches[0]?.calls ?? 0;
  return (
    options.warmups * repetitionMs(first, options, poolContenders) +
    options.batches.reduce((sum, batch) => sum + batch.reps * repetitionMs(batch.calls, options, poolContenders), 0)
  );
}

export async function runCpuBatchSuite(options: CpuBatchOptions, peers: Peers): Promise<CpuBatchResult> {
  const { iterations, expectedText } = options.spin;

  const runtime = createSpinRuntime(options.threads);
  const idleTimeout = runtime.options.pool.idleTimeout;
  const piscina = createPiscinaContender(options.threads, idleTimeout, iterations);
  const peerPools: (PeerPool & { name: string })[] = [];
  if (peers.tinypool !== undefined) {
    peerPools.push({ name: cpuContenders.tinypool, ...createTinypool(peers.tinypool, spinModule, options.threads, idleTimeout) });
  }
  if (peers.workerpool !== undefined) {
    peerPools.push({ name: cpuContenders.workerpool, ...createWorkerpool(peers.workerpool, "spin", options.threads) });
  }
  const pooledTools = runtime.agentTools() as unknown as PiAgentTool[];

  const contenders: CpuContender[] = [
    createPiContender(iterations),
    createToolpoolContender(runtime, iterations),
    { name: cpuContenders.piOverPool, runBatch: async (calls) => (await runPiBatch(pooledTools, createSpinCalls(calls, iterations))).toolResults },
    piscina,
    ...peerPools.map((pool) => createPoolContender(pool.name, pool.run, iterations)),
  ];
  const unitMs = (calls: number) => repetitionMs(calls, options, contenders.length - 1);
  const batches: BatchFigures[] = [];
  try {
    for (let rep = 0; rep < options.warmups; rep++) {
      for (const contender of rotate(contenders, rep)) await measureBatch(contender, options.batches[0]!.calls, expectedText);
      advanceProgress(unitMs(options.batches[0]!.calls), `cpu-batch: warm-up ${rep + 1}/${options.warmups} done`);
    }
    for (const { calls, reps } of options.batches) {
      const samples = new Map(contenders.map((c) => [c.name, [] as BatchSample[]]));
      for (let rep = 0; rep < reps; rep++) {
        for (const contender of rotate(contenders, rep)) samples.get(contender.name)!.push(await measureBatch(contender, calls, expectedText));
        advanceProgress(unitMs(calls), `cpu-batch: ${calls} calls, rep ${rep + 1}/${reps} done`);
      }
      batches.push(summarizeBatch(calls, reps, Math.min(calls, options.threads, options.cores), contenders, samples));
    }
  } finally {
    await Promise.all([runtime.close(), piscina.close(), ...peerPools.map((pool) => pool.close())]);
  }
  return { options, batches };
}

/** Summaries of every contender, and their speedups over pi. */
export function summarizeBatch(
  calls: number,
  reps: number,
  ideal: number,
  contenders: readonly CpuContender[],
  samples: ReadonlyMap<string, BatchSample[]>,
): BatchFigures {
  const figures = contenders.map(({ name }) => summarizeContender(name, samples.get(name)!));
  const pi = figures.find((f) => f.name === cpuContenders.pi)!;
  const speedups = figures
    .filter((f) => f !== pi)
    .map((f): SpeedupFigures => {
      const ratioOfMedians = pi.wall.median / f.wall.median;
      return {
        name: f.name,
        ratioOfMedians,
        paired: summarize(pi.samples.map((s, index) => s.wallMs / f.samples[index]!.wallMs)),
        efficiency: ratioOfMedians / ideal,
      };
    });
  return { calls, reps, ideal, contenders: figures, speedups };
}

export function summarizeContender(name: string, list: readonly BatchSample[]): ContenderFigures {
  return {
    name,
    samples: [...list],
    wall: summarize(list.map((s) => s.wallMs)),
    loopDelayP50: summarize(list.map((s) => s.loopDelayP50Ms)),
    loopDelayP99: summarize(list.map((s) => s.loopDelayP99Ms)),
    loopDelayMax: summarize(list.map((s) => s.loopDelayMaxMs)),
    cpuPerWall: summarize(list.map((s) => s.cpuPerWall)),
    callConcurrency: summarize(list.map((s) => s.callConcurrency)),
    callMs: summarize(list.map((s) => s.callMs)),
  };
}

/** Runs one batch, timing only the batch, with the event-loop delay and CPU time around it. */
export async function measureBatch(contender: CpuContender, calls: number, expectedText: string): Promise<BatchSample> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  const cpuStart = process.cpuUsage();
  const start = performance.now();
  const results = await contender.runBatch(calls);
  const wallMs = performance.now() - start;
  const cpu = process.cpuUsage(cpuStart);
  histogram.disable();
  const traces = checkResults(contender.name, results, calls, expectedText);
  const callDurations = traces.map((trace) => trace.endedAt - trace.startedAt);
  // No sample at all means the loop never got a timer tick in: the whole batch was one stall.
  const hasSamples = histogram.count > 0;
  return {
    wallMs,
    loopDelayP50Ms: hasSamples ? histogram.percentile(50) / 1e6 : wallMs,
    loopDelayP99Ms: hasSamples ? histogram.percentile(99) / 1e6 : wallMs,
    loopDelayMaxMs: hasSamples ? histogram.max / 1e6 : wallMs,
    cpuPerWall: (cpu.user + cpu.system) / 1000 / wallMs,
    callConcurrency: callDurations.reduce((sum, ms) => sum + ms, 0) / wallMs,
    callMs: summarize(callDurations).median,
    threadsUsed: new Set(traces.map((trace) => trace.threadId)).size,
  };
}

/** A wrong or failed result would make the timing meaningless: fail loudly. Returns the calls' traces. */
function checkResults(name: string, results: readonly BatchResult[], calls: number, expectedText: string): SpinTrace[] {
  if (results.length !== calls) throw new Error(`${name}: expected ${calls} tool results, got ${results.length}`);
  return results.map((result) => {
    const text = (result.content as { type: string; text?: string }[])[0];
    if (result.isError || text?.type !== "text" || text.text !== expectedText) {
      throw new Error(`${name}: unexpected tool result ${JSON.stringify(result)}`);
    }
    return result.details as SpinTrace;
  });
}

/** Calibrates the spin loop to `targetMs` on the main thread, once for every CPU suite. */
export function calibrate(targetMs: number): SpinCalibration {
  logStep(`calibrating the busy loop to ~${targetMs} ms`);
  const { iterations, measuredMs } = calibrateSpin(targetMs);
  logStep(`${iterations} iterations ≈ ${measuredMs.toFixed(1)} ms on the main thread`);
  return { targetMs, iterations, measuredMs, expectedText: String(spin(iterations)) };
}
