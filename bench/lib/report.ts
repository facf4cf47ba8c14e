/**
 * The report of one bench run: the raw figures of every suite that ran, the
 * machine, and the targets checked against the figures.
 */
import type { BuiltinsResult } from "../suites/builtins.js";
import type { Pi16SuiteResult } from "../suites/pi16.js";
import type { CpuBatchResult } from "../suites/cpu-batch.js";
import { cpuContenders } from "../suites/cpu-batch.js";
import { dispatchContenders, type DispatchOverheadResult } from "../suites/dispatch-overhead.js";
import { batchContenders, type DispatchBatchesResult } from "../suites/dispatch-batches.js";
import type { FaultRecoveryResult } from "../suites/fault-recovery.js";
import type { FairnessResult } from "../suites/fairness.js";
import type { FleetResult } from "../suites/fleet.js";
import { harnessContenders, type HarnessLoadResult } from "../suites/harness-load.js";
import { largeContenders, type LargeResultsResult } from "../suites/large-results.js";
import type { ScalingResult } from "../suites/scaling.js";
import { liveViewContenders, type LiveViewResult } from "../suites/live-view.js";
import type { StartupResult } from "../suites/startup.js";
import type { MachineInfo } from "./machine.js";

export interface BenchReport {
  date: string;
  mode: "quick" | "full";
  durationS: number;
  machine: MachineInfo & { loadAvg1mAtEnd: number; peerVersions: Record<string, string> };
  /** Things the reader should know: missing peers, shortened calls in quick mode. */
  notes: string[];
  targets: TargetCheck[];
  cpuBatch?: CpuBatchResult | undefined;
  dispatchOverhead?: DispatchOverheadResult | undefined;
  dispatchBatches?: DispatchBatchesResult | undefined;
  largeResults?: LargeResultsResult | undefined;
  harnessLoad?: HarnessLoadResult | undefined;
  scaling?: ScalingResult | undefined;
  faultRecovery?: FaultRecoveryResult | undefined;
  fairness?: FairnessResult | undefined;
  fleet?: FleetResult | undefined;
  builtins?: BuiltinsResult | undefined;
  pi16?: Pi16SuiteResult | undefined;
  startup?: StartupResult | undefined;
  liveView?: LiveViewResult | undefined;
}

/** Issue targets of the dispatch suite: toolpool ÷ bare Piscina per call. */
const dispatchTargets = { pinned: 1.25, inFlight: 1.15 } as const;

/** One of the targets, against this run's figure. */
export interface TargetCheck {
  target: string;
  /** The measured figure, in words (`1.93× = 97% of ideal 2`). */
  figure: string;
  isMet: boolean;
}

