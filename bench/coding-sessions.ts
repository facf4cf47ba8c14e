/**
 * pi's coding tools, N agent sessions at once: pi's own agent loop (pi 1.6's
 * `runAgentLoop`, with a scripted model) calling pi's tools in process,
 * beside the same loop calling `codingTools` on a toolpool pool
 * (`runtime.agentTools()`), side by side in one run, arms interleaved.
 *
 *   npm run bench:coding [-- --sessions 8 --turns 6 --reps 3]
 *
 * Needs Node >= 22.19 (pi 1.6). Three mixes, each measured on its own:
 *   cpu     the tools' own CPU on pi's main thread dominates: reads of a 9 MB
 *           file (pi reads it all and truncates) and edits of a 1.9 MB file
 *           (pi diffs the whole file)
 *   images  reads of PNG screenshots, which pi decodes and resizes in a
 *           worker thread of its own already (Photon), in process as well
 *   io      child processes and I/O dominate: bash commands, ripgrep over a
 *           real tree (a copy of installed packages), ls of large folders
 * Reports calls/s per arm and their ratio, the main thread's event-loop delay
 * (p99, max) while the sessions run, where the CPU time went (main thread,
 * pool threads, child processes), and what a thread that loads pi's tools
 * costs (start-up time, memory).
 *
 * @module
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";

import { codingTools, createRuntime, supportsPi16 } from "../dist/index.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const modules = join(root, "node_modules");

type Mix = "cpu" | "images" | "io";
interface Call {
  name: string;
  arguments: Record<string, unknown>;
}

const { values } = parseArgs({
  options: {
    sessions: { type: "string", default: "8" },
    turns: { type: "string", default: "6" },
    reps: { type: "string", default: "3" },
    threads: { type: "string" },
  },
});
const sessions = Number(values.sessions);
const turns = Number(values.turns);
const reps = Number(values.reps);
const cores = availableParallelism();
const threads = values.threads === undefined ? cores : Number(values.threads);

/** The real tree every session works in (a copy of installed packages), and a folder per session for its edits. */
function prepareTree(base: string): void {
  rmSync(base, { recursive: true, force: true });
  mkdirSync(join(base, "tree"), { recursive: true });
  cpSync(join(modules, "@earendil-works", "pi-coding-agent", "dist"), join(base, "tree", "pi-dist"), { recursive: true });
  cpSync(join(modules, "typescript", "lib", "typescript.js"), join(base, "tree", "typescript.js"));
  for (const image of ["exy.png", "interactive-mode.png"]) {
    cpSync(join(modules, "@earendil-works", "pi-coding-agent", "docs", "images", image), join(base, "tree", image));
  }
  const large = readFileSync(join(modules, "typescript", "lib", "lib.dom.d.ts"), "utf8");
  for (let session = 0; session < sessions; session++) {
    mkdirSync(join(base, "tree", `s${session}`), { recursive: true });
    writeFileSync(join(base, "tree", `s${session}`, "lib.dom.d.ts"), large);
  }
}

/** The batches of one session: `turns` batches of the mix's calls (four; two for images). */
function scriptOf(mix: Mix, session: number): Call[][] {
  const batches: Call[][] = [];
  for (let turn = 0; turn < turns; turn++) {
    if (mix === "cpu") {
      batches.push([
        { name: "read", arguments: { path: "typescript.js" } },
        { name: "read", arguments: { path: "typescript.js", offset: 50_000 + turn * 1_000, limit: 400 } },
        { name: "read", arguments: { path: "typescript.js", offset: 120_000 + turn * 1_000 } },
        {
          name: "edit",
          arguments: {
            path: `s${session}/lib.dom.d.ts`,
            edits: [
              {
                oldText: `interface AddEventListenerOptions extends EventListenerOptions {${turn === 0 ? "" : ` // ${turn - 1}`}`,
                newText: `interface AddEventListenerOptions extends EventListenerOptions { // ${turn}`,
              },
            ],
          },
        },
      ]);
    } else if (mix === "images") {
      batches.push([
        { name: "read", arguments: { path: "exy.png" } },
        { name: "read", arguments: { path: "interactive-mode.png" } },
      ]);
    } else {
      batches.push([
        { name: "bash", arguments: { command: "ls -la pi-dist/core | wc -l && cat typescript.js | wc -c" } },
        { name: "grep", arguments: { pattern: "createBashTool", path: "pi-dist" } },
        { name: "ls", arguments: { path: "pi-dist/core/tools" } },
        { name: "bash", arguments: { command: `git --version >/dev/null 2>&1; echo turn ${turn}` } },
      ]);
    }
  }
  return batches;
}

/** pi's tools, in process, for `cwd`. */
async function piTools(cwd: string): Promise<unknown[]> {
  const pi = (await import("@earendil-works/pi-coding-agent")) as unknown as Record<string, (cwd: string) => unknown>;
  return ["createReadTool", "createBashTool", "createEditTool", "createWriteTool", "createGrepTool", "createFindTool", "createLsTool"].map((name) =>
    pi[name]!(cwd),
  );
}

