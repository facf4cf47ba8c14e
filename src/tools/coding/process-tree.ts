/**
 * Ending a bash call's whole process tree. Each call's shell leads its own
 * process group and carries an inherited env marker (`TOOLPOOL_BASH_CALL`),
 * so processes that `setsid` or double-fork away are found via `/proc`.
 * SIGTERM, then after the grace rounds of SIGSTOP (so a fork loop cannot
 * outrun us) and SIGKILL until none is left. Without `/proc`: the group only.
 * @module
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { isMainThread } from "node:worker_threads";

/** The environment variable that marks a bash call's processes. */
export const callMarkerName = "TOOLPOOL_BASH_CALL";

/**
 * `<pid>:<start>:` of this process; the start time keeps a same-numbered
 * process of another PID namespace from matching.
 */
export function processMarkerPrefix(): string {
  return `${process.pid}:${ownStartTime()}:`;
}

export function threadMarkerPrefix(threadId: number): string {
  return `${processMarkerPrefix()}${threadId}:`;
}

let startTime: string | undefined;

function ownStartTime(): string {
  if (startTime === undefined) {
    const stat = hasProc() ? readOr(() => readFileSync("/proc/self/stat", "latin1"), "") : "";
    // The command name (field 2) may hold spaces and parentheses: the fields after it follow the last ")".
    const field = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    startTime = field !== undefined && /^\d+$/.test(field) ? field : "0";
  }
  return startTime;
}

let procIsReadable: boolean | undefined;

/** Whether `/proc` is readable and belongs to this PID namespace. */
export function hasProc(): boolean {
  if (procIsReadable === undefined) {
    try {
      procIsReadable = readlinkSync("/proc/self") === String(process.pid) && readFileSync("/proc/self/stat", "latin1").length > 0;
    } catch {
      procIsReadable = false;
    }
  }
  return procIsReadable;
}

/** `mine;outer`: an outer bash call still reaches inner calls' own groups. */
export function chainedMarker(marker: string, inherited: string | undefined): string {
  return inherited === undefined || inherited === "" ? marker : `${marker};${inherited}`;
}

const entryStart = Buffer.from(`${callMarkerName}=`);

interface MarkerMatch {
  prefix: string;
  isWhole: boolean;
}

function environHas(environ: Buffer, match: MarkerMatch): boolean {
  let at = environ.subarray(0, entryStart.length).equals(entryStart) ? 0 : -1;
  for (let found = environ.indexOf(entryStart); at === -1 && found !== -1; found = environ.indexOf(entryStart, found + 1)) {
    if (environ[found - 1] === 0) at = found;
  }
  if (at === -1) return false;
  const end = environ.indexOf(0, at);
  const value = environ.toString("latin1", at + entryStart.length, end === -1 ? environ.length : end);
  for (const marker of value.split(";")) if (match.isWhole ? marker === match.prefix : marker.startsWith(match.prefix)) return true;
  return false;
}

/**
 * With `fromPid`, only pids given since are read. Workers read synchronously
 * (cheaper than libuv's pool); the main thread never does.
 */
async function findMarkedProcesses(prefix: string, isWhole = false, fromPid?: number): Promise<number[]> {
  if (!isMainThread) return findMarkedProcessesSync(prefix, isWhole, fromPid);
  if (!hasProc()) return [];
  const needle: MarkerMatch = { prefix, isWhole };
  const names = await readdir("/proc").catch(() => [] as string[]);
  const last = fromPid === undefined ? 0 : await readFile(lastPidFile, "utf8").then(pidOf, () => 0);
  const pids = candidatePids(names, fromPid, last);
  const found: number[] = [];
  for (let start = 0; start < pids.length; start += 64) {
    await Promise.all(
      pids.slice(start, start + 64).map(async (pid) => {
        const environ = await readFile(`/proc/${pid}/environ`).catch(() => undefined);
        if (environ !== undefined && environHas(environ, needle)) found.push(pid);
      }),
    );
  }
  return found;
}

function findMarkedProcessesSync(prefix: string, isWhole = false, fromPid?: number): number[] {
  if (!hasProc()) return [];
  const needle: MarkerMatch = { prefix, isWhole };
  const names = readOr(() => readdirSync("/proc"), [] as string[]);
  const last = fromPid === undefined ? 0 : readOr(() => pidOf(readFileSync(lastPidFile, "utf8")), 0);
  return candidatePids(names, fromPid, last).filter((pid) => readOr(() => environHas(readFileSync(`/proc/${pid}/environ`), needle), false));
}

