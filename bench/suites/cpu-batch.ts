/**
 * Suite 1: a batch of CPU-bound calls. pi runs them in process (its parallel
 * mode only interleaves awaits, so synchronous work serializes and stalls the
 * event loop); toolpool runs them on the worker pool. Same iteration count,
 * same process, interleaved repetitions. Bare Piscina on the same work is the
 * control: it tells a slow toolpool batch from a machine that was busy.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";

import type { AgentTool as PiAgentTool } from "@mariozechner/pi-agent-core";
import type { ToolCall as PiToolCall } from "@mariozechner/pi-ai";
import { Piscina } from "piscina";
import { createRuntime, workerTool, type AssistantMessage } from "toolpool";

import { calibrateSpin, runSpinCall, spin, type SpinResult, type SpinTrace } from "../lib/busy.js";
import { spinParameters } from "../lib/constants.js";
import { runPiBatch } from "../lib/pi-oracle.js";
import { logStep } from "../lib/progress.js";
import { rotate } from "../lib/run-loop.js";
import { summarize, type Summary } from "../lib/stats.js";

export interface CpuBatchOptions {
  /** Calls in the batch. */
  calls: number;
  /** CPU time of one call on the main thread, in ms (calibrated once). */
  targetMs: number;
  warmups: number;
  reps: number;
  /** Pool size (min = max). */
  threads: number;
}

/** What one measured batch of one contender looked like. */
export interface BatchSample {
  wallMs: number;
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
  loopDelayP99: Summary;
  loopDelayMax: Summary;
  cpuPerWall: Summary;
  callConcurrency: Summary;
  callMs: Summary;
}

export interface CpuBatchResult {
  options: CpuBatchOptions;
  iterations: number;
  calibratedCallMs: number;
  contenders: ContenderFigures[];
  /** pi median / toolpool median. */
  speedup: number;
  /** pi_i / toolpool_i of each repetition (paired, same rep). */
  pairedSpeedups: Summary;
  /** pi median / bare Piscina median: what the pool underneath achieves on the same runs. */
  controlSpeedup: number;
  ideal: number;
  efficiency: number;
}

interface BatchResult {
  isError: boolean;
  content: unknown;
  details: unknown;
}

interface Contender {
  name: string;
  runBatch: () => Promise<readonly BatchResult[]>;
}

export const cpuContenders = {
  pi: "pi (inline tool, in process)",
  toolpool: "toolpool executeToolCalls",
  piOverPool: "pi loop + toolpool agentTools()",
  piscina: "bare Piscina 5 (control)",
} as const;

