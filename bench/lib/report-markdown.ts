/**
 * The markdown report: the targets first, then one table per suite. Every
 * figure is `median [min–max]` over interleaved repetitions in one process.
 */
import type { BuiltinsResult } from "../suites/builtins.js";
import { renderPi16Cost } from "../pi16-cost.js";
import { cpuContenders, type BatchFigures, type CpuBatchResult } from "../suites/cpu-batch.js";
import { dispatchContenders, type DispatchOverheadResult } from "../suites/dispatch-overhead.js";
import type { DispatchBatchesResult } from "../suites/dispatch-batches.js";
import type { FairnessResult } from "../suites/fairness.js";
import type { FaultRecoveryResult } from "../suites/fault-recovery.js";
import type { FleetResult } from "../suites/fleet.js";
import { harnessContenders, type HarnessLoadResult } from "../suites/harness-load.js";
import type { LargeResultsResult } from "../suites/large-results.js";
import type { ScalingResult } from "../suites/scaling.js";
import type { LiveViewResult } from "../suites/live-view.js";
import type { StartupResult } from "../suites/startup.js";
import type { BenchReport } from "./report.js";
import { formatSummary } from "./stats.js";

export function renderMarkdown(report: BenchReport): string {
  const m = report.machine;
  const peers = Object.entries(m.peerVersions)
    .map(([name, version]) => ` · ${name} ${version}`)
    .join("");
  const lines: string[] = [
    `# toolpool bench (${report.mode}, ${report.date})`,
    "",
    `${m.cores} cores (os.availableParallelism) · ${m.cpuModel} · ${m.totalMemGiB} GiB · Node ${m.nodeVersion} · ${m.platform} · ` +
      `piscina ${m.piscinaVersion}${peers} · pi-agent-core ${m.piAgentCoreVersion} · ` +
      `load avg 1m ${m.loadAvg1mAtStart.toFixed(2)} → ${m.loadAvg1mAtEnd.toFixed(2)} · ${report.durationS.toFixed(0)} s · ` +
      `toolpool at ${m.gitCommit}${m.srcChanges.length === 0 ? "" : ` + uncommitted changes in ${m.srcChanges.length} src file(s)`}`,
    "",
    "Figures are `median [min–max]` over interleaved repetitions in one process, warm-up excluded. " +
      "On a shared machine read the ratios (measured side by side) rather than the absolute times.",
    "",
    ...report.notes.map((note) => `> ${note}`),
    ...(report.notes.length > 0 ? [""] : []),
  ];
  if (report.targets.length > 0) {
    lines.push("## Targets", "", "| target | this run | met |", "|---|---|:---:|");
    for (const check of report.targets) lines.push(`| ${check.target} | ${check.figure} | ${check.isMet ? "yes" : "**no**"} |`);
    lines.push("");
  }
  if (report.cpuBatch !== undefined) lines.push(...renderCpuBatch(report.cpuBatch), ...renderResponsiveness(report.cpuBatch));
  if (report.dispatchOverhead !== undefined) lines.push(...renderDispatch(report.dispatchOverhead));
  if (report.dispatchBatches !== undefined) lines.push(...renderDispatchBatches(report.dispatchBatches));
  if (report.fleet !== undefined) lines.push(...renderFleet(report.fleet));
  if (report.largeResults !== undefined) lines.push(...renderLargeResults(report.largeResults));
  if (report.harnessLoad !== undefined) lines.push(...renderHarnessLoad(report.harnessLoad));
  if (report.scaling !== undefined) lines.push(...renderScaling(report.scaling));
  if (report.faultRecovery !== undefined) lines.push(...renderFaults(report.faultRecovery));
  if (report.fairness !== undefined) lines.push(...renderFairness(report.fairness));
  if (report.builtins !== undefined) lines.push(...renderBuiltins(report.builtins));
  if (report.pi16 !== undefined && !("skipped" in report.pi16)) lines.push(...renderPi16Cost(report.pi16));
  if (report.startup !== undefined) lines.push(...renderStartup(report.startup));
  if (report.liveView !== undefined) lines.push(...renderLiveView(report.liveView));
  return `${lines.join("\n")}\n`;
}

