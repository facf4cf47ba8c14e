/**
 * CPU time of each thread of this process, from Linux's
 * `/proc/self/task/<tid>/stat` (user + system, in clock ticks of 10 ms).
 * Worker threads, V8's helper threads and libuv's are all named "node"
 * there, so a caller tells them apart by what they spent.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of `/proc`'s times: 100 on every Linux Node runs on. */
const ticksPerSecond = 100;

/** Milliseconds of CPU each thread has used so far, by thread id; undefined where `/proc` has no tasks. */
export function readThreadCpuMs(): Map<number, number> | undefined {
  if (!existsSync("/proc/self/task")) return undefined;
  const times = new Map<number, number>();
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      times.set(Number(tid), ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return times;
}

/** Where a run's CPU went, in ms: the main thread, the `poolThreads` busiest others, and the rest. */
export interface ThreadCpuSplit {
  mainMs: number;
  poolMs: number;
  otherMs: number;
}

/**
 * Splits the CPU used between two readings: the main thread (whose id is the
 * process id), the `poolThreads` other threads that used the most (a pool's
 * workers, when it kept them busy), and all the rest (V8's helpers for
 * garbage collection and compilation, libuv's, idle workers).
 */
export function splitThreadCpu(before: Map<number, number>, after: Map<number, number>, poolThreads: number): ThreadCpuSplit {
  let mainMs = 0;
  const others: number[] = [];
  for (const [tid, ms] of after) {
    const used = ms - (before.get(tid) ?? 0);
    if (tid === process.pid) mainMs = used;
    else others.push(used);
  }
  others.sort((a, b) => b - a);
  const poolMs = others.slice(0, poolThreads).reduce((sum, ms) => sum + ms, 0);
  const otherMs = others.slice(poolThreads).reduce((sum, ms) => sum + ms, 0);
  return { mainMs, poolMs, otherMs };
}
