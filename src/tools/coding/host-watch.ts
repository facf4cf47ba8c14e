/**
 * How a spawn helper (`spawn-helper.ts`) tells that the process whose pool
 * thread started it (its host) is gone, rather than only that thread: both
 * close the helper's channel, and only the host's death must end the
 * processes of the host's bash calls (a thread that ends while its host
 * runs on leaves them to the host's own sweeps, and `keepBackground`'s
 * processes run on).
 *
 * Where `/proc` can be read (and is this PID namespace's: `/proc/self` names
 * this process), a host is known by its process number and its start time
 * (from `/proc/<pid>/stat`), so that a number given again to another process
 * after the host died is not taken for the host; a zombie (killed, not yet
 * reaped by its parent) is gone. Where it cannot (not Linux; a chroot or a
 * sandbox without `/proc`, or with an empty one over it), or the host's
 * start time cannot be read, by its number alone: a host is gone once a
 * signal 0 to it finds no process (`ESRCH`). A start time that cannot be
 * read never counts as the host's death: the helper would otherwise end
 * every bash call of a host that runs on.
 *
 * @module
 */
import { readFileSync } from "node:fs";

import { hasProc } from "./process-tree.js";

/** Reads `/proc/<pid>/stat`: its text, or undefined when it cannot be read (no such process, no `/proc`). */
export type StatReader = (pid: number) => string | undefined;

/** A process as the helper saw it when it started: its number, and where `/proc` tells it, its start time. */
export interface WatchedHost {
  readonly pid: number;
  /**
   * The start time (clock ticks since boot) read when the watch began;
   * undefined where it could not be read (no `/proc`), the host was a
   * zombie already, or gone: then the host is known by its number alone.
   */
  readonly startTime: string | undefined;
  /** How `/proc/<pid>/stat` is read: injectable for tests. */
  readonly readStat: StatReader;
}

/** `/proc/<pid>/stat`, or undefined where it cannot be read. */
const readProcStat: StatReader = (pid) => {
  if (!hasProc()) return undefined;
  try {
    return readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined;
  }
};

/** What a stat line says: whether the process has ended (a zombie), and its start time. */
function parseStat(stat: string): { isEnded: boolean; startTime: string | undefined } {
  // The command name (field 2) may hold spaces and parentheses: the fields after it follow the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const state = fields[0];
  return { isEnded: state === "Z" || state === "X" || state === "x", startTime: fields[19] };
}

/** Whether a process numbered `pid` runs (or is a zombie), by signal 0: only `ESRCH` says it is not there. */
function isNumberTaken(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: a process of another user holds the number.
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** The host `pid` as it is now (call this when the helper starts); `readStat` reads `/proc/<pid>/stat`. */
export function watchHost(pid: number, readStat: StatReader = readProcStat): WatchedHost {
  const stat = readStat(pid);
  const seen = stat === undefined ? undefined : parseStat(stat);
  return { pid, startTime: seen === undefined || seen.isEnded ? undefined : seen.startTime, readStat };
}

/** Whether `host` has ended (or its number now names another process). */
export function isHostGone(host: WatchedHost): boolean {
  const stat = host.readStat(host.pid);
  if (stat !== undefined) {
    const now = parseStat(stat);
    if (now.isEnded) return true;
    if (host.startTime !== undefined) return now.startTime !== host.startTime;
  }
  return !isNumberTaken(host.pid);
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
