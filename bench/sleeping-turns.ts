/**
 * One contender of `compare-builds --batches` alone: turns of 16 batches of
 * no-op worker calls, a sleep between turns (as a contender sleeps while the
 * others take theirs), in one process. Prints µs per call (median over
 * turns) and the process's CPU time per call. Run it once per build and
 * with `--bare`, alternating, to see what the sleeps cost each.
 *
 *   npx tsc -p tsconfig.bench.json &&
 *   node dist-bench/sleeping-turns.js [--index OTHER/dist/index.js | --bare] [--turns 25] [--sleep 150] [--batch-calls 64] [--threads 2]
 *
 * @module
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

import type * as Toolpool from "../dist/index.js";
import { createBarePiscina } from "./lib/bare-piscina.js";
import { noopParameters } from "./lib/constants.js";
import { median } from "./lib/stats.js";

const { values } = parseArgs({
  options: {
    index: { type: "string" },
    bare: { type: "boolean", default: false },
    turns: { type: "string", default: "25" },
    sleep: { type: "string", default: "150" },
    "batch-calls": { type: "string", default: "64" },
    threads: { type: "string", default: "2" },
  },
});
const numbers = {
  turns: Number(values.turns),
  sleep: Number(values.sleep),
  batchCalls: Number(values["batch-calls"]),
  threads: Number(values.threads),
};
for (const [name, value] of Object.entries(numbers)) {
  if (!Number.isInteger(value) || value < (name === "sleep" ? 0 : 1)) throw new Error(`--${name}: expected an integer, got ${value}`);
}
const { turns, sleep, batchCalls, threads } = numbers;
const batchesPerTurn = 16;
const warmupBatches = 300;
const noopModule = new URL("./tools/noop.js", import.meta.url);

async function contender(): Promise<{ name: string; runBatch: () => Promise<void>; close: () => Promise<void> }> {
  if (values.bare) {
    const piscina = createBarePiscina("defaults", noopModule, threads, 0);
    return {
      name: "bare Piscina, its defaults",
      runBatch: async () => {
        await Promise.all(Array.from({ length: batchCalls }, () => piscina.run({})));
      },
      close: () => piscina.close(),
    };
  }
  const index = values.index === undefined ? new URL("../dist/index.js", import.meta.url).href : pathToFileURL(resolve(values.index)).href;
  const toolpool = (await import(index)) as typeof Toolpool;
  const runtime = toolpool.createRuntime({
    tools: [toolpool.workerTool({ name: "noop", description: "Returns a constant", parameters: noopParameters, module: noopModule })],
    pool: { maxThreads: threads, minThreads: threads },
  });
  const message: Toolpool.AssistantMessage = {
    role: "assistant",
    content: Array.from({ length: batchCalls }, (_, id) => ({ type: "toolCall" as const, id: `call_${id}`, name: "noop", arguments: {} })),
  };
  return {
    name: `toolpool executeToolCalls (${values.index ?? "this build"})`,
    runBatch: async () => {
      const { messages } = await runtime.executeToolCalls(message);
      if (messages.some((result) => result.isError)) throw new Error(`a call failed: ${JSON.stringify(messages.find((result) => result.isError))}`);
    },
    close: () => runtime.close(),
  };
}

const { name, runBatch, close } = await contender();
try {
  for (let batch = 0; batch < warmupBatches; batch++) await runBatch();
  const usPerCall: number[] = [];
  let cpuUs = 0;
  for (let turn = 0; turn < turns; turn++) {
    if (sleep > 0) await new Promise((wake) => setTimeout(wake, sleep));
    const cpu = process.cpuUsage();
    const start = performance.now();
    for (let batch = 0; batch < batchesPerTurn; batch++) await runBatch();
    usPerCall.push(((performance.now() - start) * 1000) / (batchesPerTurn * batchCalls));
    const spent = process.cpuUsage(cpu);
    cpuUs += spent.user + spent.system;
  }
  const calls = turns * batchesPerTurn * batchCalls;
  console.log(
    `${name}: ${median(usPerCall).toFixed(1)} µs per call (median of ${turns} turns of ${batchesPerTurn} batches of ${batchCalls}, ${sleep} ms asleep between turns), ${(cpuUs / calls).toFixed(1)} µs of CPU per call`,
  );
} finally {
  await close();
}
