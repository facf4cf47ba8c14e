/**
 * The spawn helper: a small detached process that starts a pool thread's
 * children (bash, rg, fd) and relays their output over IPC. Why: `fork` from
 * a process with several V8 heaps stalls all its threads (docs/benchmarks.md).
 * It exits when its channel closes; if the host itself died (so skipped its
 * sweeps), it first ends the host's bash calls by marker.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, readdirSync, readFileSync } from "node:fs";

import { hasHostEnded, isHostGone, watchHost } from "./host-watch.js";
import { endProcessesOf } from "./process-tree.js";
import { type HelperReport, type HelperRequest, type SpawnRequest, startReported } from "./spawn-protocol.js";

/** Backpressure: output pauses past this many unsent bytes, resumes below a quarter. */
const maxUnsentBytes = 1 << 20;

const hostEndBoundMs = 1_000;
/** A backstop should the channel outlive the host. */
const hostPollMs = 1_000;

const hostPid = Number(process.argv[2]);
const host = Number.isSafeInteger(hostPid) && hostPid > 0 ? watchHost(hostPid) : undefined;
/** The start time in the prefix keeps a same-numbered process of another PID namespace safe. */
const hostMarkerPrefix = /^\d+:\d+:$/.test(process.argv[3] ?? "") && process.argv[3]!.startsWith(`${hostPid}:`) ? process.argv[3]! : `${hostPid}:`;

/** Linux's `O_CLOEXEC`, as /proc/self/fdinfo prints a descriptor's flags (octal). */
const closeOnExec = 0o2000000;
/** Standard streams and the channel (`remote-spawn.ts` gives it as descriptor 3). */
const keptDescriptors = 3;

/**
 * Closes what the host inherited from its own parent without close-on-exec
 * (a supervisor's pipe, a service manager's socket), which every child would
 * inherit in turn, a sandboxed command too. Node's own descriptors are all
 * close-on-exec.
 */
function closeInheritedDescriptors(): void {
  let names: string[];
  try {
    names = readdirSync("/proc/self/fd");
  } catch {
    return;
  }
  for (const name of names) {
    const fd = Number(name);
    if (!(fd > keptDescriptors)) continue;
    try {
      const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"))?.[1];
      if (flags !== undefined && (Number.parseInt(flags, 8) & closeOnExec) === 0) closeSync(fd);
    } catch {}
  }
}

closeInheritedDescriptors();

const children = new Map<number, ChildProcess>();
/** bash's shells. */
const groupLeaders = new Set<number>();
/** `<id>:<stream>` the thread asked to hold: its reader is full. */
const heldOutputs = new Set<string>();
let unsentBytes = 0;
let isPaused = false;

function report(message: HelperReport, bytes = 0): void {
  if (!process.connected) return;
  unsentBytes += bytes;
  process.send?.(message, undefined, undefined, () => {
    unsentBytes -= bytes;
    if (isPaused && unsentBytes < maxUnsentBytes / 4) {
      isPaused = false;
      for (const id of children.keys()) setFlowing(id);
    }
  });
  if (!isPaused && unsentBytes > maxUnsentBytes) {
    isPaused = true;
    for (const id of children.keys()) setFlowing(id);
  }
}

function setFlowing(id: number): void {
  const child = children.get(id);
  if (child === undefined) return;
  for (const [stream, name] of [
    [child.stdout, "stdout"],
    [child.stderr, "stderr"],
  ] as const) {
    if (stream === null || stream.destroyed) continue;
    if (isPaused || heldOutputs.has(`${id}:${name}`)) stream.pause();
    else stream.resume();
  }
}

function start(request: SpawnRequest): void {
  const { id } = request;
  const child = startReported(spawn, request, report);
  if (child === undefined) return;
  children.set(id, child);
  if (request.detached) groupLeaders.add(id);
  child.on("close", () => {
    children.delete(id);
    groupLeaders.delete(id);
    heldOutputs.delete(`${id}:stdout`);
    heldOutputs.delete(`${id}:stderr`);
  });
  setFlowing(id);
}

process.on("message", (request: HelperRequest) => {
  if (request.kind === "spawn") {
    start(request);
    return;
  }
  const child = children.get(request.id);
  if (child === undefined) return;
  switch (request.kind) {
    case "stdin":
      child.stdin?.write(request.data);
      return;
    case "stdin-end":
      child.stdin?.end();
      return;
    case "kill":
      try {
        child.kill(request.signal);
      } catch {
        // The thread checks signals as Node's kill does; nothing it sends should end the helper.
      }
      return;
    case "pause":
      heldOutputs.add(`${request.id}:${request.stream}`);
      setFlowing(request.id);
      return;
    case "resume":
      heldOutputs.delete(`${request.id}:${request.stream}`);
      setFlowing(request.id);
      return;
    case "release":
      // The thread no longer reads this output (pi destroys the streams a while after the exit).
      child[request.stream]?.destroy();
      return;
  }
});

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {}
}

let isLeaving = false;

/**
 * The thread or the whole host (`isGone`) ended. Children in the helper's
 * group end with it; when the host ended, so do its bash calls' trees.
 */
async function leave(isGone: boolean): Promise<void> {
  if (isLeaving) return;
  isLeaving = true;
  for (const [id, child] of children) if (!groupLeaders.has(id) && child.pid !== undefined) signal(child.pid, "SIGKILL");
  if (host !== undefined && (isGone || (await hasHostEnded(host, hostEndBoundMs)))) {
    // A shell's group holds its members that dropped the marker (`env -i`); the marker finds the rest.
    for (const id of groupLeaders) {
      const pid = children.get(id)?.pid;
      if (pid !== undefined) signal(-pid, "SIGKILL");
    }
    await endProcessesOf(hostMarkerPrefix);
  }
  signal(0, "SIGKILL");
  process.exit(0);
}

process.on("disconnect", () => void leave(false));
if (host !== undefined) {
  setInterval(() => {
    if (isHostGone(host)) void leave(true);
  }, hostPollMs).unref();
}

// Before any request is read: the thread knows from this that requests may have been acted on.
report({ kind: "ready", id: 0, pid: process.pid });