function renderCpuBatch(cpu: CpuBatchResult): string[] {
  const o = cpu.options;
  const lines = [
    `## 1. CPU-bound batches: calls of ~${o.spin.measuredMs.toFixed(0)} ms pure JS (${o.spin.iterations} iterations), pools of ${o.threads} threads`,
    "",
    "Speedup = pi's batch time ÷ the contender's (medians; paired = per repetition). Efficiency = speedup ÷ ideal, ideal = min(calls, cores).",
    "",
  ];
  for (const batch of cpu.batches) {
    lines.push(
      `### ${batch.calls} calls, ${batch.reps} reps (ideal ${batch.ideal}×)`,
      "",
      "| contender | batch wall time, ms | speedup over pi | paired speedup | efficiency | process CPU / wall | calls running at once |",
      "|---|---:|---:|---:|---:|---:|---:|",
    );
    for (const c of batch.contenders) {
      const speedup = batch.speedups.find((s) => s.name === c.name);
      const cells =
        speedup === undefined
          ? ["1.00× (baseline)", "–", `${((1 / batch.ideal) * 100).toFixed(0)}%`]
          : [`**${speedup.ratioOfMedians.toFixed(2)}×**`, formatSummary(speedup.paired, 2), `${(speedup.efficiency * 100).toFixed(0)}%`];
      lines.push(
        `| ${c.name} | ${formatSummary(c.wall, 0)} | ${cells.join(" | ")} | ${formatSummary(c.cpuPerWall, 2)} | ${formatSummary(c.callConcurrency, 2)} |`,
      );
    }
    lines.push("");
  }
  return lines;
}

function renderResponsiveness(cpu: CpuBatchResult): string[] {
  const header = cpu.batches.map((b) => `${b.calls} calls: p50 / p99 / max`).join(" | ");
  const lines = [
    "## 3. Main-thread responsiveness while suite 1 runs",
    "",
    "Event-loop delay (`monitorEventLoopDelay`, 1 ms resolution) over each batch, in ms; median over the reps, worst rep's max. " +
      "pi's loop runs the tools on the main thread, so its timers wait for the whole batch.",
    "",
    `| contender | ${header} |`,
    `|---|${cpu.batches.map(() => "---:").join("|")}|`,
  ];
  const names = cpu.batches[0]?.contenders.map((c) => c.name) ?? [];
  for (const name of names) {
    const cells = cpu.batches.map((batch: BatchFigures) => {
      const c = batch.contenders.find((x) => x.name === name)!;
      return `${c.loopDelayP50.median.toFixed(1)} / ${c.loopDelayP99.median.toFixed(1)} / ${c.loopDelayMax.max.toFixed(1)}`;
    });
    lines.push(`| ${name} | ${cells.join(" | ")} |`);
  }
  lines.push("");
  return lines;
}