/** One session: pi 1.6's agent loop, its model answering from the script. Returns the calls it ran and the errors among them. */
async function runSession(tools: unknown[], script: Call[][], session: number): Promise<{ calls: number; errors: number }> {
  const { runAgentLoop } = (await import("@earendil-works/pi-agent-core")) as unknown as {
    runAgentLoop: (...args: unknown[]) => Promise<unknown[]>;
  };
  let turn = 0;
  let calls = 0;
  let errors = 0;
  const streamFn = () => {
    const batch = script[turn];
    turn += 1;
    const message =
      batch === undefined
        ? { role: "assistant", content: [{ type: "text", text: "done" }], stopReason: "stop", timestamp: 0 }
        : {
            role: "assistant",
            content: batch.map((call, index) => ({
              type: "toolCall",
              id: `s${session}-t${turn}-${index}`,
              name: call.name,
              arguments: call.arguments,
            })),
            stopReason: "toolUse",
            timestamp: 0,
          };
    const done = { type: "done", reason: message.stopReason, message };
    return {
      async *[Symbol.asyncIterator]() {
        yield done;
      },
      result: async () => message,
    };
  };
  const context = { systemPrompt: "", messages: [], tools };
  const config = {
    model: { id: "script", name: "script", api: "script", provider: "script" },
    convertToLlm: (messages: unknown[]) => messages,
    toolExecution: "parallel",
  };
  const sink = (event: { type: string; isError?: boolean }) => {
    if (event.type === "tool_execution_end") {
      calls += 1;
      if (event.isError) errors += 1;
    }
  };
  await runAgentLoop([{ role: "user", content: [{ type: "text", text: "go" }], timestamp: 0 }], context, config, sink, undefined, streamFn);
  return { calls, errors };
}

/** Seconds of CPU of this process's threads, and of its reaped children (from /proc/self/stat). */
function cpuNow(): { process: number; children: number } {
  const usage = process.cpuUsage();
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  const ticks = 100;
  return { process: (usage.user + usage.system) / 1e6, children: (Number(fields[13]) + Number(fields[14])) / ticks };
}

interface ArmResult {
  callsPerSecond: number;
  p99Ms: number;
  maxMs: number;
  mainS: number;
  poolS: number;
  childrenS: number;
  errors: number;
}

/** One run of `sessions` sessions at once with `tools`; `freshEdits` restores the files the edits change. */
async function runArm(mix: Mix, toolsOf: () => unknown[], freshEdits: () => void): Promise<ArmResult> {
  freshEdits();
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const eluStart = performance.eventLoopUtilization();
  const cpuStart = cpuNow();
  delay.enable();
  const started = performance.now();
  const outcomes = await Promise.all(Array.from({ length: sessions }, (_, session) => runSession(toolsOf(), scriptOf(mix, session), session)));
  const seconds = (performance.now() - started) / 1000;
  delay.disable();
  const elu = performance.eventLoopUtilization(eluStart);
  const cpu = cpuNow();
  const calls = outcomes.reduce((sum, outcome) => sum + outcome.calls, 0);
  const mainS = elu.active / 1000;
  const processS = cpu.process - cpuStart.process;
  return {
    callsPerSecond: calls / seconds,
    p99Ms: delay.percentile(99) / 1e6,
    maxMs: delay.max / 1e6,
    mainS,
    poolS: Math.max(0, processS - mainS),
    childrenS: cpu.children - cpuStart.children,
    errors: outcomes.reduce((sum, outcome) => sum + outcome.errors, 0),
  };
}

/** What one thread that loads pi's tools costs: time to import them, and the process's RSS growth (thread and modules). */
async function threadCost(): Promise<{ importMs: number; rssMb: number; bareRssMb: number }> {
  const probe = async (withTools: boolean) => {
    global.gc?.();
    const before = process.memoryUsage().rss;
    const worker = new Worker(
      `const { parentPort } = require("node:worker_threads");
       const started = performance.now();
       (${withTools} ? import(${JSON.stringify(new URL("../dist/tools/coding/pi-coding-agent.js", import.meta.url).href)}).then((m) => m.importPiWorkerModules()) : Promise.resolve())
         .then(() => parentPort.postMessage(performance.now() - started));`,
      { eval: true },
    );
    const importMs = await new Promise<number>((resolve) => worker.once("message", resolve));
    const rssMb = (process.memoryUsage().rss - before) / 1024 / 1024;
    await worker.terminate();
    return { importMs, rssMb };
  };
  await probe(true); // the modules' first load from disk, outside the figures
  const bare = await probe(false);
  const loaded = await probe(true);
  return { importMs: loaded.importMs, rssMb: loaded.rssMb, bareRssMb: bare.rssMb };
}

