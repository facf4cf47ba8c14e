import { BroadcastChannel } from "node:worker_threads";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

import { createRuntime, workerTool, type BatchEvent, type ToolResultMessage } from "toolpool";
import { batch, type CallSpec, textOf } from "./helpers.js";

const faults = new URL("../fixtures/tools/faults.mjs", import.meta.url);
// A module that throws while loading: every call of it fails with TP_ERR_TOOL_LOAD (a missing one is refused by createRuntime).
const missing = new URL("../fixtures/tools/broken-module.mjs", import.meta.url);
const anyArgs = { type: "object" };

/** The faults a soak injects, each with the outcome it must produce. */
export const faultKinds = [
  "exit",
  "crash",
  "rejection",
  "late-crash",
  "oom",
  "timeout",
  "abort-kill",
  "external-kill",
  "uncloneable",
  "throw-object",
  "too-large",
  "load-failure",
] as const;
export type FaultKind = (typeof faultKinds)[number];
type CallKind = "healthy" | FaultKind;

const expectedCode: Record<FaultKind, string | undefined> = {
  exit: "TP_ERR_WORKER_EXIT",
  crash: "TP_ERR_WORKER_CRASH",
  rejection: "TP_ERR_WORKER_CRASH",
  "late-crash": "TP_ERR_WORKER_CRASH",
  oom: "TP_ERR_OUT_OF_MEMORY",
  timeout: "TP_ERR_TIMEOUT",
  "abort-kill": "TP_ERR_ABORTED",
  "external-kill": "TP_ERR_WORKER_EXIT",
  uncloneable: "TP_ERR_RESULT_NOT_CLONEABLE",
  "throw-object": undefined,
  "too-large": "TP_ERR_RESULT_TOO_LARGE",
  "load-failure": "TP_ERR_TOOL_LOAD",
};

export interface SoakOptions {
  calls: number;
  seed: number;
  /** Share of calls that commit a fault. */
  faultRate: number;
  /** Agent sessions running batches at once. */
  sessions: number;
  /**
   * Milliseconds after which the soak prints, on stderr, the pools' inner
   * state and every batch still in flight, so a stall can be diagnosed from
   * CI output (set it just under the test's time limit).
   */
  watchdogMs?: number;
}

export interface SoakReport {
  calls: number;
  batches: number;
  faultsByKind: Record<string, number>;
  /** Calls without exactly one end event and one message at their place. */
  lost: number;
  duplicated: number;
  misattributed: number;
  /** Healthy calls that did not succeed with their own result. */
  healthyFailed: number;
  healthyFailures: string[];
  /** Calls of aborted batches terminated after the grace period (besides the stubborn call that caused the abort). */
  abortedByBatch: number;
  /** Faulty calls whose outcome was not the one their fault must give. */
  wrongOutcomes: string[];
  rssStart: number;
  rssEnd: number;
  /** The main thread's V8 heap in use once garbage is collected: what a leak of the runtime's own objects grows. */
  heapStart: number;
  heapEnd: number;
  wallMs: number;
}

/** mulberry32: a small seeded PRNG, so a failing soak can be replayed. */
export function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const collectGarbage: NodeJS.GCFunction = (() => {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as NodeJS.GCFunction;
})();

/**
 * The process RSS and the heap in use once garbage is collected. The last collection is V8's
 * last-resort one, which also hands back the heap pages V8 keeps pooled for
 * reuse: after a soak, Node 22's V8 keeps enough of them to pass the RSS
 * bound (resident, but retained by nothing), and an ordinary collection
 * leaves them in place.
 */
async function settledMemory(): Promise<{ rss: number; heap: number }> {
  for (let round = 0; round < 3; round++) {
    if (round < 2) collectGarbage();
    else collectGarbage({ type: "major", execution: "sync", flavor: "last-resort" });
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heap: heapUsed };
}

