/**
 * Suite 2: what one call costs beyond its work. Every contender runs a no-op
 * that returns the same tiny constant: in process, on bare Piscina, and on
 * toolpool (straight to the pool via `agentTools()[0].execute`, and as a
 * batch of one through the coordinator via `executeToolCalls`). Same thread
 * counts, interleaved repetitions.
 */
import { spawnSync } from "node:child_process";
import { platform } from "node:os";
import { fileURLToPath } from "node:url";

import type { Piscina } from "piscina";
import { createRuntime, workerTool, type AgentTool, type Runtime } from "toolpool";

import { createBarePiscina } from "../lib/bare-piscina.js";
import { noopParameters, noopResult } from "../lib/constants.js";
import { createTinypool, createWorkerpool, type PeerPool, type Peers } from "../lib/peers.js";
import { advanceProgress, logStep } from "../lib/progress.js";
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
  /**
   * In-flight calls run in chunks of this size, the contenders taking turns
   * chunk by chunk, for the same reason as `serialChunk`: the machine drifts
   * (other work, clock speed, where the threads run) over a contender's
   * whole repetition, and turns of a few tens of milliseconds expose every
   * contender to the same drift.
   */
  inFlightChunk: number;
  concurrency: number;
  warmups: number;
  reps: number;
}

export type DispatchMode = "serial" | "inFlight";

/** One contender's per-call time over a bare Piscina's, in one mode. */
export interface DispatchRatio {
  mode: DispatchMode;
  contender: string;
  ratioOfMedians: number;
  paired: Summary;
}

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
  /** Per mode and contender: median ratio to bare Piscina at toolpool's settings, and the paired per-rep ratios. */
  ratios: DispatchRatio[];
  /** The same against bare Piscina at its defaults. */
  ratiosToDefaults: DispatchRatio[];
  /** One at a time again, in a child process pinned to one CPU; or why that could not run. */
  pinnedSerial: PinnedSerialResult | { skipped: string };
}

/**
 * One-at-a-time figures of a child process pinned to one CPU (`taskset`).
 * There every thread shares the CPU, so no call waits for another CPU to wake
 * up: what remains is the work on the call's path, main thread and worker.
 */
export interface PinnedSerialResult {
  cpu: string;
  figures: { name: string; usPerCall: number[]; summary: Summary }[];
  /** Every contender but bare Piscina: median ratio, and paired per repetition. */
  ratios: { contender: string; ratioOfMedians: number; paired: Summary }[];
}

/** Contender names, used as keys in the JSON output. */
export const dispatchContenders = {
  inProcess: "in-process async call",
  piscina: "bare Piscina 5, toolpool's settings",
  piscinaDefaults: "bare Piscina 5, its defaults",
  tinypool: "bare tinypool",
  workerpool: "bare workerpool",
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
  /** The bare pools of every contender, toolpool's included. */
  pools: { name: string; run: (task: unknown) => Promise<unknown> }[];
  contenders: Contender[];
  close: () => Promise<void>;
}

