/**
 * What this machine allows, without toolpool or pi: the floor under three of
 * `bench:coding`'s targets, measured with bare Node code doing the least the
 * target's work needs.
 *
 *   npm run bench:floor [-- --seconds 3 --images-per-second 40 --reads 12 --json]
 *
 * - **Child processes and the main thread.** A main thread that does nothing
 *   but keep time (`monitorEventLoopDelay`, 1 ms resolution) while two shells
 *   run beside it: nothing; two busy loops (user-space CPU only); two shells
 *   that start `/bin/true` over and over (kernel work: fork, exec, exit), at
 *   nice 0, 5 (a pool thread's children), 19, and as `SCHED_IDLE` (`chrt`).
 *   The io mix's target is the main thread's loop delay p99 ≤ 5 ms while
 *   bash, ripgrep and fd run; if the fork loops alone raise an idle main
 *   thread's p99, whatever their priority, that part of the delay is the
 *   kernel's, not the main thread's work.
 * - **Image strings on the main thread.** Two worker threads post base64
 *   strings of the images mix's two screenshots as pi's read returns them
 *   (their bytes as base64: 2.0 MB and 692 KB), together `--images-per-second` a
 *   second (the rate toolpool reaches in that mix), sleeping in between, so
 *   the cores are idle but for the strings. The main thread only keeps them
 *   (the last 16, as results kept in a session). Two ways: the string in the
 *   message, as a worker's result crosses now; and the bytes moved (no copy)
 *   and made into a string on the main thread one per macrotask, the least a
 *   string result can cost there. Reports the loop delay and the main
 *   thread's GC pauses (`PerformanceObserver`).
 * - **Memory-bound work on two cores.** Reading TypeScript's `typescript.js`
 *   (9 MB) and splitting it into lines, which is what pi's read does with a
 *   large file: per read, one thread alone, two threads at once, two
 *   processes at once. The speed-up of two over one bounds what a pool of
 *   two can gain over pi's one main thread on the cpu mix's reads.
 *
 * @module
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism, cpus, loadavg } from "node:os";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";

import { percentile, summarize, type Summary } from "./lib/stats.js";

/** Loop delay over one stretch, in ms. */
export interface DelayFigures {
  p50: number;
  p99: number;
  max: number;
}

export interface NeighbourRow extends DelayFigures {
  /** What ran beside the idle main thread. */
  neighbours: string;
}

export interface ImageRow extends DelayFigures {
  mode: "string in the message" | "bytes moved, one string per macrotask";
  imagesPerSecond: number;
  /** The main thread's GC pauses, ms. */
  gcPauses: { count: number; p90: number; max: number; totalMs: number };
  /** Making each string on the main thread, ms (the bytes mode only). */
  stringMs?: { p50: number; p90: number; max: number };
}

export interface MemoryRow {
  how: "one thread alone" | "two threads at once" | "two processes at once" | "compute only: two threads at once";
  /** ms per read (per loop for compute only), medians across the reads. */
  msPerRead: Summary;
  /** Reads done per ms of wall time, over one alone's: 2.0 would be perfect for two. */
  speedUp: number;
}

export interface FloorResult {
  node: string;
  cores: number;
  cpu: string;
  load: number;
  kernel: { preempt: string | undefined; hz: string | undefined };
  neighbours: NeighbourRow[];
  images: ImageRow[];
  memory: MemoryRow[];
}

const require = createRequire(import.meta.url);
const thisFile = fileURLToPath(import.meta.url);
const keptStrings = 16;

function delayFiguresOf(histogram: ReturnType<typeof monitorEventLoopDelay>): DelayFigures {
  return { p50: histogram.percentile(50) / 1e6, p99: histogram.percentile(99) / 1e6, max: histogram.max / 1e6 };
}

/** The kernel's preemption model and tick rate, where `/proc/config.gz` or `/boot` says them. */
function kernelConfig(): FloorResult["kernel"] {
  let text = "";
  const config = spawnSync("sh", ["-c", "zcat /proc/config.gz 2>/dev/null || cat /boot/config-$(uname -r) 2>/dev/null"], { encoding: "utf8" });
  if (config.status === 0) text = config.stdout;
  const preempt = /^CONFIG_PREEMPT_(NONE|VOLUNTARY|RT)=y$/m.exec(text)?.[1] ?? (/^CONFIG_PREEMPT=y$/m.test(text) ? "FULL" : undefined);
  return { preempt, hz: /^CONFIG_HZ=(\d+)$/m.exec(text)?.[1] };
}

