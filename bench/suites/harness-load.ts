/**
 * Suite 5: many agent sessions at once, as a benchmark harness runs them.
 * Every session is a sequence of turns; every turn is one batch of mixed
 * calls of the built-in tools (grep, hash, diff, patch) over a generated,
 * seeded corpus. All sessions start together and each goes on to its next
 * turn as soon as its batch is done.
 *
 * Contenders, interleaved repetition by repetition:
 * - toolpool: each turn is `runtime.executeToolCalls` with the session's
 *   `sessionKey`, sessions taking turns on the pool (`scheduling: "fair"`);
 * - toolpool FIFO: the same on a runtime with `scheduling: "fifo"`;
 * - pi in process: pi's own loop (`runAgentLoopContinue`, one model turn per
 *   batch from a scripted fake model) with the same tool modules' `execute`
 *   called inline on the main thread;
 * - pi loop + toolpool `agentTools()`: the same pi loop, the calls on the pool;
 * - bare Piscina (control): each turn is `Promise.all` of `piscina.run` on a
 *   pool of the same size, the worker calling the same `execute` — what the
 *   pool underneath costs, without toolpool's coordinator and checks.
 *
 * Measured per run: calls/s, every batch's latency (toolpool: the
 * executeToolCalls call; pi: from the assistant message's end to the turn's
 * end), each session's duration (fairness = slowest / fastest), peak RSS of
 * the whole process (worker threads included; sampled every 10 ms), and the
 * main thread's event-loop delay; and where the CPU goes: the whole
 * process's CPU time per call (every thread) and the main thread's busy time
 * per call (its event loop's active time). With C cores, a run can go no
 * faster than C ÷ (CPU per call) nor than 1 ÷ (main thread per call): the
 * report gives both ceilings, the floor under what a pool can reach.
 */
import { availableParallelism } from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";

import type { AgentTool as PiAgentTool } from "@mariozechner/pi-agent-core";
import type { ToolCall as PiToolCall } from "@mariozechner/pi-ai";
import { Piscina } from "piscina";
import { builtinTools, createRuntime, type Runtime, type WorkerToolContext } from "toolpool";

import { createCorpus, createSessionTurns, type CorpusOptions, type CorpusToolCall } from "../lib/corpus.js";
import { runPiSession } from "../lib/pi-oracle.js";
import { advanceProgress, logStep } from "../lib/progress.js";
import { rotate } from "../lib/run-loop.js";
import { readThreadCpuMs, splitThreadCpu, type ThreadCpuSplit } from "../lib/thread-cpu.js";
import { percentile, summarize, type Summary } from "../lib/stats.js";

export interface HarnessLoadOptions {
  sessions: number;
  turns: number;
  callsPerTurn: number;
  corpus: CorpusOptions;
  threads: number;
  /** Warm-up runs, each with the first `warmupSessions` sessions only. */
  warmups: number;
  warmupSessions: number;
  reps: number;
}

/** One run of one contender. */
export interface HarnessSample {
  wallMs: number;
  callsPerSecond: number;
  batchP50Ms: number;
  batchP99Ms: number;
  /** Slowest session's duration / fastest session's duration. */
  fairness: number;
  slowestSessionMs: number;
  fastestSessionMs: number;
  peakRssMiB: number;
  /** Peak RSS minus RSS when the run started. */
  rssGrowthMiB: number;
  loopDelayP99Ms: number;
  /** CPU time of the whole process per call, every thread (µs). */
  cpuUsPerCall: number;
  /** The main thread's busy time per call (µs): its event loop's active time. */
  mainUsPerCall: number;
  /**
   * CPU per call (µs) by thread, where Linux's `/proc` tells: the main
   * thread, the pool's threads (the busiest others; none for pi in process)
   * and every other thread.
   */
  threadUsPerCall?: { main: number; pool: number; other: number };
}

export interface HarnessContenderFigures {
  name: string;
  samples: HarnessSample[];
  callsPerSecond: Summary;
  batchP50: Summary;
  batchP99: Summary;
  fairness: Summary;
  peakRssMiB: Summary;
  rssGrowthMiB: Summary;
  loopDelayP99: Summary;
  cpuUsPerCall: Summary;
  mainUsPerCall: Summary;
  threadUsPerCall?: { main: Summary; pool: Summary; other: Summary };
}

