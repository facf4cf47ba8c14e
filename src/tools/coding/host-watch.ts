/**
 * How a spawn helper (`spawn-helper.ts`) tells that the process whose pool
 * thread started it (its host) is gone, rather than only that thread: both
 * close the helper's channel, and only the host's death must end the
 * processes of the host's bash calls (a thread that ends while its host
 * runs on leaves them to the host's own sweeps, and `keepBackground`'s
 * processes run on).
 *
 * On Linux a host is known by its process number and its start time (from
 * `/proc/<pid>/stat`), so that a number given again to another process
 * after the host died is not taken for the host; a zombie (killed, not yet
 * reaped by its parent) is gone. Elsewhere, by its number alone.
 *
 * @module
 */
import { readFileSync } from "node:fs";

/** A process as the helper saw it when it started: its number, and on Linux its start time. */
export interface WatchedHost {
  readonly pid: number;
  /** The start time (clock ticks since boot) read when the helper started; undefined where there is no `/proc`, or the host was gone already. */
  readonly startTime: string | undefined;
}

const hasProc = process.platform === "linux";

/** `pid`'s start time, or undefined when it is not running (gone, a zombie, or not readable). */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // The command name (field 2) may hold spaces and parentheses: the fields after it follow the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const state = fields[0];
    return state === "Z" || state === "X" || state === "x" ? undefined : fields[19];
  } catch {
    return undefined;
  }
}

/** The host `pid` as it is now (call this when the helper starts). */
export function watchHost(pid: number): WatchedHost {
  return { pid, startTime: hasProc ? startTimeOf(pid) : undefined };
}

/** Whether `host` has ended (or its number now names another process). */
export function isHostGone(host: WatchedHost): boolean {
  if (hasProc) return host.startTime === undefined || startTimeOf(host.pid) !== host.startTime;
  try {
    process.kill(host.pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Resolves true once `host` is gone, or false when it still runs after
 * `boundMs`. The channel of a host killed by a signal closes as the kernel
 * tears the process down, a moment before it is seen to have ended: this
 * waits out that moment, and a host whose thread alone ended is told by
 * its outliving the bound.
 */
export async function hasHostEnded(host: WatchedHost, boundMs: number): Promise<boolean> {
  const end = Date.now() + boundMs;
  for (;;) {
    if (isHostGone(host)) return true;
    if (Date.now() >= end) return false;
    await sleep(10);
  }
}
