/**
 * Suite 6: suite 1's batch on pools of 1..N threads. Each thread count is a
 * block of its own: toolpool and bare Piscina (the control) get pools of that
 * size, and every repetition runs pi in process, toolpool and Piscina
 * interleaved, so each point's speedup is a ratio within one block.
 *
 * Thread counts: powers of two below the core count, the core count, then
 * 1.5× and 2× it, to show the curve flatten once threads outnumber cores.
 */
import { advanceProgress, logStep } from "../lib/progress.js";
import { rotate } from "../lib/run-loop.js";
import { summarize, type Summary } from "../lib/stats.js";
import {
  createPiContender,
  createPiscinaContender,
  createSpinRuntime,
  createToolpoolContender,
  measureBatch,
  summarizeContender,
  type BatchSample,
  type ContenderFigures,
  type CpuContender,
  type SpinCalibration,
} from "./cpu-batch.js";

export interface ScalingOptions {
  threadCounts: number[];
  calls: number;
  cores: number;
  spin: SpinCalibration;
  /** Measured repetitions per thread count, after a warm-up of one call per thread on each new pool. */
  reps: number;
}

export interface ScalingPoint {
  threads: number;
  /** min(threads, cores, calls). */
  ideal: number;
  contenders: ContenderFigures[];
  /** pi median / toolpool median, and the paired per-rep ratios. */
  speedup: number;
  pairedSpeedups: Summary;
  efficiency: number;
  /** pi median / bare Piscina median at the same thread count. */
  controlSpeedup: number;
}

export interface ScalingResult {
  options: ScalingOptions;
  points: ScalingPoint[];
}

/** 1, 2, 4, … below `cores`, then `cores`, 1.5 × and 2 × `cores`. */
export function scalingThreadCounts(cores: number): number[] {
  const counts = new Set<number>();
  for (let threads = 1; threads < cores; threads *= 2) counts.add(threads);
  counts.add(cores);
  counts.add(Math.ceil(cores * 1.5));
  counts.add(cores * 2);
  return [...counts].sort((a, b) => a - b);
}

function blockRepetitionMs(threads: number, options: ScalingOptions): number {
  const work = options.calls * options.spin.targetMs;
  return work + (2 * work) / Math.min(threads, options.cores, options.calls);
}

export function estimateScalingMs(options: ScalingOptions): number {
  return options.threadCounts.reduce((sum, threads) => sum + options.reps * blockRepetitionMs(threads, options) + 2 * options.spin.targetMs, 0);
}

/**
 * The batch of the scaling suite on `cores` cores: two calls per thread at
 * the largest pool, at least 8; calls shortened so that the whole batch is
 * ~800 ms of CPU, so a 64-core machine does not spend minutes on 1 thread.
 */
export function scalingBatch(cores: number, targetMs: number): { calls: number; callMs: number } {
  const calls = Math.max(8, 2 * cores);
  return { calls, callMs: Math.min(targetMs, Math.max(5, Math.round(800 / calls))) };
}

export async function runScalingSuite(options: ScalingOptions): Promise<ScalingResult> {
  const { iterations, expectedText } = options.spin;
  const pi = createPiContender(iterations);
  const points: ScalingPoint[] = [];
  for (const threads of options.threadCounts) {
    const runtime = createSpinRuntime(threads);
    const piscina = createPiscinaContender(threads, runtime.options.pool.idleTimeout, iterations);
    const contenders: CpuContender[] = [pi, createToolpoolContender(runtime, iterations), piscina];
    const samples = new Map(contenders.map((c) => [c.name, [] as BatchSample[]]));
    try {
      // Warm-up: one call per thread, so that every new thread has loaded the module and optimized the loop.
      for (const contender of contenders.slice(1)) await measureBatch(contender, threads, expectedText);
      advanceProgress(2 * options.spin.targetMs, `scaling: ${threads} thread(s), warm-up done`);
      for (let rep = 0; rep < options.reps; rep++) {
        for (const contender of rotate(contenders, rep))
          samples.get(contender.name)!.push(await measureBatch(contender, options.calls, expectedText));
        advanceProgress(blockRepetitionMs(threads, options), `scaling: ${threads} thread(s), rep ${rep + 1}/${options.reps} done`);
      }
    } finally {
      await Promise.all([runtime.close(), piscina.close()]);
    }
    const figures = contenders.map(({ name }) => summarizeContender(name, samples.get(name)!));
    const [piFigures, toolpool, control] = figures as [ContenderFigures, ContenderFigures, ContenderFigures];
    const speedup = piFigures.wall.median / toolpool.wall.median;
    const ideal = Math.min(threads, options.cores, options.calls);
    points.push({
      threads,
      ideal,
      contenders: figures,
      speedup,
      pairedSpeedups: summarize(piFigures.samples.map((s, index) => s.wallMs / toolpool.samples[index]!.wallMs)),
      efficiency: speedup / ideal,
      controlSpeedup: piFigures.wall.median / control.wall.median,
    });
    logStep(
      `scaling: ${threads} thread(s): ${speedup.toFixed(2)}× over pi (ideal ${ideal}), bare Piscina ${points.at(-1)!.controlSpeedup.toFixed(2)}×`,
    );
  }
  return { options, points };
}
