/**
 * Suite 2: what one call costs beyond its work. Every contender runs a no-op
 * that returns the same tiny constant: in process, on bare Piscina, and on
 * toolpool (straight to the pool via `agentTools()[0].execute`, and as a
 * batch of one through the coordinator via `executeToolCalls`). Same thread
 * counts, interleaved repetitions.
 */
import { Piscina } from "piscina";
import { createRuntime, workerTool, type AgentTool, type Runtime } from "toolpool";

import { noopParameters, noopResult } from "../lib/constants.js";
import { logStep } from "../lib/progress.js";
import { rotate, runInFlight, runSerial } from "../lib/run-loop.js";
import { percentile, summarize, type Summary } from "../lib/stats.js";

export interface DispatchOverheadOptions {
  threads: number;
  /** Calls per repetition and contender, one at a time. */
  serialCalls: number;
  /**
   * One-at-a-time calls run in chunks of this size, the contenders taking
   * turns chunk by chunk. On this VM one-at-a-time latency is bimodal (about
   * 15–25 µs or 80–170 µs per call, depending on where the scheduler put the
   * pool's threads, and it flips every second or so); fine interleaving
   * exposes every contender to the same mix.
   */
  serialChunk: number;
  /** Calls per repetition with `concurrency` outstanding. */
  inFlightCalls: number;
  concurrency: number;
  warmups: number;
  reps: number;
}

export type DispatchMode = "serial" | "inFlight";

export interface DispatchFigures {
  name: string;
  mode: DispatchMode;
  /** µs per call of each measured repetition. */
  usPerCall: number[];
  summary: Summary;
  /** Serial mode only: µs per call of every chunk; its low percentiles show the fast placement. */
  chunkUsPerCall?: number[];
  chunkSummary?: Summary & { p10: number };
}

export interface DispatchOverheadResult {
  options: DispatchOverheadOptions;
  figures: DispatchFigures[];
  /** Per mode and toolpool contender: median ratio to bare Piscina, and the paired per-rep ratios. */
  ratios: { mode: DispatchMode; contender: string; ratioOfMedians: number; paired: Summary }[];
}

/** Contender names, used as keys in the JSON output. */
export const dispatchContenders = {
  inProcess: "in-process async call",
  piscina: "bare Piscina 5",
  agentTool: "toolpool agentTools()[0].execute",
  batch: "toolpool executeToolCalls (batch of 1)",
} as const;

/** A contender: `call(i)` performs call number `i`. */
interface Contender {
  name: string;
  call: (index: number) => Promise<unknown>;
}

/** The pools of suite 2; `close` ends all of them. */
export interface DispatchSetup {
  runtime: Runtime;
  piscina: Piscina;
  contenders: Contender[];
  close: () => Promise<void>;
}

/** Builds the four contenders on pools of `threads` threads each. */
export function createDispatchSetup(threads: number): DispatchSetup {
  const noopModule = new URL("../tools/noop.js", import.meta.url);
  const runtime = createRuntime({
    tools: [workerTool({ name: "noop", description: "Returns a constant", parameters: noopParameters, module: noopModule })],
    pool: { maxThreads: threads, minThreads: threads },
  });
  const piscina = new Piscina({
    filename: noopModule.href,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: runtime.options.pool.idleTimeout,
    concurrentTasksPerWorker: 1,
  });
  piscina.on("error", (error: unknown) => logStep(`bare Piscina error: ${String(error)}`));
  const agentTool: AgentTool = runtime.agentTools()[0]!;
  const emptyArgs = {};
  const inProcessNoop = async (): Promise<typeof noopResult> => noopResult;
  const contenders: Contender[] = [
    { name: dispatchContenders.inProcess, call: () => inProcessNoop() },
    { name: dispatchContenders.piscina, call: () => piscina.run(emptyArgs) },
    { name: dispatchContenders.agentTool, call: (index) => agentTool.execute(`call_${index}`, emptyArgs) },
    {
      name: dispatchContenders.batch,
      call: async (index) => {
        const { messages } = await runtime.executeToolCalls({
          role: "assistant",
          content: [{ type: "toolCall", id: `call_${index}`, name: "noop", arguments: {} }],
        });
        if (messages[0]?.isError !== false) throw new Error(`toolpool batch failed: ${JSON.stringify(messages)}`);
      },
    },
  ];
  return {
    runtime,
    piscina,
    contenders,
    close: async () => {
      await Promise.all([runtime.close(), piscina.close()]);
    },
  };
}

/**
 * One repetition of the one-at-a-time mode: `serialCalls` calls per
 * contender, in chunks, contenders taking turns. Returns µs per call of each
 * contender over the repetition, and of each of its chunks.
 */
