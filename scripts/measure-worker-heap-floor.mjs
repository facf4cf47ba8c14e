/**
 * Measures, per Node binary, the smallest `resourceLimits` with which a
 * worker of toolpool's pool starts (dist/workers/thread/worker-entry.cjs under
 * Piscina) and runs a small call (the built-in `hash` of a short text).
 *
 * Why in child processes: on Node 22 and later a worker whose heap is too
 * small to deserialize V8's startup snapshot does not fail as a worker, it
 * aborts the whole process ("Fatal JavaScript out of memory: GC during
 * deserialization"). Each probe therefore runs in a process of its own and
 * its fate is read from how that process ended.
 *
 * Each limit is scanned alone over a grid (the others left at Node's
 * defaults), then old and young generation together (as a small heap is
 * usually asked for), then a heap overrun in a started worker at the floor
 * found. Needs a build (`npm run build`).
 *
 *   node scripts/measure-worker-heap-floor.mjs [--repeat N] [NODE_BINARY...]
 *
 * Without binaries it measures the Node running it. Prints one Markdown table
 * per binary; docs/node-versions.md ("Worker heap limits") and `minimumResourceLimits`
 * (src/contracts/minimum-resource-limits.ts) take their figures from it.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const dist = new URL("../dist/", import.meta.url);
const self = fileURLToPath(import.meta.url);

/**
 * In the child: one pool of one thread with these limits, one call; prints
 * the call's outcome as JSON. A host abort prints nothing and ends the
 * process by a signal.
 */
async function probe(resourceLimits, kind) {
  const { WorkerPool } = await import(new URL("workers/worker-pool.js", dist).href);
  const { resolveRuntimeOptions } = await import(new URL("options.js", dist).href);
  const { systemClock } = await import(new URL("clock.js", dist).href);
  const { builtinTools, workerTool } = await import(new URL("index.js", dist).href);
  // The limits go to the pool as they are: the runtime's own check of them is what this measures for.
  const base = resolveRuntimeOptions({ pool: { maxThreads: 1 } }).pool;
  const pool = new WorkerPool(Object.freeze({ ...base, resourceLimits }), systemClock, () => {});
  let tool;
  let args;
  if (kind === "overrun") {
    const directory = mkdtempSync(join(tmpdir(), "toolpool-heap-floor-"));
    const module = join(directory, "hog.mjs");
    writeFileSync(module, "export async function execute() { const hog = []; for (;;) hog.push(new Array(100_000).fill(hog.length)); }\n");
    process.on("exit", () => rmSync(directory, { recursive: true, force: true }));
    tool = workerTool({ name: "hog", description: "hog", parameters: { type: "object" }, module });
    args = {};
  } else {
    [tool] = builtinTools(["hash"]);
    args = { text: "hello" };
  }
  const outcome = await pool.run({ tool, toolCallId: "probe", args });
  await pool.close({ force: true });
  console.log(JSON.stringify({ kind: outcome.kind, code: outcome.code }));
}

/** Runs one probe in a child process of `node`; returns "ok", an error code, or how the process died. */
function runProbe(node, limits, kind = "call") {
  const child = spawnSync(node, [self, "--probe", JSON.stringify(limits), kind], { encoding: "utf8", timeout: 60_000 });
  if (child.error?.code === "ETIMEDOUT") return "stuck (60 s)";
  if (child.signal) return `host abort (${child.signal})`;
  const line = child.stdout.trim().split("\n").at(-1) ?? "";
  if (child.status !== 0 || !line.startsWith("{")) return `host exit ${child.status}`;
  const outcome = JSON.parse(line);
  return outcome.kind === "ok" ? "ok" : outcome.code;
}

const grids = {
  maxOldGenerationSizeMb: [1, 2, 2.5, 3, 4, 5, 5.5, 6, 6.5, 7, 7.5, 8, 10, 12, 16],
  maxYoungGenerationSizeMb: [0.001, 0.01, 0.1, 0.25, 0.5, 1, 2, 4, 8],
  codeRangeSizeMb: [0.001, 0.01, 0.1, 0.25, 0.5, 1, 2, 4, 8],
  stackSizeMb: [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1, 2, 4],
  "maxOldGenerationSizeMb = maxYoungGenerationSizeMb": [1, 2, 2.5, 3, 4, 5, 5.5, 6, 6.5, 7, 7.5, 8, 10, 12, 16],
};

function limitsFor(dimension, value) {
  if (dimension.includes(" = ")) return Object.fromEntries(dimension.split(" = ").map((name) => [name, value]));
  return { [dimension]: value };
}

async function measure(argv) {
  let repeat = 2;
  const nodes = [];
  for (let index = 0; index < argv.length; index++) {
    if (argv[index] === "--repeat") repeat = Number(argv[++index]);
    else nodes.push(argv[index]);
  }
  if (!(Number.isInteger(repeat) && repeat >= 1)) throw new Error(`Expected --repeat to be an integer >= 1, got ${repeat}`);
  if (nodes.length === 0) nodes.push(process.execPath);
  for (const node of nodes) {
    const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();
    console.log(`\n### ${version} (${node}), ${repeat} probe(s) per value\n`);
    console.log("| limit (others at Node's defaults) | outcome per value | smallest that always runs a call |");
    console.log("|---|---|---|");
    const floors = {};
    for (const [dimension, grid] of Object.entries(grids)) {
      const cells = [];
      const okAt = [];
      for (const value of grid) {
        const outcomes = new Set(Array.from({ length: repeat }, () => runProbe(node, limitsFor(dimension, value))));
        cells.push(`${value}: ${[...outcomes].join(" / ")}`);
        okAt.push(outcomes.size === 1 && outcomes.has("ok"));
      }
      // The floor is the smallest value from which every larger one ran its call too.
      let floorIndex = grid.length;
      while (floorIndex > 0 && okAt[floorIndex - 1]) floorIndex--;
      floors[dimension] = grid[floorIndex];
      console.log(`| \`${dimension}\` | ${cells.join("; ")} | ${grid[floorIndex] ?? `none up to ${grid.at(-1)}`} |`);
    }
    const both = floors["maxOldGenerationSizeMb = maxYoungGenerationSizeMb"];
    if (both !== undefined) {
      const limits = limitsFor("maxOldGenerationSizeMb = maxYoungGenerationSizeMb", both);
      const outcomes = new Set(Array.from({ length: repeat }, () => runProbe(node, limits, "overrun")));
      console.log(`\nA call that overruns the heap of a started worker at ${JSON.stringify(limits)}: ${[...outcomes].join(" / ")}`);
    }
  }
}

if (process.argv[2] === "--probe") {
  await probe(JSON.parse(process.argv[3]), process.argv[4]);
} else {
  await measure(process.argv.slice(2));
}
