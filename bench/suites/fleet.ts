/**
 * Fleet: remote calls through Redis (BullMQ) to `toolpool node` processes on
 * this machine, side by side with the local pool. Loopback only: what it
 * measures is toolpool's and Redis's cost per call, not a network.
 *
 * - no-op round trip, one call at a time: local pool vs one node;
 * - no-op calls/s with 64 in flight: local pool vs one node;
 * - an 8 × ~100 ms CPU batch: local 2-thread pool vs 2 nodes × 1 thread;
 * - node-loss detection: SIGKILL of the node running a call → TP_ERR_NODE_LOST;
 * - Redis commands and Redis CPU per call (INFO commandstats / cpu deltas).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { Redis } from "ioredis";
import { createRuntime, type AssistantMessage, type Runtime } from "toolpool";

import { advanceProgress, logStep } from "../lib/progress.js";
import { percentile, summarize, type Summary } from "../lib/stats.js";
import fleetBenchTools from "../tools/fleet-tools.js";
import type { SpinCalibration } from "./cpu-batch.js";

export interface FleetOptions {
  serialCalls: number;
  inFlightCalls: number;
  concurrency: number;
  cpuReps: number;
  lossReps: number;
  /** The lock and stall settings of the node-loss measurement. */
  lockMs: number;
  stalledMs: number;
  spin: SpinCalibration;
}

export interface FleetRoundTrip {
  where: "local" | "remote";
  /** ms per call, one at a time. */
  p50: number;
  p90: number;
  p99: number;
}

export interface FleetResult {
  options: Omit<FleetOptions, "spin"> & { spinMs: number };
  /** Why the suite did not run (no redis-server), if it did not. */
  skipped?: string;
  roundTrip: FleetRoundTrip[];
  /** calls/s with `concurrency` in flight, each rep. */
  throughput: { where: "local" | "remote"; callsPerSecond: Summary }[];
  /** ms of the CPU batch, each rep; ratio = remote median / local median. */
  cpuBatch: { localMs: Summary; remoteMs: Summary; ratio: number };
  /** ms from SIGKILL to the call's TP_ERR_NODE_LOST result, and the bound lock + 2 × stall + 1 s. */
  nodeLoss: { detectionMs: number[]; boundMs: number };
  /** Redis work per remote call, at `concurrency` in flight and one at a time. */
  redisPerCall: { mode: "inFlight" | "serial"; commands: number; redisCpuUs: number }[];
}

const cli = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
const toolsModule = fileURLToPath(new URL("../tools/fleet-tools.js", import.meta.url));

const callOf = (id: string, name: string, args: Record<string, unknown> = {}): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "toolCall", id, name, arguments: args }],
});

/** Expected duration, for the progress bar. */
export function estimateFleetMs(options: Omit<FleetOptions, "spin">): number {
  return (
    5_000 +
    options.serialCalls * 4 +
    options.inFlightCalls * 1.5 +
    options.cpuReps * 2 * 450 +
    options.lossReps * (options.lockMs + 2 * options.stalledMs + 1_500)
  );
}