function renderDispatch(dispatch: DispatchOverheadResult): string[] {
  const o = dispatch.options;
  const pinned = "skipped" in dispatch.pinnedSerial ? undefined : dispatch.pinnedSerial;
  const lines = [
    `## 2. Dispatch overhead: no-op calls, pools of ${o.threads} threads, ${o.reps} reps after ${o.warmups} warm-up`,
    "",
    "One at a time, a call mostly waits for the worker thread to wake up: on a VM that takes ~15 or ~90 µs depending on where the " +
      "scheduler placed the pool's threads, at random and for seconds at a time. So the pools are made anew every repetition, the " +
      "contenders take turns every 100 calls, the p10 of those chunks shows the fast placement, and the same measurement runs again " +
      `in a child process pinned to one CPU (\`taskset\`), where no call waits for another CPU: that column compares the code on the call's path, and the target is checked on it.` +
      (pinned === undefined ? ` (No pinned run here: ${(dispatch.pinnedSerial as { skipped: string }).skipped}.)` : ""),
    "",
    `| contender | one at a time (N=${o.serialCalls}, chunks of ${o.serialChunk} interleaved), µs/call | ` +
      `one at a time, p10 of chunks (fast placement), µs/call | one at a time, pinned to 1 CPU, µs/call | ${o.concurrency} in flight (N=${o.inFlightCalls}, chunks of ${o.inFlightChunk} interleaved), µs/call |`,
    "|---|---:|---:|---:|---:|",
  ];
  const names = [...new Set(dispatch.figures.map((f) => f.name))];
  for (const name of names) {
    const serial = dispatch.figures.find((f) => f.name === name && f.mode === "serial")!;
    const inFlight = dispatch.figures.find((f) => f.name === name && f.mode === "inFlight")!;
    const decimals = serial.summary.median < 1 ? 2 : 1;
    const fast = serial.chunkSummary?.p10.toFixed(decimals) ?? "–";
    const pinnedFigure = pinned?.figures.find((f) => f.name === name);
    const pinnedCell = pinnedFigure === undefined ? "–" : formatSummary(pinnedFigure.summary, decimals);
    lines.push(`| ${name} | ${formatSummary(serial.summary, decimals)} | ${fast} | ${pinnedCell} | ${formatSummary(inFlight.summary, decimals)} |`);
  }
  const p10 = (name: string): number => dispatch.figures.find((f) => f.name === name && f.mode === "serial")?.chunkSummary?.p10 ?? NaN;
  lines.push(
    "",
    `| ratio to bare Piscina (targets: ≤ 1.25× one at a time, pinned; ≤ 1.15× in flight) | one at a time | one at a time, p10 of chunks | one at a time, pinned to 1 CPU | ${o.concurrency} in flight |`,
    "|---|---:|---:|---:|---:|",
  );
  for (const name of names) {
    if (name === dispatchContenders.piscina || name === dispatchContenders.piscinaDefaults || name === dispatchContenders.inProcess) continue;
    const cell = (mode: "serial" | "inFlight"): string => {
      const ratio = dispatch.ratios.find((r) => r.mode === mode && r.contender === name);
      return ratio === undefined ? "–" : `${ratio.ratioOfMedians.toFixed(2)}× (paired ${formatSummary(ratio.paired, 2)})`;
    };
    const pinnedRatio = pinned?.ratios.find((r) => r.contender === name);
    const pinnedCell = pinnedRatio === undefined ? "–" : `${pinnedRatio.ratioOfMedians.toFixed(2)}× (paired ${formatSummary(pinnedRatio.paired, 2)})`;
    const isOurs = name === dispatchContenders.batch || name === dispatchContenders.agentTool;
    const label = isOurs ? `**${name}**` : name;
    lines.push(
      `| ${label} | ${cell("serial")} | ${(p10(name) / p10(dispatchContenders.piscina)).toFixed(2)}× | ${pinnedCell} | ${cell("inFlight")} |`,
    );
  }
  lines.push(
    "",
    "Bare Piscina at toolpool's settings: `concurrentTasksPerWorker: 1`, `stricterFIFO: true`, `recordTiming: false`, toolpool's " +
      "`idleTimeout`; toolpool's own task queue and load balancer count as its overhead. At its defaults: only the thread counts set " +
      "(`recordTiming` on, Piscina's default).",
    "",
    `| ratio to bare Piscina at its defaults | one at a time | ${o.concurrency} in flight |`,
    "|---|---:|---:|",
  );
  for (const name of names) {
    if (name === dispatchContenders.piscinaDefaults || name === dispatchContenders.inProcess) continue;
    const cell = (mode: "serial" | "inFlight"): string => {
      const ratio = dispatch.ratiosToDefaults.find((r) => r.mode === mode && r.contender === name);
      return ratio === undefined ? "–" : `${ratio.ratioOfMedians.toFixed(2)}× (paired ${formatSummary(ratio.paired, 2)})`;
    };
    lines.push(`| ${name} | ${cell("serial")} | ${cell("inFlight")} |`);
  }
  lines.push("");
  return lines;
}