/** The targets, for the suites that ran. Bench figures, not test assertions. */
export function checkTargets(report: Omit<BenchReport, "targets">): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const fleet = report.fleet;
  if (fleet !== undefined && fleet.skipped === undefined) {
    const remoteP50 = fleet.roundTrip.find((row) => row.where === "remote")?.p50 ?? Number.NaN;
    checks.push({ target: "fleet: remote no-op round trip p50 ≤ 3 ms (loopback)", figure: `${remoteP50.toFixed(2)} ms`, isMet: remoteP50 <= 3 });
    const rate = fleet.throughput.find((row) => row.where === "remote")?.callsPerSecond.median ?? Number.NaN;
    checks.push({ target: "fleet: ≥ 1,500 calls/s, 64 in flight, one node", figure: `${rate.toFixed(0)} calls/s`, isMet: rate >= 1_500 });
    checks.push({
      target: "fleet: 8 × CPU batch on 2 nodes × 1 thread ≤ 1.08 × the local 2-thread pool",
      figure: `${fleet.cpuBatch.ratio.toFixed(3)}×`,
      isMet: fleet.cpuBatch.ratio <= 1.08,
    });
    const worst = Math.max(...fleet.nodeLoss.detectionMs);
    checks.push({
      target: `fleet: node loss noticed within lock + 2 × stall + 1 s (${fleet.nodeLoss.boundMs} ms)`,
      figure: `${worst.toFixed(0)} ms (worst of ${fleet.nodeLoss.detectionMs.length})`,
      isMet: worst <= fleet.nodeLoss.boundMs,
    });
  }
  for (const batch of report.cpuBatch?.batches ?? []) {
    const toolpool = batch.speedups.find((s) => s.name === cpuContenders.toolpool);
    if (toolpool === undefined) continue;
    checks.push({
      target: `speedup over pi ≥ 0.9 × min(calls, cores), ${batch.calls} calls`,
      figure: `${toolpool.ratioOfMedians.toFixed(2)}× ≥ ${(0.9 * batch.ideal).toFixed(2)}× (${(toolpool.efficiency * 100).toFixed(0)}% of ideal ${batch.ideal})`,
      isMet: toolpool.efficiency >= 0.9,
    });
  }
  const dispatch = report.dispatchOverhead;
  if (dispatch !== undefined) {
    const p10 = (name: string) => dispatch.figures.find((f) => f.name === name && f.mode === "serial")?.chunkSummary?.p10 ?? NaN;
    const serial = dispatch.ratios.find((r) => r.mode === "serial" && r.contender === dispatchContenders.batch);
    const pinned = "skipped" in dispatch.pinnedSerial ? undefined : dispatch.pinnedSerial;
    const pinnedRatio = pinned?.ratios.find((r) => r.contender === dispatchContenders.batch);
    const pinnedUs = (name: string) => pinned?.figures.find((f) => f.name === name)?.summary.median ?? NaN;
    if (pinnedRatio !== undefined) {
      // One at a time and unpinned, a call mostly waits for a CPU to wake up (~15 or ~90 µs by
      // thread placement, at random); pinned to one CPU, only the code on the call's path remains.
      checks.push({
        target: `per-call overhead ≤ ${dispatchTargets.pinned} × bare Piscina, one at a time (executeToolCalls, pinned to 1 CPU)`,
        figure:
          `${pinnedRatio.ratioOfMedians.toFixed(2)}× (${pinnedUs(dispatchContenders.batch).toFixed(1)} vs ${pinnedUs(dispatchContenders.piscina).toFixed(1)} µs; ` +
          `unpinned: median ratio ${serial?.ratioOfMedians.toFixed(2) ?? "–"}×, fast placement ${(p10(dispatchContenders.batch) / p10(dispatchContenders.piscina)).toFixed(2)}×)`,
        isMet: pinnedRatio.ratioOfMedians <= dispatchTargets.pinned,
      });
    } else if (serial !== undefined) {
      const fastRatio = p10(dispatchContenders.batch) / p10(dispatchContenders.piscina);
      checks.push({
        target: `per-call overhead ≤ ${dispatchTargets.pinned} × bare Piscina, one at a time (executeToolCalls, fast placement)`,
        figure: `${fastRatio.toFixed(2)}× (${p10(dispatchContenders.batch).toFixed(1)} vs ${p10(dispatchContenders.piscina).toFixed(1)} µs; all chunks: median ratio ${serial.ratioOfMedians.toFixed(2)}×)`,
        isMet: fastRatio <= dispatchTargets.pinned,
      });
    }
    const inFlight = dispatch.ratios.find((r) => r.mode === "inFlight" && r.contender === dispatchContenders.batch);
    const inFlightToDefaults = dispatch.ratiosToDefaults.find((r) => r.mode === "inFlight" && r.contender === dispatchContenders.batch);
    if (inFlight !== undefined) {
      checks.push({
        target: `per-call overhead ≤ ${dispatchTargets.inFlight} × bare Piscina at toolpool's settings, ${dispatch.options.concurrency} in flight (executeToolCalls)`,
        figure: `${inFlight.ratioOfMedians.toFixed(2)}× (paired median ${inFlight.paired.median.toFixed(2)}×; vs Piscina's defaults ${inFlightToDefaults?.ratioOfMedians.toFixed(2) ?? "–"}×)`,
        isMet: inFlight.ratioOfMedians <= dispatchTargets.inFlight,
      });
      checks.push({
        target: `moonshot: per-call overhead < 1.0 × bare Piscina, ${dispatch.options.concurrency} in flight (executeToolCalls)`,
        figure: `${inFlight.ratioOfMedians.toFixed(2)}×`,
        isMet: inFlight.ratioOfMedians < 1,
      });
    }
  }
  const batches = report.dispatchBatches;
  const batchToDefaults = batches?.ratiosToDefaults.find((r) => r.contender === batchContenders.batch);
  if (batches !== undefined && batchToDefaults !== undefined) {
    const us = (name: string) => batches.figures.find((f) => f.name === name)!.summary.median;
    checks.push({
      target: `per call ≤ ${dispatchTargets.inFlight} × bare Piscina at its defaults, batches of ${batches.options.batchCalls} (executeToolCalls; each in its own process)`,
      figure: `${batchToDefaults.ratioOfMedians.toFixed(2)}× (${us(batchContenders.batch).toFixed(1)} vs ${us(batchContenders.piscinaDefaults).toFixed(1)} µs; paired median ${batchToDefaults.paired.median.toFixed(2)}×)`,
      isMet: batchToDefaults.ratioOfMedians <= dispatchTargets.inFlight,
    });
  }
  const saturated = report.cpuBatch?.batches.at(-1);
  const toolpoolDelay = saturated?.contenders.find((c) => c.name === cpuContenders.toolpool);
  if (saturated !== undefined && toolpoolDelay !== undefined) {
    checks.push({
      target: `event-loop delay p99 ≤ 10 ms, pool saturated (${saturated.calls} calls)`,
      figure: `${toolpoolDelay.loopDelayP99.median.toFixed(1)} ms (worst rep ${toolpoolDelay.loopDelayP99.max.toFixed(1)} ms)`,
      isMet: toolpoolDelay.loopDelayP99.median <= 10,
    });
  }
  const harness = report.harnessLoad;
  const harnessToolpool = harness?.contenders.find((f) => f.name === harnessContenders.toolpool);
  if (harness !== undefined && harnessToolpool !== undefined) {
    const loopP99 = harnessToolpool.loopDelayP99.median;
    checks.push({
      target: "harness load ≥ 1.0 × pi in process (calls/s), event-loop delay p99 ≤ 2 ms",
      figure: `${harness.throughputRatio.toFixed(2)}× (paired ${harness.pairedThroughputRatios.median.toFixed(2)}×); p99 ${loopP99.toFixed(1)} ms`,
      isMet: harness.throughputRatio >= 1 && loopP99 <= 2,
    });
  }
  const binary = report.largeResults?.figures.find((f) => f.name === largeContenders.toolpoolBinary);
  if (binary !== undefined) {
    checks.push({
      target: "10 MB binary result crosses the thread boundary ≤ 5 ms",
      figure: `${binary.crossing.median.toFixed(2)} ms (whole call ${binary.call.median.toFixed(1)} ms)`,
      isMet: binary.crossing.median <= 5,
    });
  }
  const fairness = report.fairness;
  if (fairness !== undefined) {
    const [fifo, fair] = fairness.policies;
    checks.push({
      target: "fairness: light sessions' latency under a flood ≤ 0.4 × the flood's latency (fair queue)",
      figure: `${fair!.lightOverFlood.median.toFixed(2)}× (FIFO: ${fifo!.lightOverFlood.median.toFixed(2)}×)`,
      isMet: fair!.lightOverFlood.median <= 0.4,
    });
    checks.push({
      target: "fairness: makespan within 5% of FIFO",
      figure: `${fairness.makespanRatio.toFixed(3)}× (${fair!.makespanMs.median.toFixed(0)} vs ${fifo!.makespanMs.median.toFixed(0)} ms)`,
      isMet: fairness.makespanRatio <= 1.05,
    });
    checks.push({
      target: `fairness: per-call dispatch with the fair queue within 3% of FIFO (${fairness.options.concurrency} in flight)`,
      figure: `${fairness.dispatchRatio.toFixed(3)}× (${fair!.dispatchUs.median.toFixed(1)} vs ${fifo!.dispatchUs.median.toFixed(1)} µs; paired ${fairness.pairedDispatchRatios.median.toFixed(3)}×)`,
      isMet: fairness.dispatchRatio <= 1.03,
    });
  }
  for (const row of report.builtins?.grep ?? []) {
    if (row.targetRatio === undefined) continue;
    checks.push({
      target: `built-in grep ≤ ${row.targetRatio} × ripgrep, same tree, same threads (${row.name})`,
      figure: `${row.ratio.toFixed(2)}× (${row.toolpoolMs.median.toFixed(0)} vs ${row.nativeMs.median.toFixed(0)} ms)`,
      isMet: row.ratio <= row.targetRatio,
    });
  }
  for (const row of report.builtins?.hash ?? []) {
    if (row.targetRatio === undefined) continue;
    checks.push({
      target: `built-in hash ≤ ${row.targetRatio} × sha256sum (${row.name})`,
      figure: `${row.ratio.toFixed(2)}× (${row.toolpoolMs.median.toFixed(0)} vs ${row.nativeMs.median.toFixed(0)} ms)`,
      isMet: row.ratio <= row.targetRatio,
    });
  }
  for (const ratio of report.startup?.ratios ?? []) {
    const limit = ratio.what === "import" ? 1.5 : 1.3;
    checks.push({
      target:
        ratio.what === "import"
          ? `cold start: import("toolpool") ≤ ${limit} × importing piscina + ajv + eventemitter3`
          : `cold start: createRuntime + first batch ≤ ${limit} × bare Piscina's first batch, ${ratio.threads} threads`,
      figure: `${ratio.ratioOfMedians.toFixed(2)}× (${ratio.toolpoolMs.toFixed(1)} vs ${ratio.baselineMs.toFixed(1)} ms; paired median ${ratio.pairedMedian.toFixed(2)}×)`,
      isMet: ratio.ratioOfMedians <= limit,
    });
  }
  const liveView = report.liveView;
  if (liveView !== undefined) {
    const unwatched = liveView.ratios.find((row) => row.contender === liveViewContenders.unwatched)!;
    checks.push({
      target: "live view: serve's per-call time with the view on and no watcher within 2% of --no-ui",
      figure: `${unwatched.ratioOfMedians.toFixed(3)}× (paired ${unwatched.paired.median.toFixed(3)}×)`,
      isMet: unwatched.ratioOfMedians <= 1.02,
    });
  }
  return checks;
}