/** Builds the contenders (peers that are installed included) on pools of `threads` threads each. */
export function createDispatchSetup(threads: number, peers: Peers): DispatchSetup {
  const noopModule = new URL("../tools/noop.js", import.meta.url);
  const runtime = createRuntime({
    tools: [workerTool({ name: "noop", description: "Returns a constant", parameters: noopParameters, module: noopModule })],
    pool: { maxThreads: threads, minThreads: threads },
  });
  const piscina = createBarePiscina("toolpool", noopModule, threads, runtime.options.pool.idleTimeout);
  const piscinaDefaults = createBarePiscina("defaults", noopModule, threads, runtime.options.pool.idleTimeout);
  for (const pool of [piscina, piscinaDefaults]) pool.on("error", (error: unknown) => logStep(`bare Piscina error: ${String(error)}`));
  const agentTool: AgentTool = runtime.agentTools()[0]!;
  const peerPools: (PeerPool & { name: string })[] = [];
  if (peers.tinypool !== undefined) {
    peerPools.push({ name: dispatchContenders.tinypool, ...createTinypool(peers.tinypool, noopModule, threads, runtime.options.pool.idleTimeout) });
  }
  if (peers.workerpool !== undefined) {
    peerPools.push({ name: dispatchContenders.workerpool, ...createWorkerpool(peers.workerpool, "noop", threads) });
  }
  const emptyArgs = {};
  const inProcessNoop = async (): Promise<typeof noopResult> => noopResult;
  const contenders: Contender[] = [
    { name: dispatchContenders.inProcess, call: () => inProcessNoop() },
    { name: dispatchContenders.piscina, call: () => piscina.run(emptyArgs) },
    { name: dispatchContenders.piscinaDefaults, call: () => piscinaDefaults.run(emptyArgs) },
    ...peerPools.map((pool) => ({ name: pool.name, call: () => pool.run(emptyArgs) })),
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
    pools: [
      { name: dispatchContenders.piscina, run: (task) => piscina.run(task) },
      { name: dispatchContenders.piscinaDefaults, run: (task) => piscinaDefaults.run(task) },
      ...peerPools,
      { name: dispatchContenders.agentTool, run: (task) => agentTool.execute("boot", task as Record<string, never>) },
    ],
    contenders,
    close: async () => {
      await Promise.all([runtime.close(), piscina.close(), piscinaDefaults.close(), ...peerPools.map((pool) => pool.close())]);
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

/**
 * One repetition of the in-flight mode: `inFlightCalls` calls per
 * contender, `concurrency` outstanding, in chunks, contenders taking turns.
 * Returns µs per call of each contender over the repetition.
 */
async function measureInFlightInterleaved(
  contenders: readonly Contender[],
  options: DispatchOverheadOptions,
  rep: number,
): Promise<Map<string, number>> {
  const totalMs = new Map(contenders.map((c) => [c.name, 0]));
  const chunkCount = Math.max(1, Math.round(options.inFlightCalls / options.inFlightChunk));
  const chunkCalls = Math.max(1, Math.round(options.inFlightCalls / chunkCount));
  for (let chunk = 0; chunk < chunkCount; chunk++) {
    for (const contender of rotate(contenders, rep + chunk)) {
      const start = performance.now();
      await runInFlight(contender.call, chunkCalls, options.concurrency);
      totalMs.set(contender.name, totalMs.get(contender.name)! + performance.now() - start);
    }
  }
  return new Map([...totalMs].map(([name, ms]) => [name, (ms * 1000) / (chunkCount * chunkCalls)]));
}

/** Runs `contender` once in `mode` and returns µs per call. */
export async function measureDispatch(contender: Contender, mode: DispatchMode, options: DispatchOverheadOptions): Promise<number> {
  const count = mode === "serial" ? options.serialCalls : options.inFlightCalls;
  const start = performance.now();
  if (mode === "serial") await runSerial(contender.call, count);
  else await runInFlight(contender.call, count, options.concurrency);
  return ((performance.now() - start) * 1000) / count;
}

/**
 * Inside the pinned child: the one-at-a-time measurement alone, every
 * repetition interleaved chunk by chunk. Returns µs per call of each rep.
 */
export async function runPinnedSerialMeasurement(options: DispatchOverheadOptions, peers: Peers): Promise<Record<string, number[]>> {
  const setup = createDispatchSetup(options.threads, peers);
  const perRep: Record<string, number[]> = Object.fromEntries(setup.contenders.map((c) => [c.name, []]));
  try {
    await Promise.all(Array.from({ length: options.threads * 4 }, () => setup.pools.map((pool) => pool.run({}))).flat());
    for (const contender of setup.contenders) await runSerial(contender.call, 1000);
    for (let rep = 0; rep < options.warmups + options.reps; rep++) {
      const serial = await measureSerialInterleaved(setup.contenders, options, rep);
      if (rep >= options.warmups) for (const [name, { usPerCall }] of serial) perRep[name]!.push(usPerCall);
    }
  } finally {
    await setup.close();
  }
  return perRep;
}

const benchMain = fileURLToPath(new URL("../main.js", import.meta.url));

/** Runs {@link runPinnedSerialMeasurement} in `taskset -c 0 node dist-bench/main.js --pinned-serial …` (Linux only). */
function measurePinnedSerial(options: DispatchOverheadOptions): PinnedSerialResult | { skipped: string } {
  if (platform() !== "linux") return { skipped: `pinning needs Linux's taskset; this is ${platform()}` };
  const cpu = "0";
  // Pinned calls take ~20 µs and vary little: more of them cost little and steady the medians.
  const pinnedOptions = { ...options, serialCalls: Math.max(2000, options.serialCalls) };
  const child = spawnSync("taskset", ["-c", cpu, process.execPath, benchMain, "--pinned-serial", JSON.stringify(pinnedOptions)], {
    encoding: "utf8",
    timeout: 300_000,
    maxBuffer: 16 << 20,
  });
  if (child.error !== undefined) return { skipped: `taskset could not run (${String((child.error as { code?: unknown }).code ?? child.error)})` };
  if (child.status !== 0) return { skipped: `the pinned run failed (exit ${child.status}): ${child.stderr.trim().split("\n").at(-1) ?? ""}` };
  const perRep = JSON.parse(child.stdout) as Record<string, number[]>;
  const figures = Object.entries(perRep).map(([name, usPerCall]) => ({ name, usPerCall, summary: summarize(usPerCall) }));
  const bare = perRep[dispatchContenders.piscina]!;
  const ratios = figures
    .filter((f) => f.name !== dispatchContenders.piscina)
    .map((f) => ({
      contender: f.name,
      ratioOfMedians: f.summary.median / summarize(bare).median,
      paired: summarize(f.usPerCall.map((us, index) => us / bare[index]!)),
    }));
  return { cpu, figures, ratios };
}

/** Expected ms of the pinned child: start-up, a warm-up and the one-at-a-time reps at ~30 µs a call. */
function estimatePinnedMs(options: DispatchOverheadOptions, contenders: number): number {
  return 1500 + contenders * (1000 + (options.warmups + options.reps) * Math.max(2000, options.serialCalls)) * 0.03;
}

/** Expected duration, for the progress bar: ~100 µs per call one at a time, ~40 µs in flight, ~0.3 s to start the pools. */
export function estimateDispatchMs(options: DispatchOverheadOptions, contenders: number): number {
  return (
    estimatePinnedMs(options, contenders) +
    (options.warmups + options.reps) * (300 + contenders * (options.serialCalls * 0.1 + (options.inFlightCalls + 500) * 0.04))
  );
}

export async function runDispatchOverheadSuite(options: DispatchOverheadOptions, peers: Peers): Promise<DispatchOverheadResult> {
  const modes: DispatchMode[] = ["serial", "inFlight"];
  const samples = new Map<string, number[]>();
  const chunkSamples = new Map<string, number[]>();
  const key = (name: string, mode: DispatchMode): string => `${mode}:${name}`;
  const record = (name: string, mode: DispatchMode, us: number): void => {
    const list = samples.get(key(name, mode)) ?? [];
    list.push(us);
    samples.set(key(name, mode), list);
  };
  let names: string[] = [];
  const total = options.warmups + options.reps;
  for (let rep = 0; rep < total; rep++) {
    // Fresh pools every repetition. On a VM a pool's thread placement decides
    // between ~15 and ~90 µs per one-at-a-time call and sticks to its threads
    // for seconds at a time; new pools draw their placement anew, so no
    // contender keeps a lucky or an unlucky one for the whole run.
    const setup = createDispatchSetup(options.threads, peers);
    names = setup.contenders.map((c) => c.name);
    const isWarmup = rep < options.warmups;
    try {
      // Threads start in the background: a burst per pool starts every one, then a short
      // in-flight run per contender warms the new threads (module loaded, code optimized).
      await Promise.all(Array.from({ length: options.threads * 4 }, () => setup.pools.map((pool) => pool.run({}))).flat());
      for (const contender of setup.contenders) await runInFlight(contender.call, 500, options.concurrency);
      const serial = await measureSerialInterleaved(setup.contenders, options, rep);
      if (!isWarmup) {
        for (const [name, { usPerCall, chunks }] of serial) {
          record(name, "serial", usPerCall);
          chunkSamples.set(name, [...(chunkSamples.get(name) ?? []), ...chunks]);
        }
      }
      const inFlight = await measureInFlightInterleaved(setup.contenders, options, rep);
      if (!isWarmup) for (const [name, us] of inFlight) record(name, "inFlight", us);
    } finally {
      await setup.close();
    }
    advanceProgress(
      (estimateDispatchMs(options, names.length) - estimatePinnedMs(options, names.length)) / total,
      `dispatch: ${isWarmup ? "warm-up" : "rep"} ${isWarmup ? rep + 1 : rep - options.warmups + 1}/${isWarmup ? options.warmups : options.reps} done`,
    );
  }

  const figures: DispatchFigures[] = modes.flatMap((mode) =>
    names.map((name) => {
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
  const ratioTo = (baseline: string) => {
    const compared = names.filter((name) => name !== baseline);
    return modes.flatMap((mode) =>
      compared.map((contender) => {
        const ours = find(contender, mode);
        const bare = find(baseline, mode);
        return {
          mode,
          contender,
          ratioOfMedians: ours.summary.median / bare.summary.median,
          paired: summarize(ours.usPerCall.map((us, index) => us / bare.usPerCall[index]!)),
        };
      }),
    );
  };
  const ratios = ratioTo(dispatchContenders.piscina);
  const ratiosToDefaults = ratioTo(dispatchContenders.piscinaDefaults);
  logStep("dispatch: one at a time again, in a child pinned to one CPU");
  const pinnedSerial = measurePinnedSerial(options);
  if ("skipped" in pinnedSerial) logStep(`dispatch: no pinned run: ${pinnedSerial.skipped}`);
  advanceProgress(estimatePinnedMs(options, names.length), "dispatch: pinned run done");
  return { options, figures, ratios, ratiosToDefaults, pinnedSerial };
}
