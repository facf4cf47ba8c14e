/**
 * Ending a bash call's whole process tree, on Linux through `/proc`.
 *
 * A call's shell starts in a process group of its own, and with a marker in
 * its environment (`TOOLPOOL_BASH_CALL=<pid>:<start>:<thread>:<n>`, `<start>`
 * the process's start time) that every
 * descendant inherits, whatever it does: a child that `setsid`s or
 * double-forks away from the group (`sleep 1000 & disown`, `setsid sleep
 * 1000`) is still found by its marker, where a group kill or a walk of
 * parent links would miss it. To end a tree: SIGTERM to the group and to
 * every marked process; after the grace, or at once when none is left,
 * rounds of SIGSTOP (so that a fork loop cannot outrun the kill) and SIGKILL
 * to the group and every marked process, until none is left. A process that
 * rewrites its own environment (rare: `env -i`, `exec -c`) loses the marker;
 * the group still catches it unless it also left the group. A call started
 * by a process that itself runs in a bash call (toolpool, or pi with its
 * extension, run from bash) carries the outer call's marker after its own
 * (`mine;outer`), so the outer call's end reaches the inner calls' trees,
 * which have groups of their own. Where there is no `/proc` to read
 * (elsewhere than Linux, or a Linux sandbox without it): the group alone is
 * ended.
 *
 * Used on the worker thread that ran the call (deadline, abort), on the
 * main thread (a worker the pool terminated, the pool closing, the process
 * exiting), which share this module and nothing else, and in the threads'
 * spawn helpers (their host died by a signal: `spawn-helper.ts`).
 *
 * @module
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { isMainThread } from "node:worker_threads";

/** The environment variable that marks a bash call's processes. */
export const callMarkerName = "TOOLPOOL_BASH_CALL";

/**
 * The marker prefix of every call of this process: its number and its start
 * time (`<pid>:<start>:`), so that a sweep matches only this process's calls,
 * not those of a process of another PID namespace (a container's, whose
 * processes this one's `/proc` lists too) that has the same number there.
 * The start time is `0` where `/proc` cannot be read (then there are no
 * marker sweeps).
 */
export function processMarkerPrefix(): string {
  return `${process.pid}:${ownStartTime()}:`;
}

/** The marker prefix of every call run by thread `threadId` of this process. */
export function threadMarkerPrefix(threadId: number): string {
  return `${processMarkerPrefix()}${threadId}:`;
}

let startTime: string | undefined;

/** This process's start time (clock ticks since boot, from `/proc/self/stat`); `0` where it cannot be read. Read once. */
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

/**
 * Whether `/proc` can be read and is this PID namespace's (`/proc/self`
 * names this process): not on Linux without it (a chroot, a sandbox that
 * mounts an empty file system over it), nor elsewhere than Linux. Read once.
 */
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

/**
 * The marker of a call started by a process that is itself part of a bash
 * call (a toolpool, or pi with toolpool's extension, run from bash): the
 * call's own marker first, then the markers it inherited, `;`-separated, so
 * that the outer call's deadline or sweep also finds the inner calls'
 * processes (which left the outer call's process group with their own).
 */
export function chainedMarker(marker: string, inherited: string | undefined): string {
  return inherited === undefined || inherited === "" ? marker : `${marker};${inherited}`;
}

const entryStart = Buffer.from(`${callMarkerName}=`);

/** Which markers a search matches: those starting with `prefix`, or (`isWhole`) equal to it. */
interface MarkerMatch {
  prefix: string;
  isWhole: boolean;
}

/** Whether `environ` (`NAME=value` entries, each ending in a NUL) holds a marker entry with one marker that `match` matches. */
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
 * The processes whose environment holds the marker `prefix` (`isWhole`: the
 * marker exactly). Processes that end while they are read, and those this
 * user may not read, are left out. Empty where there is no `/proc`.
 *
 * With `fromPid` (a process number given before any process of the tree
 * started), only the processes numbered since are read: from `fromPid` up to
 * the last number given, or, when the numbers wrapped around meanwhile, from
 * `fromPid` up and from 1 to the last number. A worker thread reads
 * synchronously (a few small reads, on its own thread; several times
 * cheaper than going through libuv's thread pool); the main thread never does.
 */
async function findMarkedProcesses(prefix: string, isWhole = false, fromPid?: number): Promise<number[]> {
  if (!isMainThread) return findMarkedProcessesSync(prefix, isWhole, fromPid);
  if (!hasProc()) return [];
  const needle: MarkerMatch = { prefix, isWhole };
  const names = await readdir("/proc").catch(() => [] as string[]);
  const last = fromPid === undefined ? 0 : await readFile(lastPidFile, "utf8").then(pidOf, () => 0);
  const pids = candidatePids(names, fromPid, last);
  const found: number[] = [];
  // A few at a time: a busy machine has thousands of processes.
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

/**
 * {@link findMarkedProcesses}, synchronously: a worker thread's way, and a
 * process's that is exiting.
 */
function findMarkedProcessesSync(prefix: string, isWhole = false, fromPid?: number): number[] {
  if (!hasProc()) return [];
  const needle: MarkerMatch = { prefix, isWhole };
  const names = readOr(() => readdirSync("/proc"), [] as string[]);
  const last = fromPid === undefined ? 0 : readOr(() => pidOf(readFileSync(lastPidFile, "utf8")), 0);
  return candidatePids(names, fromPid, last).filter((pid) => readOr(() => environHas(readFileSync(`/proc/${pid}/environ`), needle), false));
}

/** The last process number the kernel gave in this PID namespace; 0 when unknown (then every process is read). */
const lastPidFile = "/proc/sys/kernel/ns_last_pid";

const pidOf = (text: string): number => Number(text.trim()) || 0;

/** `read()`, or `fallback` when it throws (a process that ended while it was read, a file this user may not read). */
function readOr<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}

/**
 * The processes of `/proc`'s `names` that may be marked, this one aside:
 * with `fromPid`, those numbered since it (up to `last`, the last number
 * given, or around the wrap when `last` is below it).
 */
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
  } catch {
    // Gone already, or not ours.
  }
}

