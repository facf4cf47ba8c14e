// A fake thread host for the worker pool's state machine (src/): no
// threads, no build, time on a fake clock. The pool asks the host for
// threads and posts; the test plays the threads' part by firing the host's
// events (ready, replied, failed, lost, stalled).
import type { Worker } from "node:worker_threads";

import { FakeClock } from "./fake-clock.js";
import {
  loadedTag,
  type PoolCall,
  type ResolvedPoolOptions,
  type ThreadHost,
  type ThreadHostEvents,
  type WorkerCallOutcome,
  type WorkerCallRequest,
  type WorkerReply,
  type WorkerTask,
  WorkerPool,
  workerTool,
} from "./internals.js";

interface Posted {
  threadId: number;
  task: WorkerTask;
  call: PoolCall;
}

/** A thread host with no threads: it records what the pool asks, and the test fires its events. */
export class FakeHost implements ThreadHost<PoolCall> {
  readonly posted: Posted[] = [];
  readonly terminated: number[] = [];
  /** Threads whose `post` answers false (going away). */
  readonly refusing = new Set<number>();
  grows = 0;
  restarts = 0;
  bootFailures = 0;
  threadCount = 0;
  readonly workers: Worker[] = [];
  events: ThreadHostEvents<PoolCall>;

  constructor(events: ThreadHostEvents<PoolCall>) {
    this.events = events;
  }

  post(threadId: number, task: WorkerTask, call: PoolCall): boolean {
    if (this.refusing.has(threadId)) return false;
    this.posted.push({ threadId, task, call });
    return true;
  }
  grow(): void {
    this.grows += 1;
  }
  send(): void {}

  terminate(threadId: number): void {
    this.terminated.push(threadId);
  }
  restart(): void {
    this.restarts += 1;
  }
  resetBootFailures(): void {
    this.bootFailures = 0;
  }
  describe() {
    return { generations: [], generationsStarted: 1 + this.restarts, bootFailures: this.bootFailures };
  }
  destroy(): Promise<void> {
    return Promise.resolve();
  }

  /** Threads `threadIds` are ready; a thread that starts ends the count of failed starts in a row, as the host's contract says. */
  ready(...threadIds: number[]): void {
    this.bootFailures = 0;
    for (const threadId of threadIds) this.events.ready(threadId);
  }
  /** The task on `threadId` failed with `error` and the thread is gone, as a crash or an exit reports it. */
  crash(threadId: number, error: unknown = new Error("boom")): void {
    this.events.lost(threadId);
    this.events.failed(this.lastOn(threadId).call, threadId, error);
  }
  /** A thread started for the pool died before it was ready, `times` in a row: the host stalls. */
  failStarts(times = 1): void {
    this.bootFailures += times;
    this.events.stalled();
  }
  /** The last call posted to `threadId` replies. */
  reply(threadId: number, reply: Partial<WorkerReply> = {}): void {
    const posted = this.lastOn(threadId);
    this.events.replied(posted.call, {
      kind: "ok",
      result: { content: [{ type: "text", text: posted.task.toolCallId }] },
      updates: 0,
      ...reply,
    } as WorkerReply);
  }
  /** The last call posted to `threadId` has its tool's module loaded (its worker posts this for a call that came with the definition). */
  loaded(threadId: number): void {
    this.events.message({ [loadedTag]: true, seq: this.lastOn(threadId).task.seq });
  }
  lastOn(threadId: number): Posted {
    const posted = this.posted.filter((entry) => entry.threadId === threadId).at(-1);
    if (posted === undefined) throw new Error(`nothing was posted to thread ${threadId}`);
    return posted;
  }
  /** The tool call ids posted, in order. */
  get order(): string[] {
    return this.posted.map((entry) => entry.task.toolCallId);
  }
}

/** A few microtask turns: the pool settles a call's promise after the host's event. */
export const flush = async () => {
  for (let turn = 0; turn < 5; turn++) await Promise.resolve();
};

/** A worker tool the fake host never loads. */
export const tool = (name: string, extra: { timeoutMs?: number; cost?: number } = {}) =>
  workerTool({ name, description: name, parameters: { type: "object" }, module: new URL("file:///fake/tool.mjs"), ...extra });
export const echo = tool("echo");

let pools: WorkerPool[] = [];
/** Closes the pools opened since the last call: a file's afterEach. */
export async function closeFakePools(): Promise<void> {
  const closing = pools;
  pools = [];
  await Promise.all(closing.map((pool) => pool.close({ force: true })));
}

/** The pool's resolved options as the runtime would give them (the schema's defaults), without loading the compiled validators. */
const poolOptions = (options: Partial<ResolvedPoolOptions>): ResolvedPoolOptions =>
  Object.freeze({
    maxThreads: 2,
    minThreads: 2,
    idleTimeout: 30_000,
    maxQueue: undefined,
    resourceLimits: undefined,
    abortGraceMs: 1_000,
    maxResultBytes: 1 << 20,
    leftoverGraceMs: 100,
    env: undefined,
    maxRunningPerSession: undefined,
    scheduling: "fair",
    ...options,
  });

/** A pool on a fake host and a fake clock, with a `run` whose outcomes land in `outcomes`. */
export function openFakePool(pool: Partial<ResolvedPoolOptions> = {}) {
  const clock = new FakeClock();
  let host: FakeHost | undefined;
  const errors: unknown[] = [];
  const created = new WorkerPool(
    poolOptions(pool),
    clock,
    (error) => errors.push(error),
    (_options, _clock, _workerData, events) => {
      host = new FakeHost(events);
      return host;
    },
  );
  pools.push(created);
  /** Runs a call; its outcome lands in `outcomes[toolCallId]`. */
  const outcomes: Record<string, WorkerCallOutcome> = {};
  const run = (toolCallId: string, extra: Partial<WorkerCallRequest> = {}) => {
    const outcome = created.run({ tool: echo, toolCallId, args: {}, ...extra });
    void outcome.then((value) => {
      outcomes[toolCallId] = value;
    });
    return outcome;
  };
  return { pool: created, host: host!, clock, run, outcomes, errors };
}