const lastPidFile = "/proc/sys/kernel/ns_last_pid";

const pidOf = (text: string): number => Number(text.trim()) || 0;

function readOr<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}

function candidatePids(names: readonly string[], fromPid: number | undefined, last: number): number[] {
  const isSince = (pid: number) =>
    fromPid === undefined || last === 0 ? true : last >= fromPid ? pid >= fromPid && pid <= last : pid >= fromPid || pid <= last;
  const own = process.pid;
  return names
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => pid !== own && isSince(pid));
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {}
}

interface ProcessTree {
  group?: number | undefined;
  marker: string;
  isWholeMarker: boolean;
  fromPid?: number | undefined;
  /** Gets only the SIGKILL, and its group too: a sandbox's bwrap, whose end ends everything in the sandbox at once. */
  sparedFromTerm?: number | undefined;
}

function isGroupAlive(group: number): boolean {
  try {
    process.kill(-group, 0);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const maxKillRounds = 50;

/** Ends every process of `tree`; resolves with how many marked processes it signalled. */
export async function endProcessTree(tree: ProcessTree, graceMs: number): Promise<number> {
  const find = () => findMarkedProcesses(tree.marker, tree.isWholeMarker, tree.fromPid);
  const seen = new Set<number>();
  // With /proc the marker alone says whether any is left: a group check would count zombies.
  const groupAlive = () => tree.group !== undefined && !hasProc() && isGroupAlive(tree.group);
  if (tree.group !== undefined && tree.group !== tree.sparedFromTerm) signal(-tree.group, "SIGTERM");
  let marked = await find();
  for (const pid of marked) {
    seen.add(pid);
    if (pid !== tree.sparedFromTerm) signal(pid, "SIGTERM");
  }
  const graceEnd = Date.now() + graceMs;
  while (Date.now() < graceEnd && (marked.length > 0 || groupAlive())) {
    await sleep(Math.min(50, Math.max(1, graceEnd - Date.now())));
    marked = await find();
  }
  // The group is always killed in round one: a member that dropped the marker
  // (`env -i`) is found by its group alone; a live group's id is never reused.
  for (let round = 0; round < maxKillRounds; round++) {
    if (round > 0) {
      marked = await find();
      if (marked.length === 0 && !groupAlive()) break;
    }
    if (tree.group !== undefined) signal(-tree.group, "SIGSTOP");
    for (const pid of marked) {
      seen.add(pid);
      signal(pid, "SIGSTOP");
    }
    if (tree.group !== undefined) signal(-tree.group, "SIGKILL");
    for (const pid of marked) signal(pid, "SIGKILL");
    if (marked.length === 0 && !groupAlive()) break;
    await sleep(round < 5 ? 5 : 20);
  }
  return seen.size;
}

let isSweeping = false;

/** Turns on main-thread sweeps, and ends every marked process at exit. */
export function enableProcessSweeps(): void {
  if (isSweeping) return;
  isSweeping = true;
  const prefix = processMarkerPrefix();
  process.once("exit", () => killMarkedProcessesSync(prefix));
}

/** Ends what a terminated or failed thread's bash calls left behind. Never rejects. */
export function sweepThreadProcesses(threadId: number): Promise<void> {
  if (!isSweeping) return Promise.resolve();
  return endProcessTree({ marker: threadMarkerPrefix(threadId), isWholeMarker: false }, 0).then(
    () => undefined,
    () => undefined,
  );
}

/** For a spawn helper whose host died by a signal and so never swept at exit. Never rejects. */
export function endProcessesOf(prefix: string): Promise<void> {
  return endProcessTree({ marker: prefix, isWholeMarker: false }, 0).then(
    () => undefined,
    () => undefined,
  );
}

/** Synchronous, for a process that is exiting. */
export function killMarkedProcessesSync(prefix: string): void {
  for (let round = 0; round < 5; round++) {
    const marked = findMarkedProcessesSync(prefix);
    if (marked.length === 0) return;
    for (const pid of marked) signal(pid, "SIGSTOP");
    for (const pid of marked) signal(pid, "SIGKILL");
  }
}
