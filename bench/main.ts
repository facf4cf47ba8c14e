/**
 * toolpool benchmarks: `npm run bench -- [--quick] [--suite …]`, or
 * `toolpool bench […]` from a checkout.
 *
 * Suites (each measures its contenders side by side, interleaved, repeated):
 *   cpu       1. CPU-bound batches (8 and 32 calls) and 3. event-loop delay meanwhile
 *   dispatch  2. per-call overhead of no-op calls, one at a time and 64 in flight; batches of 64, each contender in its own process
 *   large     4. 10 MB text and binary results: copy vs transfer
 *   harness   5. many agent sessions at once over a generated corpus
 *   scaling   6. suite 1's batch on pools of 1..2×cores threads
 *   faults    recovery after a crash, an out-of-memory and a timeout
 *   fairness  a flood session and light sessions on one pool: FIFO vs sessions taking turns
 *   fleet     remote calls through Redis to `toolpool node`s, beside the local pool
 *   builtins  the built-in grep (three trees, a real one among them) and hash, beside ripgrep and sha256sum
 *   startup   cold start in fresh processes: import, and createRuntime + first batch vs bare Piscina
 *   pi16      with pi 1.6's rules: per call and validation beside pi 1.6.0's own (under a Node >= 22.19)
 *   liveview  serve's batches with the live view off, on and unwatched, on and watched
 *
 * Writes bench-results/latest.{json,md,svg} (and <mode>.{json,md,svg}),
 * prints the markdown report on stdout and progress on stderr.
 *
 * `--profile-dispatch <contender>` runs only the 64-in-flight loop of one
 * dispatch contender (toolpool-batch, toolpool-agent-tool, piscina) with the
 * main thread's CPU profiler on around the measured calls (not the start-up),
 * and writes bench-results/profiles/<contender>.cpuprofile; summarize it with
 * `node dist-bench/profile-summary.js <file> --calls 50000`.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";

import { describeMachine } from "./lib/machine.js";
import { loadPeers, type Peers } from "./lib/peers.js";
import { advanceProgress, logStep, startProgress, stopProgress } from "./lib/progress.js";
import { checkTargets, type BenchReport } from "./lib/report.js";
import { renderChartSvg } from "./lib/report-chart.js";
import { renderMarkdown } from "./lib/report-markdown.js";
import { calibrate, estimateCpuBatchMs, runCpuBatchSuite, type CpuBatchOptions, type SpinCalibration } from "./suites/cpu-batch.js";
import {
  createDispatchSetup,
  dispatchContenders,
  estimateDispatchMs,
  measureDispatch,
  runDispatchOverheadSuite,
  runPinnedSerialMeasurement,
  type DispatchOverheadOptions,
} from "./suites/dispatch-overhead.js";
import { estimateDispatchBatchesMs, runBatchChild, runDispatchBatchesSuite, type DispatchBatchesOptions } from "./suites/dispatch-batches.js";
import { estimateBuiltinsMs, runBuiltinsSuite, type BuiltinsOptions } from "./suites/builtins.js";
import { estimateFairnessMs, runFairnessSuite, type FairnessOptions } from "./suites/fairness.js";
import { estimateFaultRecoveryMs, runFaultRecoverySuite, type FaultRecoveryOptions } from "./suites/fault-recovery.js";
import { estimateFleetMs, runFleetSuite, type FleetOptions } from "./suites/fleet.js";
import { estimateHarnessLoadMs, runHarnessLoadSuite, type HarnessLoadOptions } from "./suites/harness-load.js";
import { estimateLiveViewMs, runLiveViewSuite, type LiveViewOptions } from "./suites/live-view.js";
import { estimateLargeResultsMs, runLargeResultsSuite, type LargeResultsOptions } from "./suites/large-results.js";
import { estimateScalingMs, runScalingSuite, scalingBatch, scalingThreadCounts, type ScalingOptions } from "./suites/scaling.js";
import { estimatePi16Ms, runPi16Suite, type Pi16Options } from "./suites/pi16.js";
import { estimateStartupMs, runStartupSuite, type StartupOptions } from "./suites/startup.js";

/** Bad flags: reported on one line, exit code 2 (as the toolpool CLI does). */
class BenchUsageError extends Error {}

