/**
 * The CPU a benchmark's process spent, its child processes included, from
 * Linux's /proc.
 *
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";

/**
 * Seconds of CPU of this process's threads, and of its child processes: the
 * reaped ones (from /proc/self/stat), and the pool threads' spawn helpers,
 * which start the tools' child processes and are reaped only when their
 * thread ends (their own CPU and their reaped children's, from their stat).
 */
export function cpuNow(): { process: number; children: number } {
  const usage = process.cpuUsage();
  const ticks = 100;
  const fieldsOf = (pid: string | number) => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  const own = fieldsOf("self");
  let helperTicks = 0;
  for (const pid of childPids()) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("spawn-helper.js")) continue;
      const fields = fieldsOf(pid);
      helperTicks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    } catch {}
  }
  return { process: (usage.user + usage.system) / 1e6, children: (Number(own[13]) + Number(own[14]) + helperTicks) / ticks };
}

/** The process numbers of this process's children (every thread's), from /proc. */
function childPids(): number[] {
  const pids: number[] = [];
  for (const task of readdirSync("/proc/self/task")) {
    try {
      for (const pid of readFileSync(`/proc/self/task/${task}/children`, "utf8").trim().split(" ")) if (pid !== "") pids.push(Number(pid));
    } catch {}
  }
  return pids;
}
