import { readdirSync, readFileSync } from "node:fs";

import { until } from "./helpers.js";

/** The process numbers in /proc, this process's aside. */
function processes(): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => pid !== process.pid);
}

/**
 * The live processes whose environment holds a bash call marker starting
 * with `prefix` (the call's own, or one it inherited from a call it runs
 * in), read straight from /proc. Zombies (exited, not yet reaped) have no
 * environment, so they are not counted.
 */
export function markedProcesses(prefix: string): number[] {
  return processes().filter((pid) => {
    try {
      const marker = "TOOLPOOL_BASH_CALL=";
      const entry = readFileSync(`/proc/${pid}/environ`, "latin1")
        .split("\0")
        .find((line) => line.startsWith(marker));
      const calls = entry === undefined ? [] : entry.slice(marker.length).split(";");
      return calls.some((call) => call.startsWith(prefix));
    } catch {
      return false;
    }
  });
}

/**
 * The live processes running `sleep <seconds>` (or about to): how a test finds a process
 * whatever its environment. Zombies have an empty command line.
 */
export function sleepers(seconds: string): number[] {
  return processes().filter((pid) => {
    try {
      // Also while a launcher (`setsid`, `env -i`) has not yet exec'd it.
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      return argv.some((argument, at) => argument.endsWith("sleep") && argv[at + 1] === seconds);
    } catch {
      return false;
    }
  });
}

/** Whether `pid` runs (a zombie, exited and not yet reaped, does not). */
export function isRunning(pid: number): boolean {
  try {
    return !readFileSync(`/proc/${pid}/stat`, "latin1").split(") ")[1]!.startsWith("Z");
  } catch {
    return false;
  }
}

/** Those of `pids` still running once all have ended or 20 s have passed: what a test expects to be empty. */
export async function runningAfterWait(pids: readonly number[], what: string): Promise<number[]> {
  await until(
    () => !pids.some(isRunning),
    () => `${what} ended (left: ${pids.filter(isRunning).join(", ")})`,
    { limitMs: 20_000 },
  ).catch(() => {});
  return pids.filter(isRunning);
}