const suiteNames = [
  "cpu",
  "dispatch",
  "large",
  "harness",
  "scaling",
  "faults",
  "fairness",
  "fleet",
  "builtins",
  "startup",
  "pi16",
  "liveview",
] as const;
type SuiteName = (typeof suiteNames)[number];

const usage = `Usage: node dist-bench/main.js [--quick] [--suite all|${suiteNames.join(",")}] [--threads N]
       node dist-bench/main.js --profile-dispatch toolpool-batch|toolpool-agent-tool|piscina

  --quick      the short run (a few minutes on 2 cores): 25 ms calls in suites 1 and 6, fewer calls and sessions
  --suite      a comma-separated list of suites (default all)
  --threads N  size the pools as for N cores instead of os.availableParallelism() (ideal speedups stay capped at the real cores)`;

const profileTargets = {
  "toolpool-batch": dispatchContenders.batch,
  "toolpool-agent-tool": dispatchContenders.agentTool,
  piscina: dispatchContenders.piscina,
} as const;

/** What each suite runs with, in quick and full mode. */
interface RunPlan {
  cpu: Omit<CpuBatchOptions, "spin">;
  spinMs: number;
  dispatch: DispatchOverheadOptions;
  dispatchBatches: DispatchBatchesOptions;
  large: LargeResultsOptions;
  harness: HarnessLoadOptions;
  scaling: Omit<ScalingOptions, "spin">;
  scalingCallMs: number;
  faults: FaultRecoveryOptions;
  fairness: Omit<FairnessOptions, "spin">;
  fairnessCallMs: number;
  fleet: Omit<FleetOptions, "spin">;
  builtins: BuiltinsOptions;
  startup: StartupOptions;
  pi16: Pi16Options;
  liveView: LiveViewOptions;
}

/** `cores`: what the pools are sized for (--threads); `machineCores`: what the ideal speedups are capped at. */
function planRun(isQuick: boolean, cores: number, machineCores: number): RunPlan {
  const spinMs = isQuick ? 25 : 100;
  const scaling = scalingBatch(cores, spinMs);
  return {
    spinMs,
    cpu: {
      batches: [
        { calls: 8, reps: isQuick ? 5 : 7 },
        { calls: 32, reps: 5 },
      ],
      warmups: 1,
      // A thread beyond the largest batch would only idle (and 5 pools of 64 threads cost memory and start-up).
      threads: Math.min(cores, 32),
      cores: machineCores,
    },
    dispatch: {
      threads: cores,
      serialCalls: isQuick ? 500 : 2000,
      serialChunk: 100,
      inFlightCalls: isQuick ? 5000 : 10_000,
      inFlightChunk: 1000,
      concurrency: 64,
      warmups: 1,
      reps: isQuick ? 5 : 10,
    },
    dispatchBatches: {
      threads: cores,
      batchCalls: 64,
      chunkBatches: 16,
      chunks: isQuick ? 10 : 30,
      warmupBatches: 300,
      reps: isQuick ? 5 : 9,
    },
    large: { warmups: isQuick ? 2 : 3, reps: isQuick ? 8 : 20 },
    harness: {
      sessions: isQuick ? 25 : 200,
      turns: 10,
      callsPerTurn: 4,
      corpus: { packages: 16, filesPerPackage: 16, linesPerFile: 120, seed: 42 },
      threads: cores,
      warmups: 1,
      warmupSessions: isQuick ? 10 : 25,
      reps: 5,
    },
    scaling: { threadCounts: scalingThreadCounts(cores), calls: scaling.calls, cores: Math.min(cores, machineCores), reps: 5 },
    scalingCallMs: scaling.callMs,
    faults: { reps: isQuick ? 5 : 20, timeoutMs: 100 },
    // The scenario is the same in quick mode (it is the figure asked for), with fewer repetitions.
    fairness: {
      threads: 2,
      floodCalls: 40,
      lightSessions: 4,
      lightCalls: 2,
      lightDelayMs: 10,
      reps: isQuick ? 3 : 7,
      dispatchCalls: isQuick ? 5_000 : 10_000,
      concurrency: 64,
      dispatchReps: isQuick ? 5 : 10,
    },
    fairnessCallMs: 50,
    fleet: {
      serialCalls: isQuick ? 300 : 1_000,
      inFlightCalls: isQuick ? 2_000 : 5_000,
      concurrency: 64,
      cpuReps: isQuick ? 3 : 7,
      lossReps: isQuick ? 2 : 3,
      lockMs: 2_000,
      stalledMs: 1_000,
    },
    // The trees are the same in quick mode (10,000 files, ~78 MiB; 2,000 small files and
    // six of 3.5 MiB; the installed packages): the target is stated for them.
    builtins: {
      tree: { files: 10_000, averageBytes: 8_000, seed: 13 },
      largeFileTree: { files: 2_000, averageBytes: 8_000, seed: 17, largeFiles: { count: 6, bytes: 3.5 * 2 ** 20 } },
      installedTree: true,
      threadCounts: [...new Set([1, cores])],
      warmups: 1,
      reps: isQuick ? 5 : 11,
      hashFileMiB: isQuick ? 64 : 256,
    },
    startup: { reps: isQuick ? 7 : 15, calls: 4, threadCounts: [2, 4] },
    pi16: { calls: isQuick ? 5_000 : 20_000, reps: isQuick ? 3 : 7 },
    liveView: { threads: cores, batches: isQuick ? 400 : 2000, callsPerBatch: 8, concurrency: 16, warmups: 1, reps: isQuick ? 5 : 9 },
  };
}

