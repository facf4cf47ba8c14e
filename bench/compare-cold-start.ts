/**
 * Cold start of two builds of toolpool, side by side: each repetition runs
 * `startup-probe.js` in fresh processes for the before build, then the after
 * build (`import()` alone, and a first batch of 4 no-op calls on 2 threads).
 *
 * ```sh
 * npm run build && npx tsc -p tsconfig.bench.json
 * node dist-bench/compare-cold-start.js --before OLD/dist/index.js --after dist/index.js [--reps 11]
 * ```
 *
 * Figures are medians in ms; the ratio is after / before.
 */
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

import { summarize } from "./lib/stats.js";

const { values } = parseArgs({
  options: { before: { type: "string" }, after: { type: "string" }, reps: { type: "string", default: "11" } },
});
if (values.before === undefined || values.after === undefined) {
  console.error("usage: compare-cold-start --before PATH/dist/index.js --after PATH/dist/index.js [--reps N]");
  process.exit(2);
}
const probe = new URL("./startup-probe.js", import.meta.url);
const builds = { before: pathToFileURL(resolve(values.before)).href, after: pathToFileURL(resolve(values.after)).href };
const samples = { before: { importMs: [] as number[], batchMs: [] as number[] }, after: { importMs: [] as number[], batchMs: [] as number[] } };

function probeOnce(entry: string, mode: string): { importMs: number; batchMs?: number } {
  const output = execFileSync(process.execPath, [probe.pathname, mode, "2", "4"], {
    env: { ...process.env, TOOLPOOL_ENTRY: entry },
    encoding: "utf8",
  });
  return JSON.parse(output.trim().split("\n").at(-1)!) as { importMs: number; batchMs?: number };
}

for (let rep = 0; rep < Number(values.reps); rep++) {
  for (const name of ["before", "after"] as const) {
    samples[name].importMs.push(probeOnce(builds[name], "import-toolpool").importMs);
    samples[name].batchMs.push(probeOnce(builds[name], "batch-toolpool").batchMs!);
  }
}
for (const measure of ["importMs", "batchMs"] as const) {
  const before = summarize(samples.before[measure]).median;
  const after = summarize(samples.after[measure]).median;
  const label = measure === "importMs" ? "import()" : "first batch (2 threads, 4 calls)";
  console.log(`${label.padEnd(34)} before ${before.toFixed(1)} ms  after ${after.toFixed(1)} ms  ratio ${(after / before).toFixed(3)}`);
}
