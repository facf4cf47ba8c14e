/**
 * The CPU a benchmark's process spent, its child processes included, from
 * Linux's /proc.
 *
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The spawn helper of this checkout's build, as its processes' command lines name it. */
const helperPath = fileURLToPath(new URL("../../dist/tools/coding/spawn-helper.js", import.meta.url));

/** A reading of {@link cpuNow}: seconds of CPU, each helper's apart (by process number). */
export interface CpuReading {
  /** This process's threads. */
  process: number;
  /** Its reaped children. */
  children: number;
  /** Each spawn helper's own CPU and its reaped children's. */
  helpers: Map<number, number>;
}

/**
 * Seconds of CPU of this process's threads, and of the processes that run
 * its tools: its reaped children (from /proc/self/stat), and the pool
 * threads' spawn helpers, which start the tools' child processes (their own
 * CPU and their reaped children's). A helper is no child of this process (it
 * is started through a shell that exits): it is found by its command line.
 */
export function cpuNow(): CpuReading {
  const usage = process.cpuUsage();
  const ticks = 100;
  const fieldsOf = (pid: string | number) => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  const own = fieldsOf("self");
  const helpers = new Map<number, number>();
  for (const pid of helperPids()) {
    try {
      const fields = fieldsOf(pid);
      helpers.set(pid, (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / ticks);
    } catch {}
  }
  return { process: (usage.user + usage.system) / 1e6, children: (Number(own[13]) + Number(own[14])) / ticks, helpers };
}

/**
 * The CPU spent since `start`: this process's threads, and its children's
 * with the helpers'. A helper counts from `start` (or from its start, when
 * it began since); one that ended in between counts nothing past `start`,
 * as its last figures went with it (closing a runtime ends its helpers).
 */
export function cpuSince(start: CpuReading): { process: number; children: number } {
  const now = cpuNow();
  let helpers = 0;
  for (const [pid, seconds] of now.helpers) helpers += seconds - (start.helpers.get(pid) ?? 0);
  return { process: now.process - start.process, children: now.children - start.children + helpers };
}

/** The process numbers of this checkout's spawn helpers, from /proc. */
function helperPids(): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").includes(helperPath)) pids.push(Number(name));
    } catch {}
  }
  return pids;
}
