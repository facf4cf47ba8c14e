/**
 * The spawn helper: a small process of its own that starts the child
 * processes of a pool thread's coding tools (bash's shell, ripgrep, fd) on
 * the thread's behalf, and relays their output and exit back over its IPC
 * channel (`remote-spawn.ts` is the thread's side, with the protocol).
 *
 * Why: on Linux `fork` copies the page tables of the whole process that
 * forks and holds its memory map locked meanwhile. Forked from a pool
 * thread, every child process stalled the main thread and the other pool
 * threads of a process with several V8 heaps (measured: the main thread's
 * event-loop delay p99 went from 2 to 12–40 ms while two threads started
 * processes, and each start cost the process 14–27 ms of CPU). Forked from
 * this process, which holds almost nothing, a start costs little and
 * nothing of the pool's process waits for it.
 *
 * Nothing here decides anything: it spawns what it is told, with the
 * options it is given, and reports what happened. It is started through a
 * shell that leaves it running and exits (`remote-spawn.ts`): so it is not a
 * child of the pool's process, which could not reap it once the thread that
 * started it ended, and it runs in a session and process group of its own,
 * which a signal to the pool's group (Ctrl-C at a terminal) does not reach.
 * It exits when its channel closes (the thread ended), with the children in
 * its group (ripgrep, fd); bash's shells lead groups of their own and are
 * ended by their marker, by the host's own sweeps.
 *
 * Those sweeps run in the host, which a signal without a handler (SIGKILL,
 * or Node's default SIGTERM) ends before any of them can run. So the helper
 * watches its host (its process number comes as the first argument): when
 * the channel closes, or a poll finds the host gone (should the channel
 * outlive it), and the host has ended rather than only its thread, the
 * helper ends every process of every bash call of the host, whatever thread
 * ran it, found by the marker (the host's number and start time, the second
 * argument) as the host's sweeps find them (setsid'd and
 * double-forked ones included), and the groups of the shells it started.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";

import { hasHostEnded, isHostGone, watchHost } from "./host-watch.js";
import { endProcessesOf } from "./process-tree.js";
import { type HelperReport, type HelperRequest, type SpawnRequest, startReported } from "./spawn-protocol.js";

/** Past this many bytes of output sent and not yet written to the channel, children's output waits (resumed below a quarter of it). */
const maxUnsentBytes = 1 << 20;

/** How long after its channel closed the host may take to be seen ended; past it, only the thread ended. */
const hostEndBoundMs = 1_000;
/** How often the host is looked at while the channel is open: a backstop should the channel outlive the host. */
const hostPollMs = 1_000;

const hostPid = Number(process.argv[2]);
/** The process whose pool thread started this helper; undefined when not given (a helper started by hand). */
const host = Number.isSafeInteger(hostPid) && hostPid > 0 ? watchHost(hostPid) : undefined;
/**
 * The marker prefix of the host's bash calls (`<pid>:<start>:`, the second
 * argument): its number and start time, so that the helper ends no call of a
 * process of another PID namespace with the same number. Only the host's
 * number where not given.
 */
const hostMarkerPrefix = /^\d+:\d+:$/.test(process.argv[3] ?? "") && process.argv[3]!.startsWith(`${hostPid}:`) ? process.argv[3]! : `${hostPid}:`;

const children = new Map<number, ChildProcess>();
/** The children started in a process group of their own (bash's shells). */
const groupLeaders = new Set<number>();
/** The outputs (`<id>:<stream>`) that the thread asked to hold: its reader is full. */
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

/** Reads child `id`'s pipes unless the channel is backed up or the thread asked to hold them. */
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
  } catch {
    // Gone already.
  }
}

let isLeaving = false;

/**
 * The thread that started this helper ended, or its whole host did
 * (`isGone`: the host is known to have ended): nothing is left to report to. The children
 * that share the helper's process group (ripgrep, fd: all but bash's
 * shells) have no reader left either, and end with it. When the host ended,
 * so do the processes of its bash calls, which its own sweeps would have
 * ended had it exited rather than been killed.
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
