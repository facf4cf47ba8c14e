/**
 * What caps cost a call: the same no-op batch of one through
 * `executeToolCalls` on a runtime with no cap and on one whose caps are
 * never reached (the tool's, the session's and the batch's far above the
 * calls in flight), side by side in one process.
 *
 *   node dist-bench/cap-cost.js [--calls N] [--reps N] [--chunk N] [--json]
 *
 * Worker tools (1 thread per runtime) and inline tools (a capped inline
 * call's execute runs inside an `AsyncLocalStorage` context, so that its
 * nested calls find it; on Node 20 and 22 that storage costs every promise
 * of the process while it is on, so each contender starts after a pause in
 * which it goes off), one at a time and 64 in flight. Within a repetition
 * the contenders take turns every `--chunk` calls (there, once, after the
 * pause); each repetition's capped time is divided by the uncapped time of
 * the same repetition (paired), and the median of those ratios is the figure.
 * For inline tools a third contender has no cap but runs its execute inside
 * an `AsyncLocalStorage` context of the bench's own: what that mechanism,
 * which nested calls need to find their parent, costs the call by itself.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { parseArgs } from "node:util";

import { createRuntime, workerTool, type AgentTool, type ExecuteOptions, type Runtime, type RuntimeOptions } from "toolpool";

import { noopParameters, noopResult } from "./lib/constants.js";
import { runInFlight, runSerial } from "./lib/run-loop.js";
import { median, summarize, type Summary } from "./lib/stats.js";

export interface CapCostRow {
  tool: "worker" | "inline";
  mode: "serial" | "inFlight";
  /** Turns each contender took per repetition (1: the whole repetition at once). */
  turns: number;
  uncapped: Summary;
  capped: Summary;
  /** Median over repetitions of capped ÷ uncapped µs per call, the two measured back to back. */
  ratio: number;
  /** The same for CPU time (every thread of the process, user and system): less shaken by other processes on a busy machine. */
  cpuRatio: number;
  /**
   * Inline only: no cap, but the tool's execute run inside an
   * `AsyncLocalStorage` context of the bench's own, as a capped inline call's
   * execute runs (its nested calls find their parent there): what that
   * mechanism alone costs a call, beside the same uncapped contender.
   */
  storageOnly?: Summary;
  storageRatio?: number;
}

export interface CapCostResult {
  node: string;
  calls: number;
  reps: number;
  /** Calls per turn where the contenders take turns within a repetition. */
  chunk: number;
  rows: CapCostRow[];
}

const inFlight = 64;
/** Calls a contender runs per turn, within a repetition. */
const defaultChunk = 1_000;
/** Longer than capped inline calls' context storage takes to go off once they stop (see src/coordinator/call-caps.ts). */
const storageOffMs = 300;
/** Whether `AsyncLocalStorage` rides on async hooks here (Node 20 and 22). */
const isHookBasedStorage = Object.hasOwn(new AsyncLocalStorage(), "enabled");
/** Never reached: above the calls in flight. */
const neverReached = 10_000;

/** The bench's own storage, for the contender that pays for it alone. */
const benchStorage = new AsyncLocalStorage<object>();
const benchContext = {};
const noopExecute = async () => noopResult;

function runtimeOf(kind: CapCostRow["tool"], caps: Partial<RuntimeOptions>, inStorage = false): Runtime {
  const inline: AgentTool = {
    name: "noop",
    label: "noop",
    description: "Returns a constant",
    parameters: noopParameters,
    execute: inStorage ? () => benchStorage.run(benchContext, noopExecute) : noopExecute,
  };
  const worker = workerTool({
    name: "noop",
    description: "Returns a constant",
    parameters: noopParameters,
    module: new URL("./tools/noop.js", import.meta.url),
  });
  return createRuntime({ tools: [kind === "inline" ? inline : worker], pool: { minThreads: 1, maxThreads: 1 }, ...caps });
}