export async function runFleetSuite(options: FleetOptions): Promise<FleetResult> {
  const { spin, ...rest } = options;
  const result: FleetResult = {
    options: { ...rest, spinMs: spin.targetMs },
    roundTrip: [],
    throughput: [],
    cpuBatch: { localMs: summarize([0]), remoteMs: summarize([0]), ratio: Number.NaN },
    nodeLoss: { detectionMs: [], boundMs: options.lockMs + 2 * options.stalledMs + 1_000 },
    redisPerCall: [],
  };
  if (spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status !== 0) {
    result.skipped = "redis-server is not installed (apt-get install redis-server)";
    advanceProgress(estimateFleetMs(rest), "fleet skipped");
    return result;
  }
  const redis = await startRedis();
  const nodes: ChildProcess[] = [];
  const runtimes: Runtime[] = [];
  const fleet = (lockMs = 10_000, stalledMs = 5_000) => {
    const runtime = createRuntime({ tools: fleetBenchTools, fleet: { redis: redis.url, lockDurationMs: lockMs, stalledIntervalMs: stalledMs } });
    runtimes.push(runtime);
    return runtime;
  };
  const local = createRuntime({ tools: fleetBenchTools, pool: { maxThreads: 2, minThreads: 2 } });
  runtimes.push(local);
  const startNode = async (name: string, extra: string[]) => {
    const node = await spawnNode(redis.url, name, extra);
    nodes.push(node);
    return node;
  };
  const stopAll = async () => {
    await Promise.all(nodes.splice(0).map((node) => killAndWait(node, "SIGTERM")));
  };
  try {
    // 1 and 2: no-op calls on one node (2 threads, 64 taken from the queue at once) vs the local 2-thread pool.
    logStep("fleet: no-op round trip and 64 in flight, local vs one node");
    await startNode("bench-1", ["--threads", "2", "--concurrency", String(options.concurrency)]);
    const remote = fleet();
    const admin = redis.client;
    for (const [where, runtime] of [
      ["local", local],
      ["remote", remote],
    ] as const) {
      await serial(runtime, 50);
      if (where === "remote") await resetStats(admin);
      const times = await serial(runtime, options.serialCalls);
      if (where === "remote") result.redisPerCall.push({ mode: "serial", ...(await perCall(admin, options.serialCalls)) });
      result.roundTrip.push({ where, p50: percentile(times, 50), p90: percentile(times, 90), p99: percentile(times, 99) });
    }
    advanceProgress(options.serialCalls * 4, "fleet: round trips done");
    const rates: Record<"local" | "remote", number[]> = { local: [], remote: [] };
    for (let rep = 0; rep < 3; rep++) {
      for (const [where, runtime] of [
        ["local", local],
        ["remote", remote],
      ] as const) {
        if (where === "remote" && rep === 0) await resetStats(admin);
        rates[where].push(await inFlight(runtime, options.inFlightCalls, options.concurrency));
        if (where === "remote" && rep === 0) result.redisPerCall.unshift({ mode: "inFlight", ...(await perCall(admin, options.inFlightCalls)) });
      }
    }
    result.throughput = (["local", "remote"] as const).map((where) => ({ where, callsPerSecond: summarize(rates[where]) }));
    advanceProgress(options.inFlightCalls * 1.5, "fleet: throughput done");
    await stopAll();

    // 3: the CPU batch, on 2 nodes × 1 thread vs the local 2-thread pool.
    logStep(`fleet: 8 × ${spin.targetMs} ms CPU batch, local 2 threads vs 2 nodes × 1 thread`);
    await Promise.all([startNode("cpu-1", ["--threads", "1"]), startNode("cpu-2", ["--threads", "1"])]);
    const cpuRemote = fleet();
    const batch: AssistantMessage = {
      role: "assistant",
      content: Array.from({ length: 8 }, (_, index) => ({
        type: "toolCall" as const,
        id: `s${index}`,
        name: "spin",
        arguments: { iterations: spin.iterations },
      })),
    };
    const localMs: number[] = [];
    const remoteMs: number[] = [];
    await Promise.all([local.executeToolCalls(batch), cpuRemote.executeToolCalls(batch)]);
    for (let rep = 0; rep < options.cpuReps; rep++) {
      for (const [runtime, times] of [
        [local, localMs],
        [cpuRemote, remoteMs],
      ] as const) {
        const started = performance.now();
        const { messages } = await runtime.executeToolCalls(batch);
        if (messages.some((message) => message.isError)) throw new Error("a CPU call failed");
        times.push(performance.now() - started);
      }
    }
    result.cpuBatch = { localMs: summarize(localMs), remoteMs: summarize(remoteMs), ratio: summarize(remoteMs).median / summarize(localMs).median };
    advanceProgress(options.cpuReps * 900, "fleet: CPU batch done");
    await stopAll();

    // 4: node loss, with the short settings.
    logStep(`fleet: node-loss detection, lock ${options.lockMs} ms / stall ${options.stalledMs} ms`);
    const lossRuntime = fleet(options.lockMs, options.stalledMs);
    for (let rep = 0; rep < options.lossReps; rep++) {
      const node = await startNode(`loss-${rep}`, [
        "--threads",
        "1",
        "--lock-duration",
        String(options.lockMs),
        "--stalled-interval",
        String(options.stalledMs),
      ]);
      const pending = lossRuntime.executeToolCalls(callOf(`l${rep}`, "wait", { ms: 600_000 }));
      // Wait until the node holds the call (its job is active), then kill it.
      await waitForActive(admin);
      const killedAt = performance.now();
      await killAndWait(node, "SIGKILL");
      const { messages } = await pending;
      const code = (messages[0]!.details as { code?: string }).code;
      if (code !== "TP_ERR_NODE_LOST") throw new Error(`expected TP_ERR_NODE_LOST, got ${code}`);
      result.nodeLoss.detectionMs.push(performance.now() - killedAt);
      nodes.splice(nodes.indexOf(node), 1);
    }
    advanceProgress(options.lossReps * (options.lockMs + 2 * options.stalledMs + 1_500), "fleet: node loss done");
  } finally {
    await Promise.all(runtimes.map((runtime) => runtime.close({ force: true })));
    await stopAll();
    await redis.stop();
  }
  return result;
}