export interface HarnessLoadResult {
  options: HarnessLoadOptions;
  corpus: { files: number; bytes: number };
  callsPerRun: number;
  /** The machine's cores (the CPU ceiling's C). */
  cores: number;
  /** Mean ms of one call of each tool, run inline once per call over a sample of the workload. */
  inlineCallMs: Record<string, number>;
  contenders: HarnessContenderFigures[];
  /** toolpool calls/s ÷ pi in-process calls/s (medians), and paired per rep. */
  throughputRatio: number;
  pairedThroughputRatios: Summary;
}

export const harnessContenders = {
  toolpool: "toolpool executeToolCalls",
  toolpoolFifo: "toolpool executeToolCalls, FIFO",
  pi: "pi loop, tools in process",
  piOverPool: "pi loop + toolpool agentTools()",
  piscina: "bare Piscina 5 (control)",
} as const;

interface Contender {
  name: string;
  /** Runs one session; calls `onBatch(ms)` for each turn's batch latency. */
  runSession: (turns: readonly CorpusToolCall[][], onBatch: (ms: number) => void, session: number) => Promise<void>;
  /** Threads of its pool (0: the calls run on the main thread). */
  poolThreads: number;
}

type ToolModule = { execute: (args: unknown, ctx: WorkerToolContext<unknown>) => Promise<{ content: unknown; details: unknown }> };

/** Expected duration, for the progress bar: ~0.25 ms per call in process, ~0.4 ms on a pool of 2 threads. */
export function estimateHarnessLoadMs(options: HarnessLoadOptions): number {
  const runMs = (sessions: number) => sessions * options.turns * options.callsPerTurn * (0.25 + 4 * 0.4);
  return options.warmups * runMs(options.warmupSessions) + options.reps * runMs(options.sessions);
}

export async function runHarnessLoadSuite(options: HarnessLoadOptions): Promise<HarnessLoadResult> {
  const corpus = createCorpus(options.corpus);
  logStep(`harness: corpus of ${corpus.files.length * 2} files (${(corpus.bytes / 2 ** 20).toFixed(1)} MiB) in ${corpus.root}`);
  // The corpus is the workspace: the built-ins refuse paths outside their root.
  const tools = builtinTools({ root: corpus.root });
  const runtime = createRuntime({ tools, pool: { maxThreads: options.threads, minThreads: options.threads } });
  const fifoRuntime = createRuntime({ tools, pool: { maxThreads: options.threads, minThreads: options.threads, scheduling: "fifo" } });
  const piscina = new Piscina({
    filename: new URL("../tools/builtin-dispatch.js", import.meta.url).href,
    minThreads: options.threads,
    maxThreads: options.threads,
    idleTimeout: runtime.options.pool.idleTimeout,
    concurrentTasksPerWorker: 1,
  });
  piscina.on("error", (error: unknown) => logStep(`bare Piscina error: ${String(error)}`));
  try {
    const moduleUrls = new Map(tools.map((tool) => [tool.name, tool.moduleUrl]));
    const modules = new Map<string, ToolModule>();
    for (const tool of tools) modules.set(tool.name, (await import(tool.moduleUrl)) as ToolModule);
    const inlineTools = tools.map(
      (tool): PiAgentTool => ({
        name: tool.name,
        label: tool.label,
        description: tool.description,
        parameters: tool.parameters as PiAgentTool["parameters"],
        execute: (toolCallId, args, signal, onUpdate) =>
          modules.get(tool.name)!.execute(args, {
            toolCallId,
            signal: signal ?? neverAborted,
            onUpdate: (onUpdate ?? ignoreUpdate) as WorkerToolContext<unknown>["onUpdate"],
          }) as ReturnType<PiAgentTool["execute"]>,
      }),
    );
    const pooledTools = runtime.agentTools() as unknown as PiAgentTool[];
    const contenders: Contender[] = [
      {
        name: harnessContenders.toolpool,
        poolThreads: options.threads,
        runSession: (turns, onBatch, session) => runToolpoolSession(runtime, turns, onBatch, session),
      },
      {
        name: harnessContenders.toolpoolFifo,
        poolThreads: options.threads,
        runSession: (turns, onBatch, session) => runToolpoolSession(fifoRuntime, turns, onBatch, session),
      },
      { name: harnessContenders.pi, poolThreads: 0, runSession: (turns, onBatch) => runPiHarnessSession(inlineTools, turns, onBatch) },
      {
        name: harnessContenders.piOverPool,
        poolThreads: options.threads,
        runSession: (turns, onBatch) => runPiHarnessSession(pooledTools, turns, onBatch),
      },
      {
        name: harnessContenders.piscina,
        poolThreads: options.threads,
        runSession: (turns, onBatch) => runPiscinaSession(piscina, moduleUrls, turns, onBatch),
      },
    ];
    const sessions = Array.from({ length: options.sessions }, (_, session) =>
      createSessionTurns(corpus, session, options.turns, options.callsPerTurn, options.corpus.seed),
    );
    const inlineCallMs = await timeInlineCalls(modules, sessions);
    const samples = new Map(contenders.map((c) => [c.name, [] as HarnessSample[]]));
    const runMs = (count: number) => (estimateHarnessLoadMs({ ...options, warmups: 0, reps: 1 }) * count) / options.sessions;
    for (let rep = 0; rep < options.warmups; rep++) {
      for (const contender of rotate(contenders, rep)) await measureRun(contender, sessions.slice(0, options.warmupSessions));
      advanceProgress(runMs(options.warmupSessions), `harness: warm-up ${rep + 1}/${options.warmups} done`);
    }
    for (let rep = 0; rep < options.reps; rep++) {
      for (const contender of rotate(contenders, rep)) samples.get(contender.name)!.push(await measureRun(contender, sessions));
      advanceProgress(runMs(options.sessions), `harness: rep ${rep + 1}/${options.reps} done`);
    }
    const figures = contenders.map(({ name }) => summarizeHarness(name, samples.get(name)!));
    const ours = figures.find((f) => f.name === harnessContenders.toolpool)!;
    const pi = figures.find((f) => f.name === harnessContenders.pi)!;
    return {
      options,
      corpus: { files: corpus.files.length * 2, bytes: corpus.bytes },
      callsPerRun: options.sessions * options.turns * options.callsPerTurn,
      cores: availableParallelism(),
      inlineCallMs,
      contenders: figures,
      throughputRatio: ours.callsPerSecond.median / pi.callsPerSecond.median,
      pairedThroughputRatios: summarize(ours.samples.map((s, index) => s.callsPerSecond / pi.samples[index]!.callsPerSecond)),
    };
  } finally {
    await Promise.all([runtime.close(), fifoRuntime.close(), piscina.close()]);
    corpus.remove();
  }
}

