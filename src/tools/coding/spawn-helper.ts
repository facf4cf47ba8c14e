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
 * ended by their marker.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";

import { type HelperReport, type HelperRequest, type SpawnRequest, startReported } from "./spawn-protocol.js";

/** Past this many bytes of output sent and not yet written to the channel, children's output waits (resumed below a quarter of it). */
const maxUnsentBytes = 1 << 20;

const children = new Map<number, ChildProcess>();
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
  child.on("close", () => {
    children.delete(id);
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

// The thread that started this helper ended (or closed the channel): nothing is left to report to. The
// children that share the helper's process group (ripgrep, fd: all but bash's shells, which lead groups of
// their own and are ended by their marker) have no reader left either, and end with it.
process.on("disconnect", () => {
  try {
    process.kill(0, "SIGKILL");
  } catch {}
  process.exit(0);
});

// Before any request is read: the thread knows from this that requests may have been acted on.
report({ kind: "ready", id: 0, pid: process.pid });
