/**
 * pi's coding tools, N agent sessions at once: pi's own agent loop (pi 1.6's
 * `runAgentLoop`, with a scripted model) calling pi's tools in process,
 * beside the same loop calling `codingTools` on a toolpool pool
 * (`runtime.agentTools()`), side by side in one run, arms interleaved.
 *
 *   npm run bench:coding [-- --sessions 8 --turns 4 --reps 3 --threads 2 --profile-rounds 5 --mixes cpu,images,io]
 *   (or: npm run build && npx tsc -p tsconfig.bench.json &&
 *        ~/.cache/toolpool-node/22.23.5/package/bin/node --expose-gc dist-bench/coding-sessions.js)
 *
 * Needs Node >= 22.19 (pi 1.6). Three mixes, each measured on its own:
 *   cpu     the tools' own CPU on pi's main thread dominates: reads of a 9 MB
 *           file (pi reads it all and truncates) and edits of a 1.9 MB file
 *           (pi diffs the whole file)
 *   images  reads of PNG screenshots, which pi decodes and resizes in a
 *           worker thread of its own already (Photon), in process as well
 *   io      child processes and I/O dominate: bash commands, ripgrep and fd
 *           over a real tree (a copy of installed packages), ls of a folder
 * A third arm runs pi's tools on a bare Piscina of as many threads, with
 * nothing of toolpool (bench/lib/bare-pi-tools-worker.ts): what moving pi's
 * tools off the main thread gives on this machine before any of toolpool's
 * work, so that toolpool ÷ bare threads is its efficiency against that ideal.
 * Reports calls/s per arm and their ratios, the main thread's event-loop
 * delay (p99, max) while the sessions run, beside that of an idle process
 * running alongside each arm (the machine's floor under the arm's load),
 * where the CPU time went (main thread, pool threads, child processes), and
 * what a thread that loads pi's tools costs (start-up time, memory).
 *
 * @module
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { Piscina } from "piscina";

import type { AssistantMessage } from "../dist/index.js";
import { codingTools, createRuntime, supportsPi16 } from "../dist/index.js";
import { startIdleProbe } from "./lib/idle-probe.js";
import { cpuNow, cpuSince } from "./lib/process-cpu.js";
import { readThreadCpuMs } from "./lib/thread-cpu.js";
import { threadCost } from "./lib/pi-thread-cost.js";

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
    turns: { type: "string", default: "4" },
    reps: { type: "string", default: "3" },
    threads: { type: "string" },
    "profile-rounds": { type: "string", default: "5" },
    mixes: { type: "string", default: "cpu,images,io" },
    "io-threads": { type: "string" },
  },
});
const sessions = Number(values.sessions);
const turns = Number(values.turns);
const reps = Number(values.reps);
const cores = availableParallelism();
const threads = values.threads === undefined ? cores : Number(values.threads);
const profileRounds = Number(values["profile-rounds"]);
if (!Number.isInteger(profileRounds) || profileRounds < 0) {
  throw new Error(`--profile-rounds: expected an integer >= 0, got ${JSON.stringify(values["profile-rounds"])}`);
}
const ioThreads = values["io-threads"] === undefined ? undefined : Number(values["io-threads"]);
const mixes = values.mixes.split(",").map((mix) => {
  if (mix !== "cpu" && mix !== "images" && mix !== "io") throw new Error(`--mixes: expected cpu, images or io, got ${JSON.stringify(mix)}`);
  return mix as Mix;
});

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

/** Whether pi's find runs here (it needs an fd that knows `--no-require-git`); set once the tree is ready. */
let findWorks = true;

/** The batches of one session: `turns` batches of the mix's calls (four; two for images; five for io). */
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
        ...(findWorks ? [{ name: "find", arguments: { pattern: "*.d.ts", path: "pi-dist/core" } }] : []),
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