async function serial(runtime: Runtime, calls: number): Promise<number[]> {
  const times: number[] = [];
  for (let index = 0; index < calls; index++) {
    const started = performance.now();
    const { messages } = await runtime.executeToolCalls(callOf(`n${index}`, "noop"));
    if (messages[0]!.isError) throw new Error(`a no-op call failed: ${JSON.stringify(messages[0]!.content)}`);
    times.push(performance.now() - started);
  }
  return times;
}

/** calls/s of `calls` one-call batches, `concurrency` at a time. */
async function inFlight(runtime: Runtime, calls: number, concurrency: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < calls) {
        const index = next++;
        const { messages } = await runtime.executeToolCalls(callOf(`f${index}`, "noop"));
        if (messages[0]!.isError) throw new Error(`a no-op call failed: ${JSON.stringify(messages[0]!.content)}`);
      }
    }),
  );
  return calls / ((performance.now() - started) / 1_000);
}

async function resetStats(admin: Redis): Promise<void> {
  await admin.config("RESETSTAT");
  redisCpuAtReset = await redisCpu(admin);
}

let redisCpuAtReset = 0;

async function redisCpu(admin: Redis): Promise<number> {
  const info = await admin.info("cpu");
  const field = (name: string) => Number(new RegExp(`^used_cpu_${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? 0);
  return field("sys") + field("user");
}

/** Commands and Redis CPU since the last reset, per call (the bench's own INFO/CONFIG commands excluded). */
async function perCall(admin: Redis, calls: number): Promise<{ commands: number; redisCpuUs: number }> {
  const stats = await admin.info("commandstats");
  let commands = 0;
  for (const match of stats.matchAll(/^cmdstat_([a-z|_-]+):calls=(\d+)/gm)) {
    if (!["info", "config"].includes(match[1]!)) commands += Number(match[2]);
  }
  const cpu = (await redisCpu(admin)) - redisCpuAtReset;
  return { commands: commands / calls, redisCpuUs: (cpu * 1e6) / calls };
}

async function waitForActive(admin: Redis): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const keys = await admin.keys("toolpool:tp-*:active");
    for (const key of keys) if ((await admin.llen(key)) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the call never became active on the node");
}

function spawnNode(redisUrl: string, name: string, extra: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, [cli, "node", "--redis", redisUrl, "--tools", toolsModule, "--name", name, ...extra], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (line.startsWith("node ready")) resolve(child);
    });
    child.once("exit", (code) => reject(new Error(`node ${name} exited with ${code} before it was ready`)));
  });
}

function killAndWait(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill(signal);
  return exited;
}

async function startRedis(): Promise<{ url: string; client: Redis; stop: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "toolpool-bench-redis-"));
  const port = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
  const child = spawn(
    "redis-server",
    ["--bind", "127.0.0.1", "--port", String(port), "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction", "--dir", dir],
    {
      stdio: "ignore",
    },
  );
  const client = new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: null, retryStrategy: (attempt) => Math.min(attempt * 50, 500) });
  client.on("error", () => {});
  await client.ping();
  return {
    url: `redis://127.0.0.1:${port}`,
    client,
    stop: async () => {
      client.disconnect();
      await killAndWait(child, "SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