function renderDispatchBatches(batches: DispatchBatchesResult): string[] {
  const o = batches.options;
  const lines = [
    `### 2b. Batches of ${o.batchCalls} no-op calls, each contender in a process of its own, pools of ${o.threads} threads`,
    "",
    `${o.reps} reps of ${o.chunks} turns of ${o.chunkBatches} batches per contender, after ${o.warmupBatches} warm-up batches; the processes ` +
      "live side by side and take turns, so each pays for its own garbage and runs its own compiled code while the machine's drift falls on all alike.",
    "",
    "| contender | µs/call | ratio to bare Piscina at its defaults | ratio to bare Piscina at toolpool's settings |",
    "|---|---:|---:|---:|",
  ];
  for (const figure of batches.figures) {
    const cell = (ratios: DispatchBatchesResult["ratiosToDefaults"]): string => {
      const ratio = ratios.find((r) => r.contender === figure.name);
      return ratio === undefined ? "–" : `${ratio.ratioOfMedians.toFixed(2)}× (paired ${formatSummary(ratio.paired, 2)})`;
    };
    lines.push(`| ${figure.name} | ${formatSummary(figure.summary, 1)} | ${cell(batches.ratiosToDefaults)} | ${cell(batches.ratiosToSettings)} |`);
  }
  lines.push("");
  return lines;
}

function renderLargeResults(large: LargeResultsResult): string[] {
  const lines = [
    `## 4. Large results: ${(large.bytes / 2 ** 20).toFixed(0)} MiB from a worker, ${large.options.reps} reps after ${large.options.warmups} warm-up`,
    "",
    "Crossing = from the tool's last instruction in the worker (timestamp right before `return`) to the result in the caller's hands, " +
      "including toolpool's result checks; whole call = from the call to the result.",
    "",
    "| contender | payload | crosses by | crossing, ms | whole call, ms |",
    "|---|---|---|---:|---:|",
  ];
  for (const f of large.figures) {
    lines.push(`| ${f.name} | ${f.payload} | ${f.mode} | ${formatSummary(f.crossing, 2)} | ${formatSummary(f.call, 1)} |`);
  }
  lines.push("");
  return lines;
}

function renderHarnessLoad(harness: HarnessLoadResult): string[] {
  const o = harness.options;
  const weights = Object.entries(harness.inlineCallMs)
    .map(([name, ms]) => `${name} ${ms.toFixed(2)} ms`)
    .join(", ");
  const lines = [
    `## 5. Harness load: ${o.sessions} sessions × ${o.turns} turns × ${o.callsPerTurn} mixed calls = ${harness.callsPerRun} calls per run, pools of ${o.threads} threads, ${o.reps} reps after ${o.warmups} warm-up`,
    "",
    `Built-in tools over a generated corpus of ${harness.corpus.files} files (${(harness.corpus.bytes / 2 ** 20).toFixed(1)} MiB, seed ${o.corpus.seed}); ` +
      `one call inline weighs ${weights} (mean). All sessions start at once. Fairness = slowest session ÷ fastest. ` +
      "RSS is the whole process, worker threads included.",
    "",
    "| contender | calls/s | batch latency p50, ms | batch latency p99, ms | fairness | peak RSS, MiB | RSS growth, MiB | event-loop delay p99, ms |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const c of harness.contenders) {
    const name = c.name === harnessContenders.toolpool ? `**${c.name}**` : c.name;
    lines.push(
      `| ${name} | ${formatSummary(c.callsPerSecond, 0)} | ${formatSummary(c.batchP50, 1)} | ${formatSummary(c.batchP99, 1)} | ` +
        `${formatSummary(c.fairness, 2)} | ${formatSummary(c.peakRssMiB, 0)} | ${formatSummary(c.rssGrowthMiB, 0)} | ${formatSummary(c.loopDelayP99, 1)} |`,
    );
  }
  const control = harness.contenders.find((c) => c.name === harnessContenders.piscina);
  const ours = harness.contenders.find((c) => c.name === harnessContenders.toolpool)!;
  lines.push(
    "",
    `toolpool ÷ pi in process, calls/s: **${harness.throughputRatio.toFixed(2)}×** (paired ${formatSummary(harness.pairedThroughputRatios, 2)})` +
      (control === undefined ? "" : `; toolpool ÷ bare Piscina: ${(ours.callsPerSecond.median / control.callsPerSecond.median).toFixed(2)}×`) +
      ".",
    "",
    `Where the CPU goes (medians): a run can go no faster than ${harness.cores} cores ÷ the CPU a call takes on all threads, nor than ` +
      "1 ÷ the main thread's busy time per call (its event loop's active time, which holds all of pi's in-process work). " +
      "By thread (Linux's per-thread CPU times, 10 ms ticks): the main thread, the pool's threads (the busiest others) and the rest " +
      "(V8's helpers for garbage collection and compilation, libuv's).",
    "",
    "| contender | CPU per call, all threads, µs | main thread busy per call, µs | CPU per call by thread: main / pool / other, µs | ceiling: cores ÷ CPU, calls/s | ceiling: 1 ÷ main, calls/s | calls/s reached |",
    "|---|---:|---:|---:|---:|---:|---:|",
  );
  for (const c of harness.contenders) {
    const cpu = c.cpuUsPerCall.median;
    const main = c.mainUsPerCall.median;
    lines.push(
      `| ${c.name} | ${cpu.toFixed(0)} | ${main.toFixed(0)} | ${c.threadUsPerCall === undefined ? "–" : [c.threadUsPerCall.main, c.threadUsPerCall.pool, c.threadUsPerCall.other].map((t) => t.median.toFixed(0)).join(" / ")} | ${((harness.cores * 1e6) / cpu).toFixed(0)} | ${(1e6 / main).toFixed(0)} | ${c.callsPerSecond.median.toFixed(0)} |`,
    );
  }
  lines.push("");
  return lines;
}

