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
 * is). `--tool inline` makes the no-op an inline tool (its execute on the
 * main thread, as pi runs it) instead of a worker tool. Figures are µs of
 * main-thread wall time per call; the ratio is after / before, per
 * repetition (paired) and of the medians.
 */
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
    threads: { type: "string", default: "1" },
    tool: { type: "string", default: "worker" },
  },
});
if (values.before === undefined || values.after === undefined) {
  console.error(
    "usage: compare-builds --before PATH/dist/index.js --after PATH/dist/index.js [--pi 1.6] [--tool worker|inline] [--calls N] [--in-flight N] [--reps N] [--threads N]",
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
const threads = Number(values.threads);
const noopModule = new URL("./tools/noop.js", import.meta.url);

type Build = { name: string; runtime: Toolpool.Runtime };

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
