/**
 * What caps cost a call: the same no-op batch of one through
 * `executeToolCalls` on a runtime with no cap and on one whose caps are
 * never reached (the tool's, the session's and the batch's far above the
 * calls in flight), side by side in one process.
 *
 *   node dist-bench/cap-cost.js [--calls N] [--reps N] [--json]
 *
 * Worker tools (1 thread per runtime) and inline tools (a capped inline
 * call's execute runs inside an `AsyncLocalStorage` context, so that its
 * nested calls find it; on Node 20 and 22 that storage costs every promise
 * of the process while it is on, so each contender starts after a pause in
 * which it goes off), one at a time and 64 in flight. The contenders take
 * turns repetition by repetition; each repetition's capped time is divided
 * by the uncapped time of the same repetition (paired), and the median of
 * those ratios is the figure.
 */
import { parseArgs } from "node:util";

import { createRuntime, workerTool, type AgentTool, type ExecuteOptions, type Runtime, type RuntimeOptions } from "toolpool";

import { noopParameters, noopResult } from "./lib/constants.js";
import { runInFlight, runSerial } from "./lib/run-loop.js";
import { median, summarize, type Summary } from "./lib/stats.js";

export interface CapCostRow {
  tool: "worker" | "inline";
  mode: "serial" | "inFlight";
  uncapped: Summary;
  capped: Summary;
  /** Median over repetitions of capped ÷ uncapped µs per call, the two measured back to back. */
  ratio: number;
  /** The same for CPU time (every thread of the process, user and system): less shaken by other processes on a busy machine. */
  cpuRatio: number;
}

export interface CapCostResult {
  node: string;
  calls: number;
  reps: number;
  rows: CapCostRow[];
}

const inFlight = 64;
/** Longer than capped inline calls' context storage takes to go off once they stop (see src/coordinator/call-caps.ts). */
const storageOffMs = 300;
/** Never reached: above the calls in flight. */
const neverReached = 10_000;

function runtimeOf(kind: CapCostRow["tool"], caps: Partial<RuntimeOptions>): Runtime {
  const inline: AgentTool = {
    name: "noop",
    label: "noop",
    description: "Returns a constant",
    parameters: noopParameters,
    execute: async () => noopResult,
  };
  const worker = workerTool({
    name: "noop",
    description: "Returns a constant",
    parameters: noopParameters,
    module: new URL("./tools/noop.js", import.meta.url),
  });
  return createRuntime({ tools: [kind === "inline" ? inline : worker], pool: { minThreads: 1, maxThreads: 1 }, ...caps });
}

async function measure(kind: CapCostRow["tool"], calls: number, reps: number): Promise<CapCostRow[]> {
  const uncapped = runtimeOf(kind, {});
  const capped = runtimeOf(kind, { maxConcurrency: { noop: neverReached }, maxConcurrencyPerSession: neverReached });
  const batchOf = (index: number) => ({
    role: "assistant" as const,
    content: [{ type: "toolCall" as const, id: `call_${index}`, name: "noop", arguments: {} }],
  });
  const callOf = (runtime: Runtime, options: ExecuteOptions) => async (index: number) => {
    const { messages } = await runtime.executeToolCalls(batchOf(index), options);
    if (messages[0]?.isError !== false) throw new Error(`a no-op call failed: ${JSON.stringify(messages[0])}`);
  };
  const contenders = [
    { name: "uncapped", call: callOf(uncapped, {}) },
    { name: "capped", call: callOf(capped, { maxConcurrency: neverReached }) },
  ];
  const rows: CapCostRow[] = [];
  try {
    for (const mode of ["serial", "inFlight"] as const) {
      const samples = { uncapped: [] as number[], capped: [] as number[] };
      const ratios: number[] = [];
      const cpuRatios: number[] = [];
      for (let rep = -1; rep < reps; rep++) {
        // Alternate which goes first, so that neither always runs on a warmer machine.
        const order = rep % 2 === 0 ? contenders : [...contenders].reverse();
        const us: Record<string, number> = {};
        const cpuUs: Record<string, number> = {};
        for (const contender of order) {
          // On Node 20 and 22, the storage that capped inline calls run in costs every promise of the
          // process while it is on, and goes off within 200 ms of the last such call: the uncapped
          // contender must not pay for it, nor the capped one start with it on.
          await new Promise((resolve) => setTimeout(resolve, storageOffMs));
          const start = performance.now();
          const cpuStart = process.cpuUsage();
          if (mode === "serial") await runSerial(contender.call, calls);
          else await runInFlight(contender.call, calls, inFlight);
          const cpu = process.cpuUsage(cpuStart);
          us[contender.name] = ((performance.now() - start) * 1000) / calls;
          cpuUs[contender.name] = (cpu.user + cpu.system) / calls;
        }
        // Repetition -1 warms both up.
        if (rep < 0) continue;
        samples.uncapped.push(us.uncapped!);
        samples.capped.push(us.capped!);
        ratios.push(us.capped! / us.uncapped!);
        cpuRatios.push(cpuUs.capped! / cpuUs.uncapped!);
      }
      rows.push({
        tool: kind,
        mode,
        uncapped: summarize(samples.uncapped),
        capped: summarize(samples.capped),
        ratio: median(ratios),
        cpuRatio: median(cpuRatios),
      });
    }
  } finally {
    await Promise.all([uncapped.close(), capped.close()]);
  }
  return rows;
}

export async function runCapCost(calls: number, reps: number): Promise<CapCostResult> {
  const rows = [...(await measure("worker", calls, reps)), ...(await measure("inline", calls, reps))];
  return { node: process.version, calls, reps, rows };
}

/** Markdown lines of a result. */
export function renderCapCost(result: CapCostResult): string[] {
  const lines = [
    `## What caps cost a call (Node ${result.node}, ${result.calls} calls × ${result.reps} reps)`,
    "",
    "A no-op batch of one through `executeToolCalls`: no cap, and caps never reached (tool, session and batch).",
    "",
    "| tool | mode | µs per call, no cap | µs per call, caps never reached | ratio (paired median) | CPU-time ratio (paired median) |",
    "|---|---|---:|---:|---:|---:|",
  ];
  for (const row of result.rows) {
    const mode = row.mode === "serial" ? "one at a time" : `${inFlight} in flight`;
    const format = (summary: Summary) => `${summary.median.toFixed(2)} [${summary.min.toFixed(2)}–${summary.max.toFixed(2)}]`;
    lines.push(
      `| ${row.tool} | ${mode} | ${format(row.uncapped)} | ${format(row.capped)} | ${row.ratio.toFixed(3)}× | ${row.cpuRatio.toFixed(3)}× |`,
    );
  }
  lines.push("");
  return lines;
}

const isMain = import.meta.url === `file://${process.argv[1]}`;
if (isMain) {
  const { values } = parseArgs({
    options: { calls: { type: "string", default: "20000" }, reps: { type: "string", default: "9" }, json: { type: "boolean" } },
  });
  const result = await runCapCost(Number(values.calls), Number(values.reps));
  console.log(values.json === true ? JSON.stringify(result) : renderCapCost(result).join("\n"));
}