function renderFairness(fairness: FairnessResult): string[] {
  const o = fairness.options;
  const lines = [
    `## Fairness: a flood of ${o.floodCalls} calls × ~${o.callMs.toFixed(0)} ms, then ${o.lightSessions} light sessions × ${o.lightCalls} calls ${o.lightDelayMs} ms later, ${o.threads} threads, ${o.reps} reps`,
    "",
    "Batch latency from each session's own start; makespan from the flood's start to the last batch's end. " +
      `Dispatch: single-call no-op batches, ${o.concurrency} in flight, each batch a session of its own.`,
    "",
    "| queue | flood latency, ms | light latency (mean), ms | slowest light, ms | light ÷ flood | makespan, ms | dispatch, µs/call |",
    "|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const p of fairness.policies) {
    lines.push(
      `| ${p.policy === "fair" ? "**fair** (sessions take turns)" : "FIFO"} | ${formatSummary(p.floodLatencyMs, 0)} | ${formatSummary(p.lightLatencyMs, 0)} | ` +
        `${formatSummary(p.slowestLightMs, 0)} | ${formatSummary(p.lightOverFlood, 2)} | ${formatSummary(p.makespanMs, 0)} | ${formatSummary(p.dispatchUs, 1)} |`,
    );
  }
  lines.push(
    "",
    `fair ÷ FIFO: makespan **${fairness.makespanRatio.toFixed(3)}×**, dispatch **${fairness.dispatchRatio.toFixed(3)}×** (paired ${formatSummary(fairness.pairedDispatchRatios, 3)}).`,
    "",
  );
  return lines;
}