function parseSuites(value: string): Set<SuiteName> {
  if (value === "all") return new Set(suiteNames);
  const names = value.split(",").map((name) => name.trim());
  for (const name of names) {
    if (!(suiteNames as readonly string[]).includes(name)) {
      throw new BenchUsageError(`Expected --suite to be all or a comma-separated list of ${suiteNames.join(", ")}, got ${JSON.stringify(name)}`);
    }
  }
  return new Set(names as SuiteName[]);
}

async function main(): Promise<void> {
  // biome-ignore lint/suspicious/noImplicitAnyLet: typed by the parseArgs call that assigns it
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        quick: { type: "boolean", default: false },
        suite: { type: "string", default: "all" },
        threads: { type: "string" },
        "profile-dispatch": { type: "string" },
        // Internal: the dispatch suite's child pinned to one CPU (see runPinnedSerialMeasurement).
        "pinned-serial": { type: "string" },
        // Internal: one contender's process of the dispatch suite's batches (see runBatchChild).
        "batch-child": { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
      strict: true,
    }));
  } catch (error) {
    throw new BenchUsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  const suites = parseSuites(values.suite);
  const machine = describeMachine();
  const cores = values.threads === undefined ? machine.cores : Number(values.threads);
  if (!Number.isInteger(cores) || cores < 1)
    throw new BenchUsageError(`Expected --threads to be an integer >= 1, got ${JSON.stringify(values.threads)}`);
  const isQuick = values.quick;
  const plan = planRun(isQuick, cores, machine.cores);
  const peers = await loadPeers();

  const batchChild = values["batch-child"];
  if (batchChild !== undefined) {
    await runBatchChild(batchChild);
    return;
  }

  const pinnedSerial = values["pinned-serial"];
  if (pinnedSerial !== undefined) {
    const figures = await runPinnedSerialMeasurement(JSON.parse(pinnedSerial) as DispatchOverheadOptions, peers);
    process.stdout.write(JSON.stringify(figures));
    return;
  }

  const profileTarget = values["profile-dispatch"];
  if (profileTarget !== undefined) {
    await profileDispatch(profileTarget, plan.dispatch, peers);
    return;
  }

  logStep(
    `${isQuick ? "quick" : "full"} run, suites ${[...suites].join(", ")}, pools of ${cores} threads; ${machine.cores} cores (${machine.cpuModel}), Node ${machine.nodeVersion}`,
  );
  const started = performance.now();
  const poolPeers = (peers.tinypool === undefined ? 0 : 1) + (peers.workerpool === undefined ? 0 : 1);
  const calibrationMs = 16 * plan.spinMs;
  const estimates: Record<SuiteName, number> = {
    cpu: calibrationMs + estimateCpuBatchMs({ ...plan.cpu, spin: placeholderSpin(plan.spinMs) }, 3 + poolPeers),
    dispatch: estimateDispatchMs(plan.dispatch, 4 + poolPeers) + estimateDispatchBatchesMs(plan.dispatchBatches),
    large: estimateLargeResultsMs(plan.large),
    harness: estimateHarnessLoadMs(plan.harness),
    scaling:
      (plan.scalingCallMs === plan.spinMs ? 0 : 16 * plan.scalingCallMs) +
      estimateScalingMs({ ...plan.scaling, spin: placeholderSpin(plan.scalingCallMs) }),
    faults: estimateFaultRecoveryMs(plan.faults),
    fairness: 16 * plan.fairnessCallMs + estimateFairnessMs({ ...plan.fairness, spin: placeholderSpin(plan.fairnessCallMs) }),
    fleet: estimateFleetMs(plan.fleet),
    builtins: estimateBuiltinsMs(plan.builtins),
    startup: estimateStartupMs(plan.startup),
    pi16: estimatePi16Ms(plan.pi16),
    liveview: estimateLiveViewMs(plan.liveView),
  };
  startProgress([...suites].reduce((sum, name) => sum + estimates[name], 0));

  let spin: SpinCalibration | undefined;
  const spinFor = (targetMs: number): SpinCalibration => {
    if (spin?.targetMs === targetMs) return spin;
    const calibrated = calibrate(targetMs);
    advanceProgress(16 * targetMs, "calibrated the busy loop");
    spin ??= calibrated;
    return calibrated;
  };
  const report: Omit<BenchReport, "targets" | "durationS" | "machine"> = {
    date: new Date().toISOString(),
    mode: isQuick ? "quick" : "full",
    notes: [...peers.notes],
  };
  if (isQuick) {
    report.notes.push(`Quick run: CPU calls of ~${plan.spinMs} ms (the full run uses ~100 ms), fewer repetitions, calls and sessions.`);
  }
  try {
    if (suites.has("cpu")) report.cpuBatch = await runCpuBatchSuite({ ...plan.cpu, spin: spinFor(plan.spinMs) }, peers);
    if (suites.has("dispatch")) {
      report.dispatchOverhead = await runDispatchOverheadSuite(plan.dispatch, peers);
      report.dispatchBatches = await runDispatchBatchesSuite(plan.dispatchBatches);
    }
    if (suites.has("large")) report.largeResults = await runLargeResultsSuite(plan.large);
    if (suites.has("harness")) report.harnessLoad = await runHarnessLoadSuite(plan.harness);
    if (suites.has("scaling")) report.scaling = await runScalingSuite({ ...plan.scaling, spin: spinFor(plan.scalingCallMs) });
    if (suites.has("faults")) report.faultRecovery = await runFaultRecoverySuite(plan.faults);
    if (suites.has("fairness")) report.fairness = await runFairnessSuite({ ...plan.fairness, spin: spinFor(plan.fairnessCallMs) });
    if (suites.has("fleet")) report.fleet = await runFleetSuite({ ...plan.fleet, spin: spinFor(plan.spinMs) });
    if (suites.has("builtins")) {
      report.builtins = await runBuiltinsSuite(plan.builtins);
      report.notes.push(...report.builtins.skipped);
    }
    if (suites.has("startup")) report.startup = await runStartupSuite(plan.startup);
    if (suites.has("pi16")) {
      report.pi16 = runPi16Suite(plan.pi16);
      if ("skipped" in report.pi16) report.notes.push(report.pi16.skipped);
      advanceProgress(estimatePi16Ms(plan.pi16), "pi16 done");
    }
    if (suites.has("liveview")) report.liveView = await runLiveViewSuite(plan.liveView);
  } finally {
    stopProgress();
  }

  const withMachine = {
    ...report,
    durationS: (performance.now() - started) / 1000,
    machine: { ...machine, loadAvg1mAtEnd: loadavg()[0] ?? 0, peerVersions: peers.versions },
  };
  const full: BenchReport = { ...withMachine, targets: checkTargets(withMachine) };
  const chart = await renderChartSvg(full);
  if ("skipped" in chart) {
    full.notes.push(`No chart: ${chart.skipped}.`);
    logStep(`chart skipped: ${chart.skipped}`);
  }
  const markdown = renderMarkdown(full);
  const outDir = new URL("../bench-results/", import.meta.url);
  mkdirSync(outDir, { recursive: true });
  const written: string[] = [];
  for (const base of ["latest", full.mode]) {
    writeFileSync(new URL(`${base}.json`, outDir), `${JSON.stringify(full, null, 2)}\n`);
    writeFileSync(new URL(`${base}.md`, outDir), markdown);
    // A chart left from an earlier run would not match these figures.
    if ("svg" in chart) writeFileSync(new URL(`${base}.svg`, outDir), chart.svg);
    else rmSync(new URL(`${base}.svg`, outDir), { force: true });
    written.push(`${base}.{json,md${"svg" in chart ? ",svg" : ""}}`);
  }
  process.stdout.write(markdown);
  logStep(`done in ${full.durationS.toFixed(1)} s; wrote bench-results/${written.join(" and ")}`);
}