const neverAborted = new AbortController().signal;
const ignoreUpdate = (): void => {};

async function runToolpoolSession(
  runtime: Runtime,
  turns: readonly CorpusToolCall[][],
  onBatch: (ms: number) => void,
  session: number,
): Promise<void> {
  const sessionKey = `session-${session}`;
  for (const calls of turns) {
    const start = performance.now();
    const { messages } = await runtime.executeToolCalls({ role: "assistant", content: calls }, { sessionKey });
    onBatch(performance.now() - start);
    checkMessages(harnessContenders.toolpool, messages);
  }
}

async function runPiscinaSession(
  piscina: Piscina,
  moduleUrls: ReadonlyMap<string, string>,
  turns: readonly CorpusToolCall[][],
  onBatch: (ms: number) => void,
): Promise<void> {
  for (const calls of turns) {
    const start = performance.now();
    await Promise.all(calls.map((call) => piscina.run({ moduleUrl: moduleUrls.get(call.name)!, toolCallId: call.id, args: call.arguments })));
    onBatch(performance.now() - start);
  }
}

async function runPiHarnessSession(tools: PiAgentTool[], turns: readonly CorpusToolCall[][], onBatch: (ms: number) => void): Promise<void> {
  let batchStart = 0;
  const run = await runPiSession(tools, turns as PiToolCall[][], (event) => {
    if (event.type === "message_end" && event.message.role === "assistant" && event.message.stopReason === "toolUse") batchStart = performance.now();
    else if (event.type === "turn_end" && event.toolResults.length > 0) onBatch(performance.now() - batchStart);
  });
  checkMessages("pi", run.toolResults);
  const expected = turns.reduce((sum, calls) => sum + calls.length, 0);
  if (run.toolResults.length !== expected) throw new Error(`pi session: expected ${expected} tool results, got ${run.toolResults.length}`);
}

/** Every call of the workload is valid: an error result means the bench itself is broken. */
function checkMessages(name: string, messages: readonly { isError: boolean; content: unknown }[]): void {
  const failed = messages.find((message) => message.isError);
  if (failed !== undefined) throw new Error(`${name}: a harness call failed: ${JSON.stringify(failed.content).slice(0, 400)}`);
}