/** The arms, each run on its own: pi's tools in process, on a bare Piscina, on toolpool. */
type Arm = "pi" | "bare" | "toolpool";
const armNames: readonly Arm[] = ["pi", "bare", "toolpool"];

/** pi's tools as the bare-threads arm runs them: pi's own definitions, each execute a task on `pool`. */
function bareTools(piList: unknown[], pool: Piscina, cwd: string): unknown[] {
  return (piList as { name: string }[]).map((tool) => ({
    ...tool,
    execute: (toolCallId: string, args: unknown) => pool.run({ cwd, toolCallId, name: tool.name, args }),
  }));
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

interface ArmResult {
  callsPerSecond: number;
  p99Ms: number;
  maxMs: number;
  /** The loop delay p99 of an idle process beside the run: the machine's floor under its load. */
  idleP99Ms: number;
  mainS: number;
  poolS: number;
  childrenS: number;
  errors: number;
}

/** One run of `sessions` sessions at once with `tools`; `freshEdits` restores the files the edits change. */
async function runArm(mix: Mix, toolsOf: () => unknown[], freshEdits: () => void): Promise<ArmResult> {
  freshEdits();
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const mainStart = readThreadCpuMs()?.get(process.pid) ?? 0;
  const idle = await startIdleProbe();
  const cpuStart = cpuNow();
  delay.enable();
  const started = performance.now();
  const outcomes = await Promise.all(Array.from({ length: sessions }, (_, session) => runSession(toolsOf(), scriptOf(mix, session), session)));
  const seconds = (performance.now() - started) / 1000;
  delay.disable();
  const mainS = ((readThreadCpuMs()?.get(process.pid) ?? 0) - mainStart) / 1000;
  // Before the idle process is reaped: its CPU is not the arm's.
  const cpu = cpuSince(cpuStart);
  const idleDelay = await idle.stop();
  const calls = outcomes.reduce((sum, outcome) => sum + outcome.calls, 0);
  const processS = cpu.process;
  return {
    callsPerSecond: calls / seconds,
    p99Ms: delay.percentile(99) / 1e6,
    maxMs: delay.max / 1e6,
    idleP99Ms: idleDelay.p99Ms,
    mainS,
    poolS: Math.max(0, processS - mainS),
    childrenS: cpu.children,
    errors: outcomes.reduce((sum, outcome) => sum + outcome.errors, 0),
  };
}

/** One kind of call, profiled alone. */
interface ProfiledCall {
  label: string;
  call: Call;
}

const profiledCalls: ProfiledCall[] = [
  { label: "read 9 MB whole (truncated)", call: { name: "read", arguments: { path: "typescript.js" } } },
  { label: "read 9 MB, 400 lines at an offset", call: { name: "read", arguments: { path: "typescript.js", offset: 50_000, limit: 400 } } },
  { label: "edit 1.9 MB", call: { name: "edit", arguments: { path: "s0/lib.dom.d.ts", edits: [] } } },
  { label: "read PNG", call: { name: "read", arguments: { path: "interactive-mode.png" } } },
  { label: "bash", call: { name: "bash", arguments: { command: "ls -la pi-dist/core | wc -l && cat typescript.js | wc -c" } } },
  { label: "grep (ripgrep)", call: { name: "grep", arguments: { pattern: "createBashTool", path: "pi-dist" } } },
  { label: "find (fd)", call: { name: "find", arguments: { pattern: "*.d.ts", path: "pi-dist/core" } } },
  { label: "ls", call: { name: "ls", arguments: { path: "pi-dist/core/tools" } } },
];

/** The edit of round `round` of the profile: each one changes the file the one before left. */
function profileEdit(round: number): Record<string, unknown> {
  const tag = (n: number) => (n < 0 ? "" : ` // p${n}`);
  return {
    path: "s0/lib.dom.d.ts",
    edits: [
      {
        oldText: `interface AddEventListenerOptions extends EventListenerOptions {${tag(round - 1)}`,
        newText: `interface AddEventListenerOptions extends EventListenerOptions {${tag(round)}`,
      },
    ],
  };
}

/** Where one call's time goes, in ms per call (means over the rounds). */
interface CallProfile {
  wallMs: number;
  mainMs: number;
  otherThreadsMs: number;
  childrenMs: number;
  queueWaitMs?: number;
  runMs?: number;
}

/**
 * Each kind of call alone, `rounds` times one after the other, in each arm:
 * its wall time, the main thread's busy time (event-loop utilization), the
 * CPU of the process's other threads and of its child processes; for the
 * pool, the queue wait and the run time on the thread from the runtime's
 * listener (`meta.queueWaitMs`, `meta.runMs` of `tool_execution_end`).
 */
async function profileTools(
  piTools: unknown[],
  runtime: ReturnType<typeof createRuntime>,
  rounds: number,
  freshEdits: () => void,
): Promise<{ label: string; pi: CallProfile; toolpool: CallProfile }[]> {
  const byName = new Map((piTools as { name: string; execute: (...args: unknown[]) => Promise<unknown> }[]).map((tool) => [tool.name, tool]));
  let meta: { queueWaitMs: number; runMs: number } = { queueWaitMs: 0, runMs: 0 };
  const listener = (_event: unknown, eventMeta: { queueWaitMs?: number; runMs?: number }) => {
    meta.queueWaitMs += eventMeta.queueWaitMs ?? 0;
    meta.runMs += eventMeta.runMs ?? 0;
  };
  runtime.on("tool_execution_end", listener);
  const rows: { label: string; pi: CallProfile; toolpool: CallProfile }[] = [];
  try {
    for (const { label, call } of profiledCalls.filter(({ call }) => findWorks || call.name !== "find")) {
      const profile = async (arm: "pi" | "toolpool"): Promise<CallProfile> => {
        freshEdits();
        meta = { queueWaitMs: 0, runMs: 0 };
        const elu = performance.eventLoopUtilization();
        const cpu = cpuNow();
        const started = performance.now();
        for (let round = 0; round < rounds; round++) {
          const args = call.name === "edit" ? profileEdit(round) : call.arguments;
          if (arm === "pi") {
            await byName.get(call.name)!.execute(`p${round}`, args, undefined, undefined);
          } else {
            const message: AssistantMessage = {
              role: "assistant",
              content: [{ type: "toolCall", id: `p${round}`, name: call.name, arguments: args }],
            };
            const { messages } = await runtime.executeToolCalls(message, {});
            if (messages[0]?.isError) throw new Error(`${label} failed on the pool: ${JSON.stringify(messages[0].content).slice(0, 300)}`);
          }
        }
        const wallMs = performance.now() - started;
        const mainMs = performance.eventLoopUtilization(elu).active;
        const spent = cpuSince(cpu);
        const processMs = spent.process * 1000;
        const result: CallProfile = {
          wallMs: wallMs / rounds,
          mainMs: mainMs / rounds,
          otherThreadsMs: Math.max(0, processMs - mainMs) / rounds,
          childrenMs: (spent.children * 1000) / rounds,
        };
        if (arm === "toolpool") {
          result.queueWaitMs = meta.queueWaitMs / rounds;
          result.runMs = meta.runMs / rounds;
        }
        return result;
      };
      await profile("pi"); // warm
      await profile("toolpool");
      rows.push({ label, pi: await profile("pi"), toolpool: await profile("toolpool") });
      process.stderr.write(".");
    }
  } finally {
    runtime.off("tool_execution_end", listener);
  }
  return rows;
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
  const find = (pi as { name: string; execute: (...args: unknown[]) => Promise<unknown> }[]).find((tool) => tool.name === "find")!;
  try {
    await find.execute("probe", { pattern: "*.d.ts", path: "pi-dist/core" }, undefined, undefined);
  } catch (error) {
    findWorks = false;
    console.log(`pi's find fails on this machine, left out of the io mix and the profile: ${String(error).split("\n")[0]}`);
  }
  const runtime = createRuntime({
    pi: "1.6",
    tools: codingTools({
      workspace: tree,
      tools: ["read", "bash", "edit", "write", "grep", "find", "ls"],
      ...(ioThreads === undefined ? {} : { ioThreads }),
    }),
    // pi's read of a PNG returns the (resized) image whole: interactive-mode.png
    // comes back as 1.38 MB of base64, over the pool's default 1 MiB result cap.
    pool: { maxThreads: threads, minThreads: threads, maxResultBytes: 16 << 20 },
  });
  const pooled = runtime.agentTools();
  const bare = new Piscina({
    filename: new URL("./lib/bare-pi-tools-worker.js", import.meta.url).href,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: 60_000,
  });
  const toolsOfArm: Record<Arm, unknown[]> = { pi, bare: bareTools(pi, bare, tree), toolpool: pooled };
  const rows: string[] = [];
  const results: Record<string, unknown> = {};
  try {
    // Warm the arms (module loads, the pools' threads) outside the figures.
    await runArm("io", () => pi, freshEdits);
    await runArm("io", () => pooled, freshEdits);
    await runArm("io", () => toolsOfArm.bare, freshEdits);
    for (const mix of mixes) {
      const arms: Record<Arm, ArmResult[]> = { pi: [], bare: [], toolpool: [] };
      for (let rep = 0; rep < reps; rep++) {
        // Each arm goes first in turn, so that none always follows the same one.
        for (let turn = 0; turn < armNames.length; turn++) {
          const arm = armNames[(rep + turn) % armNames.length]!;
          arms[arm].push(await runArm(mix, () => toolsOfArm[arm], freshEdits));
          process.stderr.write(".");
        }
      }
      const summary = (list: ArmResult[]) => ({
        callsPerSecond: median(list.map((result) => result.callsPerSecond)),
        p99Ms: median(list.map((result) => result.p99Ms)),
        maxMs: Math.max(...list.map((result) => result.maxMs)),
        idleP99Ms: median(list.map((result) => result.idleP99Ms)),
        mainS: median(list.map((result) => result.mainS)),
        poolS: median(list.map((result) => result.poolS)),
        childrenS: median(list.map((result) => result.childrenS)),
        errors: list.reduce((sum, result) => sum + result.errors, 0),
      });
      const p = summary(arms.pi);
      const b = summary(arms.bare);
      const t = summary(arms.toolpool);
      const ratio = t.callsPerSecond / p.callsPerSecond;
      const bareRatio = b.callsPerSecond / p.callsPerSecond;
      const efficiency = t.callsPerSecond / b.callsPerSecond;
      const target = mix === "io" ? 1.0 : 1.5;
      results[mix] = { pi: p, bare: b, toolpool: t, ratio, bareRatio, efficiency, target };
      const cpuOf = (arm: ReturnType<typeof summary>) => `${arm.mainS.toFixed(2)} / ${arm.poolS.toFixed(2)} / ${arm.childrenS.toFixed(2)}`;
      rows.push(
        `| ${mix} | ${p.callsPerSecond.toFixed(1)} | ${b.callsPerSecond.toFixed(1)} (${bareRatio.toFixed(2)}×) | ${t.callsPerSecond.toFixed(1)} | ${ratio.toFixed(2)}× (target ≥ ${target}×: ${ratio >= target ? "met" : "missed"}) | ${efficiency.toFixed(2)}× | ${p.p99Ms.toFixed(1)} / ${b.p99Ms.toFixed(1)} / ${t.p99Ms.toFixed(1)} (target ≤ 5: ${t.p99Ms <= 5 ? "met" : "missed"}) | ${p.idleP99Ms.toFixed(1)} / ${b.idleP99Ms.toFixed(1)} / ${t.idleP99Ms.toFixed(1)} | ${p.maxMs.toFixed(0)} / ${b.maxMs.toFixed(0)} / ${t.maxMs.toFixed(0)} | ${cpuOf(p)} | ${cpuOf(b)} | ${cpuOf(t)} | ${p.errors} / ${b.errors} / ${t.errors} |`,
      );
    }
    // No rounds, no profile: a table of 0 ÷ 0 would only print NaN.
    const profiles = profileRounds === 0 ? undefined : await profileTools(pi, runtime, profileRounds, freshEdits);
    results.perCall = profiles;
    const cost = await threadCost();
    results.thread = cost;
    process.stderr.write("\n");
    const cpu = cpus()[0]?.model ?? "unknown CPU";
    console.log(
      `pi's coding tools, ${sessions} sessions at once × ${turns} batches of 4 calls (2 for images, ${findWorks ? 5 : 4} for io), ${reps} reps (medians), pool of ${threads} threads; ${cores} cores (${cpu}), load ${loadavg()[0]!.toFixed(1)}, Node ${process.versions.node}\n`,
    );
    console.log(
      "| mix | pi in process (calls/s) | bare threads (calls/s, ÷ pi) | toolpool (calls/s) | toolpool ÷ pi | toolpool ÷ bare threads | loop delay p99 (ms): pi / bare / toolpool | an idle process beside each: loop delay p99 (ms) | loop delay max (ms): pi / bare / toolpool | pi CPU s: main / other threads / children | bare threads CPU s | toolpool CPU s | error results pi / bare / toolpool |",
    );
    console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (const row of rows) console.log(row);
    if (profiles === undefined) console.log("\nWhere one call's time goes: skipped (--profile-rounds 0).");
    else printProfiles(profiles);
    console.log(
      `\nA thread that loads pi's tools: ${cost.importMs.toFixed(0)} ms to import them, process RSS +${cost.rssMb.toFixed(1)} MB, its heap ${cost.heapMb.toFixed(1)} MB after GC (a bare thread: RSS +${cost.bareRssMb.toFixed(1)} MB, heap ${cost.bareHeapMb.toFixed(1)} MB).`,
    );
    mkdirSync(join(root, "bench-results"), { recursive: true });
    writeFileSync(
      join(root, "bench-results", "coding.json"),
      `${JSON.stringify({ sessions, turns, reps, threads, cores, node: process.versions.node, results }, null, 2)}\n`,
    );
  } finally {
    await runtime.close();
    await bare.destroy();
    rmSync(base, { recursive: true, force: true });
  }
}

/** The per-call profile as a Markdown table (ms per call). */
function printProfiles(profiles: Awaited<ReturnType<typeof profileTools>>): void {
  console.log(
    `\nWhere one call's time goes, each kind alone (${profileRounds} in a row, ms per call): wall; main thread busy; other threads' CPU; child processes' CPU; on the pool also the queue wait and the run on the thread (meta.queueWaitMs, meta.runMs)\n`,
  );
  console.log(
    "| call | pi: wall / main / other threads / children | toolpool: wall / main / pool threads / children | toolpool: queue wait / run on thread | wall toolpool ÷ pi |",
  );
  console.log("|---|---|---|---|---|");
  const f = (ms: number) => ms.toFixed(1);
  for (const { label, pi: p, toolpool: t } of profiles) {
    console.log(
      `| ${label} | ${f(p.wallMs)} / ${f(p.mainMs)} / ${f(p.otherThreadsMs)} / ${f(p.childrenMs)} | ${f(t.wallMs)} / ${f(t.mainMs)} / ${f(t.otherThreadsMs)} / ${f(t.childrenMs)} | ${f(t.queueWaitMs ?? 0)} / ${f(t.runMs ?? 0)} | ${(t.wallMs / p.wallMs).toFixed(2)}× |`,
    );
  }
}

await main();