// ---------------------------------------------------------------------------
// Child processes beside an idle main thread

interface Neighbours {
  label: string;
  /** The shell loop's body; undefined: nothing runs. */
  body?: string;
  nice?: number;
  /** A command put in front (chrt). */
  prefix?: string[];
}

function startNeighbour(neighbours: Neighbours): ChildProcess {
  const command = [...(neighbours.prefix ?? []), "nice", "-n", String(neighbours.nice ?? 0), "sh", "-c", `while :; do ${neighbours.body}; done`];
  return spawn(command[0]!, command.slice(1), { stdio: "ignore", detached: true });
}

async function measureNeighbours(neighbours: Neighbours, seconds: number): Promise<NeighbourRow> {
  const children = neighbours.body === undefined ? [] : [startNeighbour(neighbours), startNeighbour(neighbours)];
  try {
    await sleep(300);
    const histogram = monitorEventLoopDelay({ resolution: 1 });
    histogram.enable();
    await sleep(seconds * 1000);
    histogram.disable();
    return { neighbours: neighbours.label, ...delayFiguresOf(histogram) };
  } finally {
    for (const child of children) {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    await sleep(200);
  }
}

function hasChrt(): boolean {
  return spawnSync("chrt", ["-i", "0", "true"]).status === 0;
}

// ---------------------------------------------------------------------------
// Image strings posted to the main thread

interface ImageWorkerData {
  role: "images";
  mode: ImageRow["mode"];
  /** ms between two results of this worker. */
  intervalMs: number;
  count: number;
}

/** The two screenshots of the images mix; pi's read returns each file's bytes as base64 (692 KB and 2.0 MB). */
const screenshots = ["exy.png", "interactive-mode.png"];
/** Their sizes, where pi's package is not installed. */
const screenshotBytes = [1_510_779, 519_083];

function screenshotBytesOf(index: number): Buffer {
  try {
    return readFileSync(new URL(`../node_modules/@earendil-works/pi-coding-agent/docs/images/${screenshots[index]}`, import.meta.url));
  } catch {
    return randomBytes(screenshotBytes[index]!);
  }
}

async function imageWorker(data: ImageWorkerData): Promise<void> {
  const raws = screenshots.map((_, index) => screenshotBytesOf(index));
  for (let index = 0; index < data.count; index++) {
    await sleep(data.intervalMs);
    const text = raws[index % raws.length]!.toString("base64");
    if (data.mode === "string in the message") {
      parentPort!.postMessage({ text });
    } else {
      const bytes = Buffer.from(text, "latin1");
      // A buffer this large has an ArrayBuffer of its own, which is moved.
      const buffer = bytes.buffer as ArrayBuffer;
      parentPort!.postMessage({ bytes: buffer, offset: bytes.byteOffset, length: bytes.length }, [buffer]);
    }
  }
  parentPort!.postMessage({ done: true });
}

async function measureImages(mode: ImageRow["mode"], imagesPerSecond: number, seconds: number): Promise<ImageRow> {
  const workers = 2;
  const count = Math.max(4, Math.round((imagesPerSecond * seconds) / workers));
  const intervalMs = (1000 * workers) / imagesPerSecond;
  const gcPauses: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcPauses.push(entry.duration);
  });
  observer.observe({ entryTypes: ["gc"] });
  const kept: string[] = [];
  const keep = (text: string) => {
    kept.push(text);
    if (kept.length > keptStrings) kept.shift();
  };
  const stringMs: number[] = [];
  const pending: { bytes: ArrayBuffer; offset: number; length: number }[] = [];
  let isDraining = false;
  const drainOne = () => {
    const next = pending.shift()!;
    const started = performance.now();
    keep(Buffer.from(next.bytes, next.offset, next.length).toString("latin1"));
    stringMs.push(performance.now() - started);
    if (pending.length > 0) setImmediate(drainOne);
    else isDraining = false;
  };
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      const worker = new Worker(thisFile, { workerData: { role: "images", mode, intervalMs, count } satisfies ImageWorkerData });
      await new Promise<void>((resolve, reject) => {
        worker.on("error", reject);
        worker.on("message", (message: { text?: string; bytes?: ArrayBuffer; offset: number; length: number; done?: true }) => {
          if (message.done === true) resolve();
          else if (message.text !== undefined) keep(message.text);
          else {
            pending.push({ bytes: message.bytes!, offset: message.offset, length: message.length });
            if (!isDraining) {
              isDraining = true;
              setImmediate(drainOne);
            }
          }
        });
      });
      await worker.terminate();
    }),
  );
  while (isDraining) await sleep(5);
  histogram.disable();
  observer.disconnect();
  const q = (values: number[], p: number) => (values.length === 0 ? 0 : percentile(values, p));
  return {
    mode,
    imagesPerSecond,
    ...delayFiguresOf(histogram),
    gcPauses: { count: gcPauses.length, p90: q(gcPauses, 90), max: q(gcPauses, 100), totalMs: gcPauses.reduce((sum, ms) => sum + ms, 0) },
    ...(stringMs.length === 0 ? {} : { stringMs: { p50: q(stringMs, 50), p90: q(stringMs, 90), max: q(stringMs, 100) } }),
  };
}