function renderScaling(scaling: ScalingResult): string[] {
  const o = scaling.options;
  const lines = [
    `## 6. Scaling: ${o.calls} calls × ~${o.spin.measuredMs.toFixed(0)} ms on pools of 1..${Math.max(...o.threadCounts)} threads (${o.cores} cores), ${o.reps} reps per point`,
    "",
    "Each thread count is a block of its own: pi in process, toolpool and bare Piscina interleaved. Ideal = min(threads, cores, calls).",
    "",
    "| threads | ideal | toolpool batch, ms | toolpool speedup over pi | paired | efficiency | bare Piscina speedup |",
    "|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const point of scaling.points) {
    const toolpool = point.contenders.find((c) => c.name === cpuContenders.toolpool)!;
    lines.push(
      `| ${point.threads} | ${point.ideal} | ${formatSummary(toolpool.wall, 0)} | **${point.speedup.toFixed(2)}×** | ` +
        `${formatSummary(point.pairedSpeedups, 2)} | ${(point.efficiency * 100).toFixed(0)}% | ${point.controlSpeedup.toFixed(2)}× |`,
    );
  }
  lines.push("");
  return lines;
}

function renderFaults(faults: FaultRecoveryResult): string[] {
  const f = (value: number) => value.toFixed(1);
  return [
    `## Fault recovery: pool of 1 thread, ${faults.options.reps} reps each`,
    "",
    "From the faulty call's result to the next healthy result on the same pool, whose only worker was lost.",
    "",
    "| fault | code | recovery p50, ms | recovery p99, ms | min–max, ms |",
    "|---|---|---:|---:|---:|",
    ...faults.figures.map(
      (figure) =>
        `| ${figure.fault} | ${figure.code} | ${f(figure.summary.median)} | ${f(figure.summary.p99)} | ${f(figure.summary.min)}–${f(figure.summary.max)} |`,
    ),
    "",
    `A runaway call (timeoutMs ${faults.options.timeoutMs}) ended ${f(faults.timeoutOvershoot.median)} ms past its limit at p50, ` +
      `${f(faults.timeoutOvershoot.p99)} ms at p99.`,
    "",
  ];
}

function renderStartup(startup: StartupResult): string[] {
  const o = startup.options;
  const label = (mode: string, threads?: number): string =>
    ({
      "import-toolpool": 'import("toolpool")',
      "import-peers": "import of piscina + ajv + eventemitter3",
      "batch-toolpool": `createRuntime + first batch of ${o.calls} no-op calls, ${threads} threads`,
      "batch-piscina": `new Piscina + ${o.calls} no-op run()s, ${threads} threads`,
    })[mode] ?? mode;
  return [
    `## Cold start: a fresh process per measurement, ${o.reps} reps each, interleaved`,
    "",
    "| measure | ms |",
    "|---|---:|",
    ...startup.figures.map((figure) => `| ${label(figure.mode, figure.threads)} | ${formatSummary(figure.summary, 1)} |`),
    "",
    "| toolpool / baseline | ratio of medians | paired median |",
    "|---|---:|---:|",
    ...startup.ratios.map(
      (ratio) =>
        `| ${ratio.what}${ratio.threads === undefined ? "" : `, ${ratio.threads} threads`} | ${ratio.ratioOfMedians.toFixed(2)}× (${ratio.toolpoolMs.toFixed(1)} vs ${ratio.baselineMs.toFixed(1)} ms) | ${ratio.pairedMedian.toFixed(2)}× |`,
    ),
    "",
  ];
}