/** All sessions at once; RSS sampled every 10 ms, plus at the end. */
async function measureRun(contender: Contender, sessions: readonly CorpusToolCall[][][]): Promise<HarnessSample> {
  const batchMs: number[] = [];
  const sessionMs: number[] = [];
  const rssStart = process.memoryUsage.rss();
  let peakRss = rssStart;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  }, 10);
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  const cpuStart = process.cpuUsage();
  const loopStart = performance.eventLoopUtilization();
  const threadsStart = readThreadCpuMs();
  const start = performance.now();
  await Promise.all(
    sessions.map(async (turns, session) => {
      await contender.runSession(turns, (ms) => batchMs.push(ms), session);
      sessionMs.push(performance.now() - start);
    }),
  );
  const wallMs = performance.now() - start;
  const loop = performance.eventLoopUtilization(loopStart);
  const cpu = process.cpuUsage(cpuStart);
  const threadsEnd = readThreadCpuMs();
  histogram.disable();
  clearInterval(sampler);
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
  const calls = sessions.reduce((sum, turns) => sum + turns.reduce((count, batch) => count + batch.length, 0), 0);
  const slowest = Math.max(...sessionMs);
  const fastest = Math.min(...sessionMs);
  return {
    wallMs,
    callsPerSecond: calls / (wallMs / 1000),
    batchP50Ms: percentile(batchMs, 50),
    batchP99Ms: percentile(batchMs, 99),
    fairness: slowest / fastest,
    slowestSessionMs: slowest,
    fastestSessionMs: fastest,
    peakRssMiB: peakRss / 2 ** 20,
    rssGrowthMiB: (peakRss - rssStart) / 2 ** 20,
    loopDelayP99Ms: histogram.count > 0 ? histogram.percentile(99) / 1e6 : wallMs,
    cpuUsPerCall: (cpu.user + cpu.system) / calls,
    mainUsPerCall: (loop.active * 1000) / calls,
    ...(threadsStart === undefined || threadsEnd === undefined
      ? {}
      : { threadUsPerCall: perCall(splitThreadCpu(threadsStart, threadsEnd, contender.poolThreads), calls) }),
  };
}

function summarizeHarness(name: string, samples: HarnessSample[]): HarnessContenderFigures {
  const of = (pick: (s: HarnessSample) => number) => summarize(samples.map(pick));
  return {
    name,
    samples,
    callsPerSecond: of((s) => s.callsPerSecond),
    batchP50: of((s) => s.batchP50Ms),
    batchP99: of((s) => s.batchP99Ms),
    fairness: of((s) => s.fairness),
    peakRssMiB: of((s) => s.peakRssMiB),
    rssGrowthMiB: of((s) => s.rssGrowthMiB),
    loopDelayP99: of((s) => s.loopDelayP99Ms),
    cpuUsPerCall: of((s) => s.cpuUsPerCall),
    mainUsPerCall: of((s) => s.mainUsPerCall),
    ...(samples.every((s) => s.threadUsPerCall !== undefined)
      ? {
          threadUsPerCall: {
            main: of((s) => s.threadUsPerCall!.main),
            pool: of((s) => s.threadUsPerCall!.pool),
            other: of((s) => s.threadUsPerCall!.other),
          },
        }
      : {}),
  };
}

/** A run's CPU by thread, in µs per call. */
function perCall(split: ThreadCpuSplit, calls: number): { main: number; pool: number; other: number } {
  return { main: (split.mainMs * 1000) / calls, pool: (split.poolMs * 1000) / calls, other: (split.otherMs * 1000) / calls };
}

/** The workload's cost per tool, run inline over the first few sessions: what a call weighs. */
async function timeInlineCalls(modules: ReadonlyMap<string, ToolModule>, sessions: readonly CorpusToolCall[][][]): Promise<Record<string, number>> {
  const times = new Map<string, number[]>();
  const ctx = { toolCallId: "timing", signal: neverAborted, onUpdate: ignoreUpdate };
  for (const turns of sessions.slice(0, 10)) {
    for (const call of turns.flat()) {
      const start = performance.now();
      await modules.get(call.name)!.execute(call.arguments, ctx);
      const list = times.get(call.name) ?? [];
      list.push(performance.now() - start);
      times.set(call.name, list);
    }
  }
  return Object.fromEntries([...times].map(([name, list]) => [name, list.reduce((a, b) => a + b, 0) / list.length]));
}
