/**
 * Suite "pi16": per-call and validation cost with pi 1.6's rules, beside pi
 * 1.6.0's own (bench/pi16-cost.ts). pi 1.6 needs Node >= 22.19: under an
 * older Node the suite runs that script with another Node — `TOOLPOOL_BENCH_NODE`,
 * or one that `.ci/run` unpacked into `TOOLPOOL_NODE_CACHE`
 * (`~/.cache/toolpool-node` by default) — and is skipped with a note when
 * there is none.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { supportsPi16 } from "toolpool";

import type { Pi16CostResult } from "../pi16-cost.js";
import { logStep } from "../lib/progress.js";

export interface Pi16Options {
  calls: number;
  reps: number;
}

export type Pi16SuiteResult = Pi16CostResult | { skipped: string };

export function estimatePi16Ms(options: Pi16Options): number {
  // Four contenders × two modes at ~20 µs a call, six validation rows at ~5 µs, plus a start.
  return 2000 + (options.reps + 1) * options.calls * (8 * 0.02 + 6 * 0.005);
}

/** A Node binary that runs pi 1.6, or undefined. */
function findPi16Node(): string | undefined {
  if (supportsPi16()) return process.execPath;
  const named = process.env.TOOLPOOL_BENCH_NODE;
  if (named !== undefined && named !== "") return named;
  const cache = process.env.TOOLPOOL_NODE_CACHE ?? join(homedir(), ".cache", "toolpool-node");
  if (!existsSync(cache)) return undefined;
  for (const version of readdirSync(cache).sort().reverse()) {
    const binary = join(cache, version, "package", "bin", "node");
    if (existsSync(binary) && supportsPi16(version)) return binary;
  }
  return undefined;
}

export function runPi16Suite(options: Pi16Options): Pi16SuiteResult {
  const node = findPi16Node();
  if (node === undefined) {
    return {
      skipped: `pi 1.6 rows skipped: Node ${process.versions.node} cannot run pi 1.6 (>= 22.19) and no such Node was found (set TOOLPOOL_BENCH_NODE).`,
    };
  }
  logStep(`pi16: per call and validation beside pi 1.6.0, with ${node}`);
  const script = fileURLToPath(new URL("../pi16-cost.js", import.meta.url));
  const child = spawnSync(node, [script, "--json", "--calls", String(options.calls), "--reps", String(options.reps)], {
    encoding: "utf8",
    timeout: 600_000,
    maxBuffer: 16 << 20,
  });
  if (child.error !== undefined) return { skipped: `pi 1.6 rows skipped: ${node} could not run (${String(child.error)})` };
  if (child.status !== 0)
    return { skipped: `pi 1.6 rows skipped: the run failed (exit ${child.status}): ${child.stderr.trim().split("\n").at(-1) ?? ""}` };
  return JSON.parse(child.stdout) as Pi16CostResult;
}