// ---------------------------------------------------------------------------
// Memory-bound reads on one and two cores

interface SplitWorkerData {
  role: "split" | "compute";
  reads: number;
  path: string;
}

/** pi's read of a large file, its heavy part: the whole file as text, split into lines, a page of them kept. */
function readAndSplit(path: string): number {
  const lines = readFileSync(path).toString("utf8").split("\n");
  return lines.slice(0, 2000).join("\n").length;
}

function computeOnly(): number {
  let x = 0;
  for (let i = 0; i < 30_000_000; i++) x = (x * 31 + i) | 0;
  return x;
}

/** ms per read (or compute loop), `reads` of them back to back. */
function timeReads(role: SplitWorkerData["role"], reads: number, path: string): number[] {
  const times: number[] = [];
  for (let index = 0; index < reads; index++) {
    const started = performance.now();
    if (role === "split") readAndSplit(path);
    else computeOnly();
    times.push(performance.now() - started);
  }
  return times;
}

function runSplitWorker(data: SplitWorkerData): Promise<number[]> {
  const worker = new Worker(thisFile, { workerData: data });
  return new Promise((resolve, reject) => {
    worker.once("error", reject);
    worker.once("message", (times: number[]) => resolve(times));
  });
}

function runSplitProcess(reads: number, path: string): Promise<number[]> {
  const child = spawn(process.execPath, [thisFile, "--child-split", String(reads), "--path", path], { stdio: ["ignore", "pipe", "inherit"] });
  let output = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolve(JSON.parse(output) as number[]) : reject(new Error(`split child exited ${code}`))));
  });
}

async function measureMemory(reads: number): Promise<MemoryRow[]> {
  const path = require.resolve("typescript/lib/typescript.js");
  // Warm the page cache and each kind of run once.
  readAndSplit(path);
  const alone = (await runSplitWorker({ role: "split", reads, path })).slice(1);
  const twoThreads = (await Promise.all([runSplitWorker({ role: "split", reads, path }), runSplitWorker({ role: "split", reads, path })])).flatMap(
    (times) => times.slice(1),
  );
  const twoProcesses = (await Promise.all([runSplitProcess(reads, path), runSplitProcess(reads, path)])).flatMap((times) => times.slice(1));
  const computeAlone = (await runSplitWorker({ role: "compute", reads: 6, path })).slice(1);
  const computeTwo = (
    await Promise.all([runSplitWorker({ role: "compute", reads: 6, path }), runSplitWorker({ role: "compute", reads: 6, path })])
  ).flatMap((times) => times.slice(1));
  const aloneMs = summarize(alone).median;
  const row = (how: MemoryRow["how"], times: number[], oneMs: number): MemoryRow => {
    const msPerRead = summarize(times);
    return { how, msPerRead, speedUp: (2 * oneMs) / msPerRead.median };
  };
  return [
    { how: "one thread alone", msPerRead: summarize(alone), speedUp: 1 },
    row("two threads at once", twoThreads, aloneMs),
    row("two processes at once", twoProcesses, aloneMs),
    row("compute only: two threads at once", computeTwo, summarize(computeAlone).median),
  ];
}

// ---------------------------------------------------------------------------

