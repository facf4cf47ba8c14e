/**
 * Summarizes a V8 `.cpuprofile` (from `node --cpu-prof`): self time per
 * function and per origin (toolpool, piscina, ajv, Node internals, GC…).
 *
 *   node dist-bench/profile-summary.js <file.cpuprofile> [--top 25] [--calls N]
 *
 * With `--calls`, times are also given in µs per call.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({ options: { top: { type: "string", default: "25" }, calls: { type: "string" } }, allowPositionals: true });
const file = positionals[0];
if (file === undefined) {
  process.stderr.write("Usage: node dist-bench/profile-summary.js <file.cpuprofile> [--top 25]\n");
  process.exit(2);
}
const top = Number(values.top);
const calls = values.calls === undefined ? undefined : Number(values.calls);
const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));

// Self time of a node = sum of the time deltas of the samples that landed in it.
const selfUs = new Map<number, number>();
profile.samples.forEach((id, index) => {
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
});
const totalUs = profile.endTime - profile.startTime;

const byFunction = new Map<string, number>();
const byOrigin = new Map<string, number>();
for (const [id, us] of selfUs) {
  const frame = nodes.get(id)!.callFrame;
  const key = `${frame.functionName || "(anonymous)"} ${shortUrl(frame.url)}${frame.url ? `:${frame.lineNumber + 1}` : ""}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  const origin = originOf(frame.url, frame.functionName);
  byOrigin.set(origin, (byOrigin.get(origin) ?? 0) + us);
}

const pct = (us: number): string => `${((us / totalUs) * 100).toFixed(1)}%`;
const ms = (us: number): string => (us / 1000).toFixed(0);
const perCall = (us: number): string => (calls === undefined ? "" : ` ${(us / calls).toFixed(2)} |`);
const perCallHeader = calls === undefined ? ["", ""] : [" µs/call |", "---:|"];
const busyUs = totalUs - (byOrigin.get("(idle)") ?? 0);
const lines = [
  `profile ${file}: ${ms(totalUs)} ms, busy (not idle) ${ms(busyUs)} ms = ${pct(busyUs)}` +
    (calls === undefined ? "" : `; per call: ${(totalUs / calls).toFixed(2)} µs wall, ${(busyUs / calls).toFixed(2)} µs busy`),
  "",
  `| origin | self ms | share of wall |${perCallHeader[0]}`,
  `|---|---:|---:|${perCallHeader[1]}`,
  ...[...byOrigin].sort((a, b) => b[1] - a[1]).map(([origin, us]) => `| ${origin} | ${ms(us)} | ${pct(us)} |${perCall(us)}`),
  "",
  `| function (self time) | self ms | share of wall |${perCallHeader[0]}`,
  `|---|---:|---:|${perCallHeader[1]}`,
  ...[...byFunction]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, us]) => `| \`${name}\` | ${ms(us)} | ${pct(us)} |${perCall(us)}`),
];
process.stdout.write(`${lines.join("\n")}\n`);

function shortUrl(url: string): string {
  const nodeModules = url.lastIndexOf("node_modules/");
  if (nodeModules !== -1) return url.slice(nodeModules + "node_modules/".length);
  const dist = url.search(/\/dist(-bench)?\//);
  if (dist !== -1) return url.slice(dist + 1);
  return url;
}

function originOf(url: string, functionName: string): string {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native/V8)";
  if (url.startsWith("node:")) return "node internals";
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (match !== null) return match[1]!;
  if (url.includes("/dist-bench/")) return "bench harness";
  if (url.includes("/dist/")) return "toolpool (dist)";
  return url;
}
