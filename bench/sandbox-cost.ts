/**
 * What the bwrap sandbox costs a bash call: `true` (and a short pipeline)
 * through `codingTools` with `sandbox: "bwrap"`, beside the same tools
 * without a sandbox and pi's own bash in process, one call at a time, the
 * arms interleaved call by call so the machine's drift falls on each alike.
 *
 *   npm run bench:sandbox [-- --calls 200 --warmup 20]
 *   (or: npm run build && npx tsc -p tsconfig.bench.json &&
 *        ~/.cache/toolpool-node/22.23.5/package/bin/node dist-bench/sandbox-cost.js)
 *
 * Needs Node >= 22.19 (pi 1.6) and a machine where bwrap runs
 * (`toolpool doctor`). Reports p50 and p90 per arm in ms and the p50
 * overhead of the sandbox over the unsandboxed arm; the target is ≤ 15 ms.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

import type { AgentToolResult, Runtime } from "../dist/index.js";
import { codingTools, createRuntime, probeSandbox, supportsPi16 } from "../dist/index.js";
import { percentile } from "./lib/stats.js";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "200" },
    warmup: { type: "string", default: "20" },
  },
});
const calls = Number(values.calls);
const warmup = Number(values.warmup);
for (const [name, value] of [
  ["calls", calls],
  ["warmup", warmup],
] as const) {
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name}: expected an integer >= 0, got ${JSON.stringify(values[name])}`);
}
if (!supportsPi16()) {
  console.error(`sandbox-cost: needs Node >= 22.19 for pi 1.6's tools, this is ${process.version}`);
  process.exit(2);
}
const probe = probeSandbox();
if (!probe.isAvailable) {
  console.error(`sandbox-cost: the sandbox cannot run here: ${probe.cause} (${probe.fix})`);
  process.exit(2);
}

const workspace = mkdtempSync(join(tmpdir(), "toolpool-sandbox-bench-"));
const commands = ["true", "echo hello | tr a-z A-Z && ls -1 . | wc -l"];

type BashExecute = (toolCallId: string, args: { command: string }) => Promise<AgentToolResult<unknown>>;

interface Arm {
  name: string;
  execute: BashExecute;
  close: () => Promise<void>;
}

function poolArm(name: string, sandbox: "bwrap" | "none"): Arm {
  const runtime: Runtime = createRuntime({ pi: "1.6", tools: codingTools({ workspace, tools: ["bash"], sandbox }) });
  const bash = runtime.agentTools().find((tool) => tool.name === "bash")!;
  return { name, execute: (id, args) => bash.execute(id, args) as Promise<AgentToolResult<unknown>>, close: () => runtime.close() };
}

async function piArm(): Promise<Arm> {
  const pi = (await import("@earendil-works/pi-coding-agent")) as unknown as {
    createBashTool: (cwd: string) => { execute: BashExecute };
  };
  const bash = pi.createBashTool(workspace);
  return { name: "pi's bash in process", execute: (id, args) => bash.execute(id, args), close: async () => {} };
}

const arms: Arm[] = [poolArm("toolpool, sandbox bwrap", "bwrap"), poolArm("toolpool, no sandbox", "none"), await piArm()];
try {
  // The sandboxed arm must be sandboxed: in its own PID namespace, this process is out of reach.
  const seen = await arms[0]!.execute("check", { command: `kill -0 ${process.pid} 2>/dev/null && echo reachable || echo unreachable` });
  const said = seen.content.map((part) => (part.type === "text" ? part.text : "")).join("");
  if (!said.includes("unreachable")) throw new Error(`the sandboxed arm reached this process (pid ${process.pid}): ${said}`);
  const times = new Map<string, Map<string, number[]>>(commands.map((command) => [command, new Map(arms.map((arm) => [arm.name, []]))]));
  for (const command of commands) {
    for (let index = 0; index < warmup + calls; index++) {
      // Interleaved, the order turning each round: no arm always follows another.
      for (let turn = 0; turn < arms.length; turn++) {
        const arm = arms[(index + turn) % arms.length]!;
        const start = performance.now();
        const result = await arm.execute(`c${index}`, { command });
        const ms = performance.now() - start;
        if ((result as { isError?: boolean }).isError === true) throw new Error(`${arm.name}: ${JSON.stringify(result.content)}`);
        if (index >= warmup) times.get(command)!.get(arm.name)!.push(ms);
      }
    }
  }
  console.log(
    `sandbox cost: ${calls} calls per arm and command, one at a time; ${availableParallelism()} cores, load ${loadavg()[0]!.toFixed(2)}, Node ${process.version}, ${probe.version}`,
  );
  for (const command of commands) {
    const byArm = times.get(command)!;
    console.log(`\n\`${command}\`\n\n| arm | p50 ms | p90 ms |\n|---|---:|---:|`);
    for (const arm of arms) {
      const ms = byArm.get(arm.name)!;
      console.log(`| ${arm.name} | ${percentile(ms, 50).toFixed(2)} | ${percentile(ms, 90).toFixed(2)} |`);
    }
    const sandboxed = percentile(byArm.get(arms[0]!.name)!, 50);
    const bare = percentile(byArm.get(arms[1]!.name)!, 50);
    const pi = percentile(byArm.get(arms[2]!.name)!, 50);
    console.log(
      `\np50 overhead of the sandbox: ${(sandboxed - bare).toFixed(2)} ms over toolpool without it (target ≤ 15 ms), ${(sandboxed - pi).toFixed(2)} ms over pi in process`,
    );
  }
} finally {
  await Promise.all(arms.map((arm) => arm.close()));
  rmSync(workspace, { recursive: true, force: true });
}