async function measure(kind: CapCostRow["tool"], calls: number, reps: number, chunk: number): Promise<CapCostRow[]> {
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
  const storageOnly = kind === "inline" ? runtimeOf(kind, {}, true) : undefined;
  const contenders: { name: "uncapped" | "capped" | "storageOnly"; call: (index: number) => Promise<void> }[] = [
    { name: "uncapped", call: callOf(uncapped, {}) },
    { name: "capped", call: callOf(capped, { maxConcurrency: neverReached }) },
  ];
  if (storageOnly !== undefined) contenders.push({ name: "storageOnly", call: callOf(storageOnly, {}) });
  const rows: CapCostRow[] = [];
  // On Node 20 and 22, the storage that capped inline calls run in costs every promise of the
  // process while it is on, and goes off within 200 ms of the last such call: the uncapped
  // contender must not pay for it, nor the capped one start with it on. So there, inline
  // contenders take turns once a repetition, after a pause; elsewhere every `chunk` calls,
  // which cancels the machine's drift (other work, clock speed) within a repetition.
  const needsPause = kind === "inline" && isHookBasedStorage;
  const turns = needsPause ? 1 : Math.max(1, Math.round(calls / chunk));
  const callsPerTurn = Math.max(1, Math.round(calls / turns));
  try {
    for (const mode of ["serial", "inFlight"] as const) {
      const samples = { uncapped: [] as number[], capped: [] as number[], storageOnly: [] as number[] };
      const ratios: number[] = [];
      const cpuRatios: number[] = [];
      const storageRatios: number[] = [];
      for (let rep = -1; rep < reps; rep++) {
        const ms = { uncapped: 0, capped: 0, storageOnly: 0 };
        const cpuUs = { uncapped: 0, capped: 0, storageOnly: 0 };
        for (let turn = 0; turn < turns; turn++) {
          // Rotate which goes first, so that none always runs on a warmer machine.
          const first = (rep + turn) % contenders.length;
          const order = [...contenders.slice(first), ...contenders.slice(0, first)];
          for (const contender of order) {
            if (needsPause) await new Promise((resolve) => setTimeout(resolve, storageOffMs));
            const start = performance.now();
            const cpuStart = process.cpuUsage();
            if (mode === "serial") await runSerial(contender.call, callsPerTurn);
            else await runInFlight(contender.call, callsPerTurn, inFlight);
            const cpu = process.cpuUsage(cpuStart);
            ms[contender.name] += performance.now() - start;
            cpuUs[contender.name] += cpu.user + cpu.system;
            // The bench's storage goes off at once after its turn (hook-based Node), where the runtime's waits for it to.
            if (contender.name === "storageOnly" && isHookBasedStorage) benchStorage.disable();
          }
        }
        // Repetition -1 warms them up.
        if (rep < 0) continue;
        const perCall = (total: number) => (total * 1000) / (turns * callsPerTurn);
        samples.uncapped.push(perCall(ms.uncapped));
        samples.capped.push(perCall(ms.capped));
        ratios.push(ms.capped / ms.uncapped);
        cpuRatios.push(cpuUs.capped / cpuUs.uncapped);
        if (storageOnly !== undefined) {
          samples.storageOnly.push(perCall(ms.storageOnly));
          storageRatios.push(ms.storageOnly / ms.uncapped);
        }
      }
      rows.push({
        tool: kind,
        mode,
        turns,
        uncapped: summarize(samples.uncapped),
        capped: summarize(samples.capped),
        ratio: median(ratios),
        cpuRatio: median(cpuRatios),
        ...(storageOnly === undefined ? {} : { storageOnly: summarize(samples.storageOnly), storageRatio: median(storageRatios) }),
      });
    }
  } finally {
    await Promise.all([uncapped.close(), capped.close(), storageOnly?.close()]);
  }
  return rows;
}

export async function runCapCost(calls: number, reps: number, chunk = defaultChunk): Promise<CapCostResult> {
  const rows = [...(await measure("worker", calls, reps, chunk)), ...(await measure("inline", calls, reps, chunk))];
  return { node: process.version, calls, reps, chunk, rows };
}

/** Markdown lines of a result. */
export function renderCapCost(result: CapCostResult): string[] {
  const lines = [
    `## What caps cost a call (Node ${result.node}, ${result.calls} calls × ${result.reps} reps)`,
    "",
    "A no-op batch of one through `executeToolCalls`: no cap, and caps never reached (tool, session and batch).",
    `The contenders take turns every ${result.chunk} calls within a repetition, or once a repetition after a pause (turns: 1) where capped inline calls' context storage must go off first (Node 20 and 22).`,
    "",
    "| tool | mode | turns per rep | µs per call, no cap | µs per call, caps never reached | ratio (paired median) | CPU-time ratio (paired median) | no cap, execute inside an `AsyncLocalStorage` context: µs per call, ratio |",
    "|---|---|---:|---:|---:|---:|---:|---|",
  ];
  for (const row of result.rows) {
    const mode = row.mode === "serial" ? "one at a time" : `${inFlight} in flight`;
    const format = (summary: Summary) => `${summary.median.toFixed(2)} [${summary.min.toFixed(2)}–${summary.max.toFixed(2)}]`;
    lines.push(
      `| ${row.tool} | ${mode} | ${row.turns} | ${format(row.uncapped)} | ${format(row.capped)} | ${row.ratio.toFixed(3)}× | ${row.cpuRatio.toFixed(3)}× | ${row.storageOnly === undefined ? "–" : `${format(row.storageOnly)}, ${row.storageRatio!.toFixed(3)}×`} |`,
    );
  }
  lines.push("");
  return lines;
}

const isMain = import.meta.url === `file://${process.argv[1]}`;
if (isMain) {
  const { values } = parseArgs({
    options: {
      calls: { type: "string", default: "20000" },
      reps: { type: "string", default: "9" },
      chunk: { type: "string", default: String(defaultChunk) },
      json: { type: "boolean" },
    },
  });
  const result = await runCapCost(Number(values.calls), Number(values.reps), Number(values.chunk));
  console.log(values.json === true ? JSON.stringify(result) : renderCapCost(result).join("\n"));
}
