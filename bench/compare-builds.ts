/**
 * Per-call cost of two builds of toolpool, side by side in one process: a
 * no-op worker tool as a batch of one call, `--in-flight` batches outstanding,
 * unobserved (no hook, no sink) and observed (an event sink), each build's
 * runtime taking turns repetition by repetition. For a change to the batch
 * pipeline, build the commit before it into another folder and compare:
 *
 * ```sh
 * git worktree add /tmp/before HEAD~1 && (cd /tmp/before && ln -s "$PWD/node_modules" . && npm run build)
 * npm run build && npx tsc -p tsconfig.bench.json
 * node dist-bench/compare-builds.js --before /tmp/before/dist/index.js --after dist/index.js [--pi 1.6]
 * ```
 *
 * `--pi 1.6` runs the after build with pi 1.6's rules (the before build as it
 * is). `--batches` compares whole batches (`--batch-calls`, 64 by default; each
 * batch's calls in flight together, batches one after another) instead, each build in
 * a process of its own beside bare Piscina at its defaults (the dispatch
 * suite's batches, `suites/dispatch-batches.ts`, on pools of a thread per
 * core unless `--threads` says otherwise; `--calls` and `--in-flight` do not
 * apply). `--tool inline` makes the no-op an inline tool (its execute on the
 * main thread, as pi runs it) instead of a worker tool. Figures are µs of
 * main-thread wall time per call; the ratio is after / before, per
 * repetition (paired) and of the medians.
 */
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

import type * as Toolpool from "toolpool";

import { noopParameters } from "./lib/constants.js";
import { runInFlight } from "./lib/run-loop.js";
import { summarize } from "./lib/stats.js";

const { values } = parseArgs({
  options: {
    before: { type: "string" },
    after: { type: "string" },
    pi: { type: "string", default: "0.73" },
    calls: { type: "string", default: "20000" },
    "in-flight": { type: "string", default: "64" },
    reps: { type: "string", default: "7" },
    threads: { type: "string" },
    tool: { type: "string", default: "worker" },
    batches: { type: "boolean", default: false },
    "batch-calls": { type: "string", default: "64" },
  },
});
if (values.before === undefined || values.after === undefined) {
  console.error(
    "usage: compare-builds --before PATH/dist/index.js --after PATH/dist/index.js [--pi 1.6] [--tool worker|inline] [--calls N] [--in-flight N] [--reps N] [--threads N] [--batches [--batch-calls N]]",
  );
  process.exit(2);
}
if (values.tool !== "worker" && values.tool !== "inline") {
  console.error(`compare-builds: --tool must be "worker" or "inline", got ${JSON.stringify(values.tool)}`);
  process.exit(2);
}
const calls = Number(values.calls);
const inFlight = Number(values["in-flight"]);
const reps = Number(values.reps);
// One thread by default; batches use a thread per core, as the dispatch suite does.
const threads = values.threads === undefined ? (values.batches ? availableParallelism() : 1) : Number(values.threads);
const noopModule = new URL("./tools/noop.js", import.meta.url);

type Build = { name: string; runtime: Toolpool.Runtime };

if (values.batches) {
  if (values.pi !== "0.73" || values.tool !== "worker") {
    console.error("compare-builds: --batches runs worker tools with pi 0.73's rules; --pi and --tool do not apply");
    process.exit(2);
  }
  const batchCalls = Number(values["batch-calls"]);
  if (!Number.isInteger(batchCalls) || batchCalls < 1) {
    console.error(`compare-builds: --batch-calls must be a positive integer, got ${JSON.stringify(values["batch-calls"])}`);
    process.exit(2);
  }
  const { runDispatchBatchesSuite } = await import("./suites/dispatch-batches.js");
  const result = await runDispatchBatchesSuite({
    threads,
    batchCalls,
    chunkBatches: 16,
    chunks: 30,
    warmupBatches: 300,
    reps,
    builds: [
      { name: "the build before", index: values.before },
      { name: "the build after", index: values.after },
    ],
  });
  const figure = (start: string) => result.figures.find((f) => f.name.startsWith(start))!;
  const after = figure("toolpool executeToolCalls, the build after");
  const before = figure("toolpool executeToolCalls, the build before");
  const bare = figure("bare Piscina 5, its defaults");
  const paired = summarize(after.usPerCall.map((us, index) => us / before.usPerCall[index]!));
  console.log(
    `batches of ${batchCalls}, each build in a process of its own: before ${before.summary.median.toFixed(1)} µs/call, after ${after.summary.median.toFixed(1)} µs/call, ` +
      `bare Piscina at its defaults ${bare.summary.median.toFixed(1)} µs/call; after ÷ before ${(after.summary.median / before.summary.median).toFixed(3)} ` +
      `(paired median ${paired.median.toFixed(3)}, min ${paired.min.toFixed(3)}, max ${paired.max.toFixed(3)}); ` +
      `÷ bare Piscina: after ${(after.summary.median / bare.summary.median).toFixed(3)}, before ${(before.summary.median / bare.summary.median).toFixed(3)}`,
  );
  process.exit(0);
}

const noopResult: Toolpool.AgentToolResult<unknown> = { content: [{ type: "text", text: "ok" }], details: {} };

async function load(name: string, path: string, pi: string | undefined): Promise<Build> {
  const toolpool = (await import(pathToFileURL(resolve(path)).href)) as typeof Toolpool;
  const noop: Toolpool.ToolDefinition =
    values.tool === "inline"
      ? { name: "noop", label: "noop", description: "Returns a constant", parameters: noopParameters, execute: async () => noopResult }
      : toolpool.workerTool({ name: "noop", description: "Returns a constant", parameters: noopParameters, module: noopModule });
  const runtime = toolpool.createRuntime({
    tools: [noop],
    pool: { maxThreads: threads, minThreads: threads },
    ...(pi === undefined ? {} : { pi: pi as Toolpool.PiVersion }),
  });
  return { name, runtime };
}

const message = (index: number): Toolpool.AssistantMessage => ({
  role: "assistant",
  content: [{ type: "toolCall", id: `c${index}`, name: "noop", arguments: {} }],
});
const sink = (): void => {};

async function measure(build: Build, isObserved: boolean): Promise<number> {
  const startedAt = performance.now();
  await runInFlight((index) => build.runtime.executeToolCalls(message(index), isObserved ? { emit: sink } : {}), calls, inFlight);
  return ((performance.now() - startedAt) * 1000) / calls;
}

const builds = [await load("before", values.before, undefined), await load("after", values.after, values.pi === "0.73" ? undefined : values.pi)];
for (const isObserved of [false, true]) {
  const figures = new Map<string, number[]>(builds.map((build) => [build.name, []]));
  for (const build of builds) await measure(build, isObserved); // warm-up
  for (let rep = 0; rep < reps; rep++) {
    for (const build of rep % 2 === 0 ? builds : [...builds].reverse()) figures.get(build.name)!.push(await measure(build, isObserved));
  }
  const before = figures.get("before")!;
  const after = figures.get("after")!;
  const paired = summarize(after.map((value, index) => value / before[index]!));
  const medianBefore = summarize(before).median;
  const medianAfter = summarize(after).median;
  console.log(
    `${isObserved ? "observed  " : "unobserved"}  before ${medianBefore.toFixed(1)} µs/call  after ${medianAfter.toFixed(1)} µs/call  ` +
      `ratio of medians ${(medianAfter / medianBefore).toFixed(3)}  paired median ${paired.median.toFixed(3)} (min ${paired.min.toFixed(3)}, max ${paired.max.toFixed(3)})`,
  );
}
await Promise.all(builds.map((build) => build.runtime.close()));