async function measureSerialInterleaved(
  contenders: readonly Contender[],
  options: DispatchOverheadOptions,
  rep: number,
): Promise<Map<string, { usPerCall: number; chunks: number[] }>> {
  const totals = new Map(contenders.map((c) => [c.name, { ms: 0, chunks: [] as number[] }]));
  const chunkCount = Math.max(1, Math.round(options.serialCalls / options.serialChunk));
  for (let chunk = 0; chunk < chunkCount; chunk++) {
    for (const contender of rotate(contenders, rep + chunk)) {
      const start = performance.now();
      await runSerial(contender.call, options.serialChunk);
      const ms = performance.now() - start;
      const total = totals.get(contender.name)!;
      total.ms += ms;
      total.chunks.push((ms * 1000) / options.serialChunk);
    }
  }
  const calls = chunkCount * options.serialChunk;
  return new Map([...totals].map(([name, total]) => [name, { usPerCall: (total.ms * 1000) / calls, chunks: total.chunks }]));
}

/** Runs `contender` once in `mode` and returns µs per call. */
export async function measureDispatch(contender: Contender, mode: DispatchMode, options: DispatchOverheadOptions): Promise<number> {
  const count = mode === "serial" ? options.serialCalls : options.inFlightCalls;
  const start = performance.now();
  if (mode === "serial") await runSerial(contender.call, count);
  else await runInFlight(contender.call, count, options.concurrency);
  return ((performance.now() - start) * 1000) / count;
}

export async function runDispatchOverheadSuite(options: DispatchOverheadOptions): Promise<DispatchOverheadResult> {
  const setup = createDispatchSetup(options.threads);
  const modes: DispatchMode[] = ["serial", "inFlight"];
  const samples = new Map<string, number[]>();
  const chunkSamples = new Map<string, number[]>();
  const key = (name: string, mode: DispatchMode): string => `${mode}:${name}`;
  const record = (name: string, mode: DispatchMode, us: number): void => {
    const list = samples.get(key(name, mode)) ?? [];
    list.push(us);
    samples.set(key(name, mode), list);
  };
  try {
    // Threads start in the background; a burst per pool makes sure every one is up before the warm-up.
    const agentTool = setup.runtime.agentTools()[0]!;
    await Promise.all(
      Array.from({ length: options.threads * 4 }, (_, index) => [setup.piscina.run({}), agentTool.execute(`boot_${index}`, {})]).flat(),
    );
    const total = options.warmups + options.reps;
    for (let rep = 0; rep < total; rep++) {
      const isWarmup = rep < options.warmups;
      const serial = await measureSerialInterleaved(setup.contenders, options, rep);
      if (!isWarmup) {
        for (const [name, { usPerCall, chunks }] of serial) {
          record(name, "serial", usPerCall);
          chunkSamples.set(name, [...(chunkSamples.get(name) ?? []), ...chunks]);
        }
      }
      for (const contender of rotate(setup.contenders, rep)) {
        const us = await measureDispatch(contender, "inFlight", options);
        if (!isWarmup) record(contender.name, "inFlight", us);
      }
      logStep(`dispatch: ${isWarmup ? "warm-up" : "rep"} ${isWarmup ? rep + 1 : rep - options.warmups + 1}/${isWarmup ? options.warmups : options.reps} done`);
    }
  } finally {
    await setup.close();
  }

  const figures: DispatchFigures[] = modes.flatMap((mode) =>
    setup.contenders.map(({ name }) => {
      const usPerCall = samples.get(key(name, mode)) ?? [];
      const figures: DispatchFigures = { name, mode, usPerCall, summary: summarize(usPerCall) };
      const chunks = mode === "serial" ? chunkSamples.get(name) : undefined;
      if (chunks !== undefined) {
        figures.chunkUsPerCall = chunks;
        figures.chunkSummary = { ...summarize(chunks), p10: percentile(chunks, 10) };
      }
      return figures;
    }),
  );
  const find = (name: string, mode: DispatchMode): DispatchFigures => figures.find((f) => f.name === name && f.mode === mode)!;
  const ratios = modes.flatMap((mode) =>
    [dispatchContenders.agentTool, dispatchContenders.batch].map((contender) => {
      const ours = find(contender, mode);
      const bare = find(dispatchContenders.piscina, mode);
      return {
        mode,
        contender,
        ratioOfMedians: ours.summary.median / bare.summary.median,
        paired: summarize(ours.usPerCall.map((us, index) => us / bare.usPerCall[index]!)),
      };
    }),
  );
  return { options, figures, ratios };
}
