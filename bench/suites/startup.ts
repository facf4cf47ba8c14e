/**
 * Cold start: what a fresh process pays before its first results.
 *
 * - Import: `import("toolpool")` against importing what it is built on
 *   (piscina, ajv and eventemitter3, together).
 * - First batch: `createRuntime` with one worker tool and its first
 *   `executeToolCalls` of a few no-op calls, against `new Piscina` and the
 *   same number of `run()`s of the same no-op module, at 2 and 4 threads.
 *
 * Every measurement is a fresh child process (dist-bench/startup-probe.js);
 * the contenders alternate within each repetition, in an order that rotates,
 * so that a slow spell of a shared machine falls on all of them.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

import { advanceProgress, logStep } from "../lib/progress.js";
import { median, summarize, type Summary } from "../lib/stats.js";

export interface StartupOptions {
  reps: number;
  /** Calls in the first batch. */
  calls: number;
  threadCounts: number[];
}

export interface StartupFigure {
  /** `import-toolpool`, `import-peers`, `batch-toolpool`, `batch-piscina`. */
  mode: string;
  threads?: number;
  /** ms of each rep. */
  ms: number[];
  summary: Summary;
}

export interface StartupRatio {
  what: "import" | "first batch";
  threads?: number;
  /** toolpool's median over the baseline's median. */
  ratioOfMedians: number;
  /** The median of the per-repetition ratios (both measured in the same repetition, one after the other). */
  pairedMedian: number;
  toolpoolMs: number;
  baselineMs: number;
}

export interface StartupResult {
  options: StartupOptions;
  figures: StartupFigure[];
  ratios: StartupRatio[];
}

const probe = fileURLToPath(new URL("../startup-probe.js", import.meta.url));
const probeMs = 400;

/** Expected duration, for the progress bar. */
export function estimateStartupMs(options: StartupOptions): number {
  return options.reps * (2 + 2 * options.threadCounts.length) * probeMs;
}

function runProbe(args: string[]): Promise<{ importMs: number; batchMs?: number }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [probe, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`startup probe ${args.join(" ")} failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as { importMs: number; batchMs?: number });
    });
  });
}

export async function runStartupSuite(options: StartupOptions): Promise<StartupResult> {
  const runs: { mode: string; threads?: number; args: string[]; ms: number[] }[] = [
    { mode: "import-toolpool", args: ["import-toolpool"], ms: [] },
    { mode: "import-peers", args: ["import-peers"], ms: [] },
  ];
  for (const threads of options.threadCounts) {
    for (const mode of ["batch-toolpool", "batch-piscina"])
      runs.push({ mode, threads, args: [mode, String(threads), String(options.calls)], ms: [] });
  }
  logStep(`startup: ${runs.length} measurements × ${options.reps}, each in a fresh process`);
  // One untimed round first: the file system cache then holds every module.
  for (const run of runs) await runProbe(run.args);
  for (let rep = 0; rep < options.reps; rep++) {
    for (let index = 0; index < runs.length; index++) {
      const run = runs[(index + rep) % runs.length]!;
      const figures = await runProbe(run.args);
      run.ms.push(run.mode.startsWith("batch") ? figures.batchMs! : figures.importMs);
    }
    advanceProgress(runs.length * probeMs, `startup: rep ${rep + 1} of ${options.reps}`);
  }
  const figures: StartupFigure[] = runs.map(({ mode, threads, ms }) => ({
    mode,
    ...(threads === undefined ? {} : { threads }),
    ms,
    summary: summarize(ms),
  }));
  const msOf = (mode: string, threads?: number) => runs.find((run) => run.mode === mode && run.threads === threads)!.ms;
  const ratio = (what: StartupRatio["what"], toolpool: number[], baseline: number[], threads?: number): StartupRatio => ({
    what,
    ...(threads === undefined ? {} : { threads }),
    ratioOfMedians: median(toolpool) / median(baseline),
    pairedMedian: median(toolpool.map((ms, rep) => ms / baseline[rep]!)),
    toolpoolMs: median(toolpool),
    baselineMs: median(baseline),
  });
  const ratios = [
    ratio("import", msOf("import-toolpool"), msOf("import-peers")),
    ...options.threadCounts.map((threads) => ratio("first batch", msOf("batch-toolpool", threads), msOf("batch-piscina", threads), threads)),
  ];
  return { options, figures, ratios };
}
