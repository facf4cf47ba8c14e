/**
 * A spread grep and a light session sharing one pool: how long a light
 * session's `hash` waits while another session's `grep` spreads over the
 * pool's threads, against the same `hash` on an idle pool, side by side in
 * one run (rounds interleaved, medians).
 *
 *   npm run build && npx tsc -p tsconfig.bench.json && node dist-bench/spread-share.js [--rounds 7] [--threads 2]
 *
 * The grep searches a copy of the project's installed packages (tens of
 * thousands of files) for a pattern that matches nowhere, so it searches
 * everything; the light call comes once the grep's part runs. Before parts
 * shared the pool, the light call waited for the whole grep (3,012 ms on 2
 * threads, against 103 ms without the spread); now a part gives its thread
 * back between chunks of 64 files.
 *
 * @module
 */
import { availableParallelism, cpus, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";

import { builtinTools, createRuntime, type AssistantMessage, type PoolCallEvent } from "toolpool";

import { copyInstalledTree } from "./lib/installed-tree.js";
import { summarize } from "./lib/stats.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "7" }, threads: { type: "string", default: "2" } } });
const rounds = Number(values.rounds);
const threads = Number(values.threads);

const call = (id: string, name: string, args: Record<string, unknown>): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "toolCall", id, name, arguments: args }],
});

const tree = copyInstalledTree(1 << 20);
if (tree === undefined) throw new Error("spread-share: no node_modules to copy (run npm install)");
try {
  const runtime = createRuntime({ tools: builtinTools(["grep", "hash"], { root: tree.root }), pool: { minThreads: threads, maxThreads: threads } });
  const events: PoolCallEvent[] = [];
  runtime.poolEvents.on((event) => events.push(event));
  const hashArgs = { path: "piscina/package.json" };
  const grepArgs = { pattern: "no such text anywhere 7f3a9c", maxResults: 1 };
  const light = async (id: string): Promise<number> => {
    const started = performance.now();
    const { messages } = await runtime.executeToolCalls(call(id, "hash", hashArgs), { sessionKey: "light" });
    if (messages[0]!.isError) throw new Error(`hash failed: ${JSON.stringify(messages[0]!.content)}`);
    return performance.now() - started;
  };
  // Warm every thread with both tools.
  for (let i = 0; i < threads; i++)
    await Promise.all([light(`w${i}`), runtime.executeToolCalls(call(`wg${i}`, "grep", { ...grepArgs, path: "piscina" }))]);
  const idle: number[] = [];
  const behindGrep: number[] = [];
  const grepMs: number[] = [];
  const partsSeen: number[] = [];
  for (let round = 0; round < rounds; round++) {
    idle.push(await light(`i${round}`));
    events.length = 0;
    const grepStarted = performance.now();
    const grep = runtime.executeToolCalls(call(`g${round}`, "grep", grepArgs), { sessionKey: "heavy" });
    // The light call comes once a part runs (or the grep has ended without one).
    const deadline = performance.now() + 60_000;
    while (
      !events.some((event) => event.type === "started" && event.tool.includes("(part:")) &&
      !events.some((event) => event.type === "ended" && event.toolCallId === `g${round}`)
    ) {
      if (performance.now() > deadline) throw new Error("spread-share: the grep neither spread nor ended in 60 s");
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    partsSeen.push(events.filter((event) => event.type === "started" && event.tool.includes("(part:")).length);
    behindGrep.push(await light(`l${round}`));
    const { messages } = await grep;
    if (messages[0]!.isError) throw new Error(`grep failed: ${JSON.stringify(messages[0]!.content)}`);
    grepMs.push(performance.now() - grepStarted);
  }
  await runtime.close();
  const median = (samples: number[]) => summarize(samples).median;
  const lines = [
    `Spread grep and a light session: ${threads} threads; ${tree.files.toLocaleString("en-US")} files (${(tree.bytes / 1e6).toFixed(0)} MB); ${rounds} rounds; ${availableParallelism()} cores (${cpus()[0]?.model.trim()}), load ${loadavg()[0]!.toFixed(1)}; Node ${process.version}`,
    "",
    "| figure | median (ms) | samples |",
    "|---|---:|---|",
    `| light hash, pool idle | ${median(idle).toFixed(1)} | ${idle.map((ms) => ms.toFixed(0)).join(", ")} |`,
    `| light hash, behind a spread grep | ${median(behindGrep).toFixed(1)} | ${behindGrep.map((ms) => ms.toFixed(0)).join(", ")} |`,
    `| the grep | ${median(grepMs).toFixed(1)} | ${grepMs.map((ms) => ms.toFixed(0)).join(", ")} |`,
    "",
    `Light call behind the grep ÷ idle: ${(median(behindGrep) / median(idle)).toFixed(2)}×; share of the grep's time the light call waited: ${((100 * median(behindGrep)) / median(grepMs)).toFixed(1)}%; parts started when the light call came: ${partsSeen.join(", ")}.`,
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
} finally {
  tree.remove();
}