/**
 * Runs `calls` tool calls in seeded random batches across concurrent
 * sessions, injecting every fault kind, and audits each batch: one end event
 * and one message per call, in call order, each with its own outcome.
 */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const random = createRandom(options.seed);
  const killChannelName = `soak-kill-${process.pid}-${options.seed}`;
  const killer = new BroadcastChannel(killChannelName);
  const createSoakRuntime = () =>
    createRuntime({
      tools: [
        workerTool({ name: "ok", description: "healthy", parameters: anyArgs, module: faults }),
        // Faults that end by themselves get a generous limit: on a loaded machine a
        // worker's exit can take long to be seen, and must not pass for a timeout.
        workerTool({ name: "fault", description: "faulty", parameters: anyArgs, module: faults, timeoutMs: 10_000, maxResultBytes: 50_000 }),
        workerTool({ name: "runaway", description: "never returns", parameters: anyArgs, module: faults, timeoutMs: 500 }),
        workerTool({ name: "stubborn", description: "ignores aborts", parameters: anyArgs, module: faults }),
        workerTool({
          name: "hog",
          description: "runs out of memory",
          parameters: anyArgs,
          module: faults,
          resourceLimits: { maxOldGenerationSizeMb: 24, maxYoungGenerationSizeMb: 4 },
        }),
        workerTool({ name: "broken", description: "cannot load", parameters: anyArgs, module: missing }),
      ],
      pool: { maxThreads: 2, abortGraceMs: 200, leftoverGraceMs: 5 },
    });
  let runtime = createSoakRuntime();
  const freshCounts = () => ({
    calls: 0,
    batches: 0,
    faultsByKind: Object.fromEntries(faultKinds.map((kind) => [kind, 0])),
    lost: 0,
    duplicated: 0,
    misattributed: 0,
    healthyFailed: 0,
    healthyFailures: [] as string[],
    abortedByBatch: 0,
    wrongOutcomes: [] as string[],
  });
  const report: SoakReport = {
    ...freshCounts(),
    rssStart: 0,
    rssEnd: 0,
    heapStart: 0,
    heapEnd: 0,
    wallMs: 0,
  };
  let nextCall = 0;
  let limit = 0;

  const pickKind = (): CallKind => (random() < options.faultRate ? faultKinds[Math.floor(random() * faultKinds.length)]! : "healthy");

  const runBatch = async (session: number, batchIndex: number): Promise<void> => {
    const size = 1 + Math.floor(random() * 5);
    const planned: { id: string; kind: CallKind; value: number }[] = [];
    for (let i = 0; i < size && nextCall < limit; i++) {
      const value = nextCall++;
      planned.push({ id: `s${session}b${batchIndex}c${i}`, kind: pickKind(), value });
    }
    if (planned.length === 0) return;
    const controller = new AbortController();
    const ends = new Map<string, number>();
    const emit = (event: BatchEvent) => {
      if (event.type === "tool_execution_end") ends.set(event.toolCallId, (ends.get(event.toolCallId) ?? 0) + 1);
      if (event.type === "tool_execution_update") {
        const call = planned.find((p) => p.id === event.toolCallId);
        if (call?.kind === "abort-kill") controller.abort();
        if (call?.kind === "external-kill") killer.postMessage(call.id);
      }
    };
    const message = batch(...planned.map((call): CallSpec => [call.id, ...toolFor(call.kind, call.value, killChannelName)]));
    const batchKey = planned.map((call) => `${call.id}:${call.kind}`).join(",");
    inFlight.add(batchKey);
    const { messages } = await runtime.executeToolCalls(message, { emit, signal: controller.signal });
    inFlight.delete(batchKey);
    report.batches += 1;
    report.calls += planned.length;
    planned.forEach((call, index) => {
      const count = ends.get(call.id) ?? 0;
      if (count === 0) report.lost += 1;
      if (count > 1) report.duplicated += 1;
      const result = messages[index];
      if (result === undefined) {
        report.lost += 1;
        return;
      }
      if (result.toolCallId !== call.id) report.misattributed += 1;
      const code = (result.details as { code?: string } | undefined)?.code;
      // An aborted batch may terminate any call still running when its grace
      // period ends (the contract of abort); nothing else may fail a call.
      if (controller.signal.aborted && code === "TP_ERR_ABORTED" && call.kind !== "abort-kill") {
        report.abortedByBatch += 1;
        return;
      }
      if (call.kind === "healthy") {
        if (!isOwnHealthyResult(result, call.id, call.value)) {
          report.healthyFailed += 1;
          report.healthyFailures.push(`${call.id}: isError ${result.isError}, ${textOf(result)}`);
        }
        return;
      }
      report.faultsByKind[call.kind]! += 1;
      if (!result.isError || code !== expectedCode[call.kind]) {
        report.wrongOutcomes.push(`${call.id} (${call.kind}): isError ${result.isError}, code ${code}, ${textOf(result)}`);
      }
    });
    if (messages.length !== planned.length) report.lost += Math.max(0, planned.length - messages.length);
  };

  let batchCount = 0;
  const runSessions = (calls: number) => {
    limit = calls;
    return Promise.all(
      Array.from({ length: options.sessions }, async (_, session) => {
        while (nextCall < limit) await runBatch(session, batchCount++);
      }),
    );
  };

  // The RSS baseline: after a warm-up of the same load, faults included, on a
  // runtime of its own that is then closed. By then V8's heap and the
  // allocator have grown to what such a load needs, and no worker is alive —
  // as at the end. What differs then is memory that was kept. The warm-up is
  // up to 1000 calls: after 300, Node 26's allocator and V8 pages still grew
  // by 6–10% over the 2000 calls that followed (and no further over 10,000),
  // which left the bound no room.
  let phase = "warm-up";
  const inFlight = new Set<string>();
  const describeState = () =>
    JSON.stringify({
      seed: options.seed,
      phase,
      nextCall,
      callsAudited: report.calls,
      stats: runtime.poolStats,
      inFlight: [...inFlight],
      ...runtime.diagnose(),
    });
  const debugTicker = process.env.SOAK_DEBUG ? setInterval(() => console.log(describeState()), 5_000) : undefined;
  const watchdog =
    options.watchdogMs === undefined
      ? undefined
      : setTimeout(() => console.error(`soak watchdog: no end after ${options.watchdogMs} ms; state: ${describeState()}`), options.watchdogMs);
  watchdog?.unref();
  const warmupCalls = Math.min(options.calls, 1_000);
  await runSessions(warmupCalls);
  phase = "closing warm-up";
  await runtime.close();
  phase = "baseline";
  ({ rss: report.rssStart, heap: report.heapStart } = await settledMemory());
  phase = "soak";
  Object.assign(report, freshCounts());
  runtime = createSoakRuntime();
  nextCall = 0;
  const startedAt = performance.now();
  await runSessions(options.calls);
  report.wallMs = performance.now() - startedAt;
  phase = "closing";
  await runtime.close();
  clearInterval(debugTicker);
  clearTimeout(watchdog);
  killer.close();
  ({ rss: report.rssEnd, heap: report.heapEnd } = await settledMemory());
  return report;
}

function toolFor(kind: CallKind, value: number, channel: string): [name: string, args: Record<string, unknown>] {
  switch (kind) {
    case "healthy":
      return ["ok", { value }];
    case "oom":
      return ["hog", { fault: "oom" }];
    case "timeout":
      return ["runaway", { fault: "spin" }];
    case "abort-kill":
      return ["stubborn", { fault: "stubborn" }];
    case "external-kill":
      return ["ok", { fault: "killable", channel }];
    case "uncloneable":
      return ["fault", { fault: "function-result" }];
    case "too-large":
      return ["fault", { fault: "large-text", bytes: 60_000 }];
    case "load-failure":
      return ["broken", {}];
    case "late-crash":
      return ["fault", { fault: "late-crash", afterMs: 1 }];
    default:
      return ["fault", { fault: kind }];
  }
}

function isOwnHealthyResult(result: ToolResultMessage, id: string, value: number): boolean {
  const details = result.details as { toolCallId?: string; value?: number } | undefined;
  return !result.isError && textOf(result) === `ok ${id}` && details?.toolCallId === id && details.value === value;
}