export async function runCpuBatchSuite(options: CpuBatchOptions): Promise<CpuBatchResult> {
  logStep(`cpu-batch: calibrating the busy loop to ~${options.targetMs} ms`);
  const { iterations, measuredMs } = calibrateSpin(options.targetMs);
  const expectedText = String(spin(iterations));
  logStep(`cpu-batch: ${iterations} iterations ≈ ${measuredMs.toFixed(1)} ms on the main thread`);

  const toolCalls: PiToolCall[] = Array.from({ length: options.calls }, (_, index) => ({
    type: "toolCall",
    id: `call_${index}`,
    name: "spin",
    arguments: { iterations },
  }));
  const assistantMessage: AssistantMessage = { role: "assistant", content: toolCalls };
  const spinModule = new URL("../tools/spin.js", import.meta.url);

  const piSpinTool: PiAgentTool = {
    name: "spin",
    label: "spin",
    description: "Busy CPU loop",
    parameters: spinParameters as unknown as PiAgentTool["parameters"],
    execute: async (_id, args) => runSpinCall((args as { iterations: number }).iterations),
  };
  const runtime = createRuntime({
    tools: [workerTool({ name: "spin", description: "Busy CPU loop", parameters: spinParameters, module: spinModule })],
    pool: { maxThreads: options.threads, minThreads: options.threads },
  });
  const piscina = new Piscina({
    filename: spinModule.href,
    minThreads: options.threads,
    maxThreads: options.threads,
    idleTimeout: runtime.options.pool.idleTimeout,
    concurrentTasksPerWorker: 1,
  });
  piscina.on("error", (error: unknown) => logStep(`bare Piscina error: ${String(error)}`));
  const pooledTools = runtime.agentTools() as unknown as PiAgentTool[];

  const contenders: Contender[] = [
    { name: cpuContenders.pi, runBatch: async () => (await runPiBatch([piSpinTool], toolCalls)).toolResults },
    { name: cpuContenders.toolpool, runBatch: async () => (await runtime.executeToolCalls(assistantMessage)).messages },
    { name: cpuContenders.piOverPool, runBatch: async () => (await runPiBatch(pooledTools, toolCalls)).toolResults },
    {
      name: cpuContenders.piscina,
      runBatch: async () => {
        const results = await Promise.all(toolCalls.map(() => piscina.run({ iterations }) as Promise<SpinResult>));
        return results.map((result) => ({ isError: false, ...result }));
      },
    },
  ];
  const samples = new Map(contenders.map((c) => [c.name, [] as BatchSample[]]));

  try {
    const total = options.warmups + options.reps;
    for (let rep = 0; rep < total; rep++) {
      const isWarmup = rep < options.warmups;
      for (const contender of rotate(contenders, rep)) {
        const sample = await measureBatch(contender, options.calls, expectedText);
        if (!isWarmup) samples.get(contender.name)!.push(sample);
      }
      logStep(
        `cpu-batch: ${isWarmup ? `warm-up ${rep + 1}/${options.warmups}` : `rep ${rep - options.warmups + 1}/${options.reps}`} done`,
      );
    }
  } finally {
    await Promise.all([runtime.close(), piscina.close()]);
  }

  const figures: ContenderFigures[] = contenders.map(({ name }) => {
    const list = samples.get(name)!;
    return {
      name,
      samples: list,
      wall: summarize(list.map((s) => s.wallMs)),
      loopDelayP99: summarize(list.map((s) => s.loopDelayP99Ms)),
      loopDelayMax: summarize(list.map((s) => s.loopDelayMaxMs)),
      cpuPerWall: summarize(list.map((s) => s.cpuPerWall)),
      callConcurrency: summarize(list.map((s) => s.callConcurrency)),
      callMs: summarize(list.map((s) => s.callMs)),
    };
  });
  const byName = (name: string): ContenderFigures => figures.find((f) => f.name === name)!;
  const pi = byName(cpuContenders.pi);
  const toolpool = byName(cpuContenders.toolpool);
  const speedup = pi.wall.median / toolpool.wall.median;
  const ideal = Math.min(options.calls, options.threads);
  return {
    options,
    iterations,
    calibratedCallMs: measuredMs,
    contenders: figures,
    speedup,
    pairedSpeedups: summarize(pi.samples.map((s, index) => s.wallMs / toolpool.samples[index]!.wallMs)),
    controlSpeedup: pi.wall.median / byName(cpuContenders.piscina).wall.median,
    ideal,
    efficiency: speedup / ideal,
  };
}

/** Runs one batch, timing only the batch, with the event-loop delay and CPU time around it. */
async function measureBatch(contender: Contender, calls: number, expectedText: string): Promise<BatchSample> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  const cpuStart = process.cpuUsage();
  const start = performance.now();
  const results = await contender.runBatch();
  const wallMs = performance.now() - start;
  const cpu = process.cpuUsage(cpuStart);
  histogram.disable();
  const traces = checkResults(contender.name, results, calls, expectedText);
  const callDurations = traces.map((trace) => trace.endedAt - trace.startedAt);
  // No sample at all means the loop never got a timer tick in: the whole batch was one stall.
  const hasSamples = histogram.count > 0;
  return {
    wallMs,
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