/** A stand-in calibration for estimates made before the real one. */
function placeholderSpin(targetMs: number): SpinCalibration {
  return { targetMs, iterations: 0, measuredMs: targetMs, expectedText: "" };
}

/** Runs one contender's 64-in-flight loop for a CPU profile (after a warm-up). */
async function profileDispatch(target: string, options: DispatchOverheadOptions, peers: Peers): Promise<void> {
  if (!(target in profileTargets)) {
    throw new BenchUsageError(`Expected --profile-dispatch to be one of ${Object.keys(profileTargets).join(", ")}, got ${JSON.stringify(target)}`);
  }
  const name = profileTargets[target as keyof typeof profileTargets];
  const setup = createDispatchSetup(options.threads, peers);
  try {
    const contender = setup.contenders.find((c) => c.name === name)!;
    await measureDispatch(contender, "inFlight", { ...options, inFlightCalls: 5000 });
    const profiled = { ...options, inFlightCalls: 50_000 };
    logStep(`profiling ${name}: ${profiled.inFlightCalls} calls, ${profiled.concurrency} in flight`);
    const session = new Session();
    session.connect();
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 100 });
    await session.post("Profiler.start");
    const us = await measureDispatch(contender, "inFlight", profiled);
    const { profile } = await session.post("Profiler.stop");
    session.disconnect();
    const outDir = new URL("../bench-results/profiles/", import.meta.url);
    mkdirSync(outDir, { recursive: true });
    const file = new URL(`${target}.cpuprofile`, outDir);
    writeFileSync(file, JSON.stringify(profile));
    process.stdout.write(`${name}: ${us.toFixed(1)} µs per call under the profiler; profile in ${file.pathname}\n`);
  } finally {
    await setup.close();
  }
}

try {
  await main();
} catch (error) {
  stopProgress();
  if (error instanceof BenchUsageError) {
    process.exitCode = 2;
    process.stderr.write(`bench: ${error.message} (see --help)\n`);
  } else {
    process.exitCode = 1;
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
}
// Every pool is closed by now; if a handle still keeps the process alive, say which and leave anyway.
setTimeout(() => {
  process.stderr.write(`bench: process still alive 5 s after the end; active resources: ${process.getActiveResourcesInfo().join(", ")}\n`);
  process.exit(process.exitCode ?? 0);
}, 5000).unref();