function renderFleet(result: FleetResult): string[] {
  const lines = ["## Fleet: remote calls through Redis (loopback), beside the local pool", ""];
  if (result.skipped !== undefined) return [...lines, `Skipped: ${result.skipped}.`, ""];
  const o = result.options;
  lines.push(
    `One node (2 threads, ${o.concurrency} calls taken at once) for the no-op figures; 2 nodes × 1 thread for the CPU batch; the local pool has 2 threads.`,
    "",
    "| measure | local pool | fleet | fleet / local |",
    "|---|---|---|---|",
  );
  const local = result.roundTrip.find((row) => row.where === "local")!;
  const remote = result.roundTrip.find((row) => row.where === "remote")!;
  lines.push(
    `| no-op round trip, one at a time: p50 / p90 / p99 (ms) | ${local.p50.toFixed(3)} / ${local.p90.toFixed(3)} / ${local.p99.toFixed(3)} | ${remote.p50.toFixed(2)} / ${remote.p90.toFixed(2)} / ${remote.p99.toFixed(2)} | ${(remote.p50 / local.p50).toFixed(1)}× |`,
  );
  const rate = (where: string) => result.throughput.find((row) => row.where === where)!.callsPerSecond;
  lines.push(
    `| no-op calls/s, ${o.concurrency} in flight | ${formatSummary(rate("local"), 0)} | ${formatSummary(rate("remote"), 0)} | ${(rate("remote").median / rate("local").median).toFixed(3)}× |`,
  );
  lines.push(
    `| 8 × ${o.spinMs} ms CPU batch (ms) | ${formatSummary(result.cpuBatch.localMs, 0)} | ${formatSummary(result.cpuBatch.remoteMs, 0)} | ${result.cpuBatch.ratio.toFixed(3)}× |`,
  );
  lines.push(
    "",
    `Node loss (SIGKILL of the node running a call → \`TP_ERR_NODE_LOST\`), lock ${o.lockMs} ms / stall ${o.stalledMs} ms: ${result.nodeLoss.detectionMs.map((ms) => ms.toFixed(0)).join(", ")} ms (bound ${result.nodeLoss.boundMs} ms).`,
    "",
    "| Redis work per remote call | commands | Redis CPU (µs) |",
    "|---|---|---|",
    ...result.redisPerCall.map(
      (row) =>
        `| ${row.mode === "inFlight" ? `${o.concurrency} in flight` : "one at a time"} | ${row.commands.toFixed(1)} | ${row.redisCpuUs.toFixed(0)} |`,
    ),
    "",
  );
  return lines;
}

function renderBuiltins(result: BuiltinsResult): string[] {
  const o = result.options;
  const lines = [
    `## Built-in tools beside native ones: ${o.reps} reps after ${o.warmups} warm-up`,
    "",
    "toolpool: one call through `executeToolCalls` on a warm pool of N threads; native: the process, its start included " +
      "(`rg -j N --hidden --no-require-git -g '!node_modules/' --max-filesize 4M`: grep's rules; `sha256sum`). " +
      "Each row's two sides run back to back, order alternating; both must find the same number of matching lines.",
    "",
  ];
  for (const tree of result.trees) {
    lines.push(`- tree **${tree.label}** (${tree.what}): ${tree.files} files searched, ${(tree.bytes / 2 ** 20).toFixed(0)} MiB`);
  }
  if (result.trees.length > 0) lines.push("");
  for (const note of result.skipped) lines.push(`> ${note}`, "");
  const rows = [...result.grep, ...result.hash];
  if (rows.length === 0) return lines;
  lines.push("| measure | threads | matches | toolpool, ms | native, ms | toolpool / native |", "|---|---:|---:|---:|---:|---:|");
  for (const row of rows) {
    lines.push(
      `| ${row.name} | ${row.threads} | ${row.matches ?? ""} | ${formatSummary(row.toolpoolMs, 0)} | ${formatSummary(row.nativeMs, 0)} | ${row.ratio.toFixed(2)}× |`,
    );
  }
  lines.push("");
  return lines;
}

function renderLiveView(liveView: LiveViewResult): string[] {
  const o = liveView.options;
  const lines = [
    `## Live view: serve's batches of ${o.callsPerBatch} no-op calls over HTTP, ${o.concurrency} in flight, ${o.batches} batches, pools of ${o.threads} threads, ${o.reps} reps`,
    "",
    "µs per call (batch wall time ÷ calls). Ratio = the contender ÷ `--no-ui` (medians; paired = per repetition).",
    "",
    "| contender | µs per call | ÷ --no-ui | paired |",
    "|---|---|---|---|",
  ];
  for (const figure of liveView.figures) {
    const ratio = liveView.ratios.find((row) => row.contender === figure.name);
    lines.push(
      `| ${figure.name} | ${formatSummary(figure.summary, 1)} | ${ratio === undefined ? "1" : `${ratio.ratioOfMedians.toFixed(3)}×`} | ${ratio === undefined ? "" : formatSummary(ratio.paired, 3)} |`,
    );
  }
  lines.push("");
  return lines;
}