/** What {@link endProcessTree} ends. */
interface ProcessTree {
  /** The process group (the shell's pid, started `detached`), if any. */
  group?: number | undefined;
  /** The marker: a call's whole marker, or a thread's or process's prefix. */
  marker: string;
  /** Whether `marker` is one call's whole marker rather than a prefix. */
  isWholeMarker: boolean;
  /** A process number given before any process of the tree started (its shell's): only processes since are read. */
  fromPid?: number | undefined;
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

/** Most rounds of stop-and-kill: a fork loop gains a few processes per round at most. */
const maxKillRounds = 50;

/**
 * Ends every process of `tree`: SIGTERM, then after `graceMs` (or once none
 * is left) SIGSTOP and SIGKILL in rounds until none is left, at most
 * {@link maxKillRounds} rounds. Resolves with how many marked processes it
 * signalled.
 */
export async function endProcessTree(tree: ProcessTree, graceMs: number): Promise<number> {
  const find = () => findMarkedProcesses(tree.marker, tree.isWholeMarker, tree.fromPid);
  const seen = new Set<number>();
  // Every process of the tree carries the marker, so the marker alone says
  // whether any is left (a group kill check would also count zombies, which
  // a parent that exited leaves for init to reap whenever it does).
  const groupAlive = () => tree.group !== undefined && !hasProc() && isGroupAlive(tree.group);
  if (tree.group !== undefined) signal(-tree.group, "SIGTERM");
  // `marked` is always the latest scan: each scan reads /proc, which costs
  // most on a busy machine, so none is repeated without a wait in between
  // (a call that ended by itself takes one scan).
  let marked = await find();
  for (const pid of marked) {
    seen.add(pid);
    signal(pid, "SIGTERM");
  }
  const graceEnd = Date.now() + graceMs;
  while (Date.now() < graceEnd && (marked.length > 0 || groupAlive())) {
    await sleep(Math.min(50, Math.max(1, graceEnd - Date.now())));
    marked = await find();
  }
  // The group gets its SIGKILL in the first round even when no marked
  // process is left: a member that dropped the marker (`env -i`) and ignores
  // SIGTERM is found by its group alone, and outlives the marked ones. A
  // group id is not given to a new process while any member is alive, so
  // once they are all gone the kill reaches nobody.
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

/**
 * Turns on the main thread's sweeps (see {@link sweepThreadProcesses}):
 * `codingTools` with bash does, so that a process without it never reads
 * `/proc`. Also ends every marked process of this process when it exits.
 */
export function enableProcessSweeps(): void {
  if (isSweeping) return;
  isSweeping = true;
  const prefix = processMarkerPrefix();
  process.once("exit", () => killMarkedProcessesSync(prefix));
}

/**
 * Ends the processes that bash calls run by thread `threadId` left behind,
 * once the pool has terminated that thread or it failed mid-call (a call's
 * own deadline or abort ends its tree on the thread itself). Only after
 * {@link enableProcessSweeps}; never rejects.
 */
export function sweepThreadProcesses(threadId: number): Promise<void> {
  if (!isSweeping) return Promise.resolve();
  return endProcessTree({ marker: threadMarkerPrefix(threadId), isWholeMarker: false }, 0).then(
    () => undefined,
    () => undefined,
  );
}

/**
 * Ends the processes of every bash call of the process whose
 * {@link processMarkerPrefix} is `prefix`, on any of its threads, SIGKILL at
 * once: for a spawn helper whose host died by a signal, and so never ran its
 * own sweep at exit. Never rejects.
 */
export function endProcessesOf(prefix: string): Promise<void> {
  return endProcessTree({ marker: prefix, isWholeMarker: false }, 0).then(
    () => undefined,
    () => undefined,
  );
}

/** Ends every marked process of `prefix` at once (SIGKILL), synchronously: for a process that is exiting. */
export function killMarkedProcessesSync(prefix: string): void {
  for (let round = 0; round < 5; round++) {
    const marked = findMarkedProcessesSync(prefix);
    if (marked.length === 0) return;
    for (const pid of marked) signal(pid, "SIGSTOP");
    for (const pid of marked) signal(pid, "SIGKILL");
  }
}
