/**
 * toolpool benchmarks. `npm run bench -- [--quick] [--suite cpu|dispatch|all]`
 * prints a markdown report on stdout, progress on stderr, and writes the raw
 * figures to bench-results/latest.json.
 *
 * `--profile-dispatch <contender>` runs only the 64-in-flight loop of one
 * dispatch contender (toolpool-batch, toolpool-agent-tool, piscina) with the
 * main thread's CPU profiler on around the measured calls (not the start-up),
 * and writes bench-results/profiles/<contender>.cpuprofile; summarize it with
 * `node dist-bench/profile-summary.js <file> --calls 50000`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";

import { describeMachine } from "./lib/machine.js";
import { logStep } from "./lib/progress.js";
import { formatSummary } from "./lib/stats.js";
import { runCpuBatchSuite, type CpuBatchResult } from "./suites/cpu-batch.js";
import { runFaultRecoverySuite, type FaultRecoveryResult } from "./suites/fault-recovery.js";
import {
  createDispatchSetup,
  dispatchContenders,
  measureDispatch,
  runDispatchOverheadSuite,
  type DispatchOverheadOptions,
  type DispatchOverheadResult,
} from "./suites/dispatch-overhead.js";

const usage = `Usage: node dist-bench/main.js [--quick] [--suite cpu|dispatch|faults|all] [--profile-dispatch toolpool-batch|toolpool-agent-tool|piscina]`;

const profileTargets = {
  "toolpool-batch": dispatchContenders.batch,
  "toolpool-agent-tool": dispatchContenders.agentTool,
  piscina: dispatchContenders.piscina,
} as const;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      suite: { type: "string", default: "all" },
      "profile-dispatch": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  const suite = values.suite;
  if (suite !== "all" && suite !== "cpu" && suite !== "dispatch" && suite !== "faults") {
    throw new Error(`Expected --suite to be cpu, dispatch, faults or all, got ${JSON.stringify(suite)}\n${usage}`);
  }
  const machine = describeMachine();
  const threads = machine.cores;
  const quick = values.quick;

  const dispatchOptions: DispatchOverheadOptions = {
    threads,
    serialCalls: quick ? 500 : 2000,
    serialChunk: 100,
    inFlightCalls: quick ? 5000 : 20_000,
    concurrency: 64,
    warmups: 1,
    reps: quick ? 5 : 15,
  };

  const profileTarget = values["profile-dispatch"];
  if (profileTarget !== undefined) {
    await profileDispatch(profileTarget, dispatchOptions);
    return;
  }

  logStep(`${quick ? "quick" : "full"} run on ${machine.cores} cores (${machine.cpuModel}), Node ${machine.nodeVersion}`);
  const started = Date.now();
  const isSelected = (name: string) => suite === "all" || suite === name;
  const cpu = isSelected("cpu")
    ? await runCpuBatchSuite({ calls: 8, targetMs: 100, warmups: 1, reps: quick ? 5 : 15, threads })
    : undefined;
  const dispatch = isSelected("dispatch") ? await runDispatchOverheadSuite(dispatchOptions) : undefined;
  const faults = isSelected("faults") ? await runFaultRecoverySuite({ reps: quick ? 10 : 40, timeoutMs: 100 }) : undefined;

  const report = {
    date: new Date().toISOString(),
    mode: quick ? "quick" : "full",
    durationS: (Date.now() - started) / 1000,
    machine: { ...machine, loadAvg1mAtEnd: loadavg()[0] ?? 0 },
    cpuBatch: cpu,
    dispatchOverhead: dispatch,
    faultRecovery: faults,
  };
  const outDir = new URL("../bench-results/", import.meta.url);
  mkdirSync(outDir, { recursive: true });
  writeFileSync(new URL("latest.json", outDir), `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(renderMarkdown(report, cpu, dispatch, faults));
  logStep(`done in ${report.durationS.toFixed(1)} s; raw figures in bench-results/latest.json`);
}

/** Runs one contender's 64-in-flight loop for a CPU profile (after a warm-up). */
async function profileDispatch(target: string, options: DispatchOverheadOptions): Promise<void> {
  if (!(target in profileTargets)) {
    throw new Error(`Expected --profile-dispatch to be one of ${Object.keys(profileTargets).join(", ")}, got ${JSON.stringify(target)}`);
  }
  const name = profileTargets[target as keyof typeof profileTargets];
  const setup = createDispatchSetup(options.threads);
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

function renderMarkdown(
  report: { date: string; mode: string; durationS: number; machine: ReturnType<typeof describeMachine> & { loadAvg1mAtEnd: number } },
  cpu: CpuBatchResult | undefined,
  dispatch: DispatchOverheadResult | undefined,
  faults: FaultRecoveryResult | undefined,
): string {
  const m = report.machine;
  const lines: string[] = [
    `# toolpool bench (${report.mode}, ${report.date})`,
    "",
    `${m.cores} cores · ${m.cpuModel} · Node ${m.nodeVersion} · piscina ${m.piscinaVersion} · pi-agent-core ${m.piAgentCoreVersion} · ` +
      `load avg 1m ${m.loadAvg1mAtStart.toFixed(2)} → ${m.loadAvg1mAtEnd.toFixed(2)} · ${report.durationS.toFixed(0)} s · ` +
      `toolpool at ${m.gitCommit}${m.srcChanges.length === 0 ? "" : ` + uncommitted changes in ${m.srcChanges.length} src file(s)`}`,
    "",
    "Figures are `median [min–max]` over interleaved repetitions in one process.",
    "",
  ];
  if (cpu !== undefined) {
    const o = cpu.options;
    lines.push(
      `## 1. CPU-bound batch: ${o.calls} calls × ~${cpu.calibratedCallMs.toFixed(0)} ms (${cpu.iterations} iterations), pool ${o.threads} threads, ${o.reps} reps after ${o.warmups} warm-up`,
      "",
      "| contender | batch wall time, ms | event-loop delay p99, ms | event-loop delay max, ms | process CPU / wall | calls running at once | one call, ms |",
      "|---|---:|---:|---:|---:|---:|---:|",
      ...cpu.contenders.map(
        (c) =>
          `| ${c.name} | ${formatSummary(c.wall, 0)} | ${formatSummary(c.loopDelayP99, 1)} | ${formatSummary(c.loopDelayMax, 1)} | ` +
          `${formatSummary(c.cpuPerWall, 2)} | ${formatSummary(c.callConcurrency, 2)} | ${formatSummary(c.callMs, 0)} |`,
      ),
      "",
      `**Speedup** (pi median / toolpool median) = **${cpu.speedup.toFixed(2)}×** ` +
        `(paired per-rep ${formatSummary(cpu.pairedSpeedups, 2)}); ideal = min(${o.calls} calls, ${o.threads} cores) = ${cpu.ideal}; ` +
        `**efficiency ${(cpu.efficiency * 100).toFixed(0)}%**. Control: bare Piscina on the same runs ${cpu.controlSpeedup.toFixed(2)}×.`,
      "",
    );
  }
  if (dispatch !== undefined) {
    const o = dispatch.options;
    lines.push(
      `## 2. Per-call overhead, no-op tool, ${o.threads} threads, ${o.reps} reps after ${o.warmups} warm-up`,
      "",
      `| contender | one at a time (N=${o.serialCalls}, chunks of ${o.serialChunk} interleaved), µs/call | ` +
        `one at a time, p10 of chunks (fast placement), µs/call | ${o.concurrency} in flight (N=${o.inFlightCalls}), µs/call |`,
      "|---|---:|---:|---:|",
    );
    const names = [...new Set(dispatch.figures.map((f) => f.name))];
    for (const name of names) {
      const serial = dispatch.figures.find((f) => f.name === name && f.mode === "serial")!;
      const inFlight = dispatch.figures.find((f) => f.name === name && f.mode === "inFlight")!;
      const decimals = serial.summary.median < 1 ? 2 : 1;
      const fast = serial.chunkSummary?.p10.toFixed(decimals) ?? "–";
      lines.push(`| ${name} | ${formatSummary(serial.summary, decimals)} | ${fast} | ${formatSummary(inFlight.summary, decimals)} |`);
    }
    const p10 = (name: string): number => dispatch.figures.find((f) => f.name === name && f.mode === "serial")?.chunkSummary?.p10 ?? NaN;
    lines.push(
      "",
      `| ratio to bare Piscina | one at a time | one at a time, p10 of chunks | ${o.concurrency} in flight |`,
      "|---|---:|---:|---:|",
    );
    for (const contender of [dispatchContenders.agentTool, dispatchContenders.batch]) {
      const cell = (mode: "serial" | "inFlight"): string => {
        const ratio = dispatch.ratios.find((r) => r.mode === mode && r.contender === contender)!;
        return `${ratio.ratioOfMedians.toFixed(2)}× (paired ${formatSummary(ratio.paired, 2)})`;
      };
      const fastRatio = p10(contender) / p10(dispatchContenders.piscina);
      lines.push(`| ${contender} | ${cell("serial")} | ${fastRatio.toFixed(2)}× | ${cell("inFlight")} |`);
    }
    lines.push("");
  }
  if (faults !== undefined) {
    const f = (value: number) => value.toFixed(1);
    lines.push(
      `## 3. Fault recovery, pool of 1 thread, ${faults.options.reps} reps each`,
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
    );
  }
  return `${lines.join("\n")}\n`;
}

try {
  await main();
} catch (error) {
  process.exitCode = 1;
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
}
// Every pool is closed by now; if a handle still keeps the process alive, say which and leave anyway.
setTimeout(() => {
  process.stderr.write(`bench: process still alive 5 s after the end; active resources: ${process.getActiveResourcesInfo().join(", ")}\n`);
  process.exit(process.exitCode ?? 0);
}, 5000).unref();
