/**
 * The machine's own floor for event-loop delay under a load: a separate,
 * idle Node process that only measures its event loop (1 ms resolution)
 * while the load runs beside it. Whatever a loaded process's main thread
 * measures above this, it adds itself; what this measures, no code in that
 * process could take away (the kernel's scheduling of the cores the load
 * keeps busy).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";

/** What the idle process measured, in ms. */
export interface IdleDelay {
  p99Ms: number;
  maxMs: number;
}

const probeSource = `
const { monitorEventLoopDelay } = require("node:perf_hooks");
const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
process.stdout.write("ready\\n");
process.stdin.resume();
process.stdin.on("end", () => {
  delay.disable();
  process.stdout.write(JSON.stringify({ p99Ms: delay.percentile(99) / 1e6, maxMs: delay.max / 1e6 }) + "\\n");
});
`;

/** Starts the idle process; `stop()` ends it and gives what it measured meanwhile. */
export async function startIdleProbe(): Promise<{ stop: () => Promise<IdleDelay> }> {
  const child = spawn(process.execPath, ["-e", probeSource], { stdio: ["pipe", "pipe", "inherit"] });
  let output = "";
  child.stdout.setEncoding("utf8");
  await new Promise<void>((resolve, reject) => {
    const onExit = (code: number | null, signal: string | null) =>
      reject(new Error(`the idle probe ended before it measured (exit ${code ?? signal}): ${JSON.stringify(output)}`));
    child.once("exit", onExit);
    child.once("error", reject);
    child.stdout.on("data", (chunk: string) => {
      output += chunk;
      if (output.includes("ready\n")) {
        child.off("exit", onExit);
        child.off("error", reject);
        resolve();
      }
    });
  });
  return {
    async stop() {
      const exited = once(child, "close");
      child.stdin.end();
      await exited;
      const line = output.split("\n").find((text) => text.startsWith("{"));
      if (line === undefined) throw new Error(`the idle probe printed no figures: ${JSON.stringify(output)}`);
      return JSON.parse(line) as IdleDelay;
    },
  };
}