export async function runFloor(seconds: number, imagesPerSecond: number, reads: number): Promise<FloorResult> {
  const chrt = hasChrt();
  const neighbourRuns: Neighbours[] = [
    { label: "nothing" },
    { label: "two busy loops, nice 5", body: ":", nice: 5 },
    { label: "two fork loops, nice 0", body: "/bin/true", nice: 0 },
    { label: "two fork loops, nice 5", body: "/bin/true", nice: 5 },
    { label: "two fork loops, nice 19", body: "/bin/true", nice: 19 },
    ...(chrt ? [{ label: "two fork loops, SCHED_IDLE", body: "/bin/true", nice: 0, prefix: ["chrt", "-i", "0"] }] : []),
  ];
  const neighbours: NeighbourRow[] = [];
  for (const run of neighbourRuns) neighbours.push(await measureNeighbours(run, seconds));
  const images: ImageRow[] = [];
  for (const mode of ["string in the message", "bytes moved, one string per macrotask"] as const) {
    images.push(await measureImages(mode, imagesPerSecond, seconds));
  }
  return {
    node: process.version,
    cores: availableParallelism(),
    cpu: cpus()[0]?.model ?? "unknown",
    load: loadavg()[0] ?? 0,
    kernel: kernelConfig(),
    neighbours,
    images,
    memory: await measureMemory(reads),
  };
}

export function renderFloor(result: FloorResult): string[] {
  const ms = (value: number) => value.toFixed(2);
  const lines = [
    `## What this machine allows (Node ${result.node}, ${result.cores} cores, ${result.cpu}, load ${result.load.toFixed(1)}; kernel preemption ${result.kernel.preempt ?? "unknown"}, HZ ${result.kernel.hz ?? "unknown"})`,
    "",
    "### An idle main thread's loop delay beside two shells (ms)",
    "",
    "| beside it | p50 | p99 | max |",
    "|---|---:|---:|---:|",
    ...result.neighbours.map((row) => `| ${row.neighbours} | ${ms(row.p50)} | ${ms(row.p99)} | ${ms(row.max)} |`),
    "",
    `### Image strings (the two screenshots' base64, 2.0 MB and 692 KB) posted by two worker threads, ${result.images[0]?.imagesPerSecond ?? 0} a second (ms)`,
    "",
    "| how they cross | loop delay p50 | p99 | max | GC pauses: count / p90 / max / total | making one string: p50 / p90 / max |",
    "|---|---:|---:|---:|---|---|",
    ...result.images.map(
      (row) =>
        `| ${row.mode} | ${ms(row.p50)} | ${ms(row.p99)} | ${ms(row.max)} | ${row.gcPauses.count} / ${ms(row.gcPauses.p90)} / ${ms(row.gcPauses.max)} / ${row.gcPauses.totalMs.toFixed(0)} | ${row.stringMs === undefined ? "—" : `${ms(row.stringMs.p50)} / ${ms(row.stringMs.p90)} / ${ms(row.stringMs.max)}`} |`,
    ),
    "",
    "### Reading `typescript.js` (9 MB) and splitting it into lines",
    "",
    "| how | ms per read: median [min–max] | speed-up over one alone (2.00 is perfect) |",
    "|---|---|---:|",
    ...result.memory.map(
      (row) =>
        `| ${row.how} | ${row.msPerRead.median.toFixed(1)} [${row.msPerRead.min.toFixed(1)}–${row.msPerRead.max.toFixed(1)}] | ${row.speedUp.toFixed(2)} |`,
    ),
    "",
  ];
  return lines;
}

if (!isMainThread) {
  const data = workerData as ImageWorkerData | SplitWorkerData;
  if (data.role === "images") await imageWorker(data);
  else parentPort!.postMessage(timeReads(data.role, data.reads, data.path));
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      seconds: { type: "string", default: "3" },
      "images-per-second": { type: "string", default: "40" },
      reads: { type: "string", default: "12" },
      json: { type: "boolean" },
      "child-split": { type: "string" },
      path: { type: "string" },
    },
  });
  if (values["child-split"] !== undefined) {
    process.stdout.write(JSON.stringify(timeReads("split", Number(values["child-split"]), values.path!)));
  } else {
    const numberOf = (name: string, text: string) => {
      const value = Number(text);
      if (!(value > 0)) throw new Error(`--${name}: expected a number above 0, got ${JSON.stringify(text)}`);
      return value;
    };
    const result = await runFloor(
      numberOf("seconds", values.seconds),
      numberOf("images-per-second", values["images-per-second"]),
      Math.max(2, Math.round(numberOf("reads", values.reads))),
    );
    console.log(values.json === true ? JSON.stringify(result) : renderFloor(result).join("\n"));
  }
}
