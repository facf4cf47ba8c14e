/**
 * Tells a spawn helper's host death from its thread's end. A host is its pid
 * plus `/proc` start time (a reused pid is not the host), else the pid alone;
 * an unreadable start time never counts as death.
 * @module
 */
import { readFileSync } from "node:fs";

import { hasProc } from "./process-tree.js";

export type StatReader = (pid: number) => string | undefined;

export interface WatchedHost {
  readonly pid: number;
  /** Undefined: the host is known by its pid alone. */
  readonly startTime: string | undefined;
  readonly readStat: StatReader;
}

const readProcStat: StatReader = (pid) => {
  if (!hasProc()) return undefined;
  try {
    return readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined;
  }
};

function parseStat(stat: string): { isEnded: boolean; startTime: string | undefined } {
  // The command name (field 2) may hold spaces and parentheses: the fields after it follow the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const state = fields[0];
  return { isEnded: state === "Z" || state === "X" || state === "x", startTime: fields[19] };
}

function isNumberTaken(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

export function watchHost(pid: number, readStat: StatReader = readProcStat): WatchedHost {
  const stat = readStat(pid);
  const seen = stat === undefined ? undefined : parseStat(stat);
  return { pid, startTime: seen === undefined || seen.isEnded ? undefined : seen.startTime, readStat };
}

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

/** Whether `host` ends within `boundMs` (a killed host's channel closes first). */
export async function hasHostEnded(host: WatchedHost, boundMs: number): Promise<boolean> {
  const end = Date.now() + boundMs;
  for (;;) {
    if (isHostGone(host)) return true;
    if (Date.now() >= end) return false;
    await sleep(10);
  }
}