const median = (numbers: number[]) => [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)]!;

async function main(): Promise<void> {
  if (!supportsPi16()) {
    console.error(`bench:coding needs Node >= 22.19 (pi 1.6); this is Node ${process.versions.node}`);
    process.exit(2);
  }
  const base = join(tmpdir(), `toolpool-bench-coding-${process.pid}`);
  prepareTree(base);
  const tree = join(base, "tree");
  const large = readFileSync(join(modules, "typescript", "lib", "lib.dom.d.ts"), "utf8");
  const freshEdits = () => {
    for (let session = 0; session < sessions; session++) writeFileSync(join(tree, `s${session}`, "lib.dom.d.ts"), large);
  };
  const pi = await piTools(tree);
  const runtime = createRuntime({
    pi: "1.6",
    tools: codingTools({ workspace: tree, tools: ["read", "bash", "edit", "write", "grep", "find", "ls"] }),
    pool: { maxThreads: threads, minThreads: threads },
  });
  const pooled = runtime.agentTools();
  const rows: string[] = [];
  const results: Record<string, unknown> = {};
  try {
    // Warm both arms (module loads, the pool's threads) outside the figures.
    await runArm("io", () => pi, freshEdits);
    await runArm("io", () => pooled, freshEdits);
    for (const mix of ["cpu", "images", "io"] as Mix[]) {
      const arms: Record<"pi" | "toolpool", ArmResult[]> = { pi: [], toolpool: [] };
      for (let rep = 0; rep < reps; rep++) {
        for (const arm of rep % 2 === 0 ? (["pi", "toolpool"] as const) : (["toolpool", "pi"] as const)) {
          arms[arm].push(await runArm(mix, () => (arm === "pi" ? pi : pooled), freshEdits));
          process.stderr.write(".");
        }
      }
      const summary = (list: ArmResult[]) => ({
        callsPerSecond: median(list.map((result) => result.callsPerSecond)),
        p99Ms: median(list.map((result) => result.p99Ms)),
        maxMs: Math.max(...list.map((result) => result.maxMs)),
        mainS: median(list.map((result) => result.mainS)),
        poolS: median(list.map((result) => result.poolS)),
        childrenS: median(list.map((result) => result.childrenS)),
        errors: list.reduce((sum, result) => sum + result.errors, 0),
      });
      const p = summary(arms.pi);
      const t = summary(arms.toolpool);
      const ratio = t.callsPerSecond / p.callsPerSecond;
      const target = mix === "io" ? 1.0 : 1.5;
      results[mix] = { pi: p, toolpool: t, ratio, target };
      rows.push(
        `| ${mix} | ${p.callsPerSecond.toFixed(1)} | ${t.callsPerSecond.toFixed(1)} | ${ratio.toFixed(2)}× (target ≥ ${target}×: ${ratio >= target ? "met" : "missed"}) | ${p.p99Ms.toFixed(1)} / ${p.maxMs.toFixed(0)} | ${t.p99Ms.toFixed(1)} / ${t.maxMs.toFixed(0)} (target p99 ≤ 5: ${t.p99Ms <= 5 ? "met" : "missed"}) | ${p.mainS.toFixed(2)} / ${p.poolS.toFixed(2)} / ${p.childrenS.toFixed(2)} | ${t.mainS.toFixed(2)} / ${t.poolS.toFixed(2)} / ${t.childrenS.toFixed(2)} |`,
      );
    }
    const cost = await threadCost();
    results.thread = cost;
    process.stderr.write("\n");
    const cpu = cpus()[0]?.model ?? "unknown CPU";
    console.log(
      `pi's coding tools, ${sessions} sessions at once × ${turns} batches of 4 calls (2 for images), ${reps} reps (medians), pool of ${threads} threads; ${cores} cores (${cpu}), load ${loadavg()[0]!.toFixed(1)}, Node ${process.versions.node}\n`,
    );
    console.log(
      "| mix | pi in process (calls/s) | toolpool (calls/s) | toolpool ÷ pi | pi loop delay p99 / max (ms) | toolpool loop delay p99 / max (ms) | pi CPU s: main / other threads / children | toolpool CPU s: main / pool threads / children |",
    );
    console.log("|---|---|---|---|---|---|---|---|");
    for (const row of rows) console.log(row);
    console.log(
      `\nA thread that loads pi's tools: ${cost.importMs.toFixed(0)} ms to import them, process RSS +${cost.rssMb.toFixed(1)} MB (a bare thread: +${cost.bareRssMb.toFixed(1)} MB).`,
    );
    mkdirSync(join(root, "bench-results"), { recursive: true });
    writeFileSync(
      join(root, "bench-results", "coding.json"),
      `${JSON.stringify({ sessions, turns, reps, threads, cores, node: process.versions.node, results }, null, 2)}\n`,
    );
  } finally {
    await runtime.close();
    rmSync(base, { recursive: true, force: true });
  }
}

await main();
