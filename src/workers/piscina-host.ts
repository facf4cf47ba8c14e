/**
 * The thread host over Piscina: the one module that knows Piscina (its
 * instances, its balancer, its queue plumbing, its bootstrap latch). The
 * {@link WorkerPool} above it sees only {@link ThreadHost}: post a task to a
 * thread, start one more, terminate one; and hears ready, lost, replied,
 * failed, message. Runs on the main thread.
 *
 * **Tasks go straight to the thread the pool names.** The pool keeps its own
 * queue; Piscina's stays empty. `post` runs the task on Piscina with the
 * target thread set for the balancer, which Piscina asks synchronously
 * (its queue being empty) and which returns that thread or none. Piscina's
 * queue is a stub that takes what the balancer refused and ends it at once:
 * a refusal (the thread went away meanwhile) makes `post` return `false`;
 * a refused "grow" task is how the host asks Piscina for one more thread, the
 * only thing Piscina does for a task it could not place.
 *
 * **A thread is freed before its reply is read.** Piscina asks its queue's
 * size right after a worker's task is done and before the task's promise
 * settles; the stub queue uses that moment to tell the pool which threads
 * are free (`freed`), so the pool posts the next task to the thread at once,
 * as Piscina would from its own queue, instead of a promise turn later.
 *
 * **Threads are kept up whatever is lost.** Piscina replaces a lost worker
 * only while no worker has ever been lost before it was ready: after one such
 * loss it sets a one-way latch (`workerFailsDuringBootstrap`) and every later
 * loss shrinks the pool for good, down to no thread. Two things keep that from
 * stranding a call:
 * - the pool posts only to threads this host said `ready` (Piscina marked
 *   them ready), so terminating a call's thread (time limit, abort, leftover
 *   work) can never trip the latch;
 * - a loss that trips it anyway (a thread killed from outside while starting,
 *   a thread failing to start) or a terminated thread that does not exit
 *   marks the instance latched and the host `stalled`; the pool calls
 *   `restart`, which starts a fresh instance. The old instance finishes its
 *   running tasks and is destroyed.
 *
 * @module
 */
import type { Worker } from "node:worker_threads";

import { Piscina, type TaskQueue } from "piscina";

import type { Clock } from "../clock.js";
import type { ResolvedPoolOptions } from "../options.js";
import type { PoolDiagnosis } from "../contracts/pool-contract.js";
import { isBootMessage, readWorkerReply, type OkPair, type WorkerBootData, type WorkerReply, type WorkerTask } from "./protocol.js";
import type { ThreadHost, ThreadHostEvents } from "./thread-host.js";
import { ThreadRecords } from "./thread-records.js";
import { ThreadHookSet } from "./thread-hook-set.js";

/** One Piscina instance and the counts kept for it. A host normally has one for its whole life. */
interface PiscinaInstance {
  readonly piscina: Piscina<WorkerTask, WorkerReply | OkPair>;
  /** Threads Piscina has marked ready (their records say so): the only ones that take tasks. */
  readyThreads: number;
  /** Threads asked for by `grow` and not yet ready. */
  starting: number;
  /** Tasks posted to its threads and not yet replied or failed. */
  running: number;
  /** Workers removed this turn, not yet matched against the threads still alive. */
  unreconciledLosses: number;
  /**
   * Set once Piscina will not keep this instance's thread count up: a worker
   * was lost before it was ready (Piscina's bootstrap latch), or a terminated
   * thread did not exit.
   */
  isLatched: boolean;
  /** Replaced by a newer instance: takes no tasks, and is destroyed once its running ones end. */
  isRetired: boolean;
}

/** Piscina's task record: `done` settles the task's promise (part of its public `TaskInfo` type). */
interface SettleableTask {
  done(error: Error | null, result?: unknown): void;
}

const workerEntryUrl = new URL("./thread/worker-entry.cjs", import.meta.url); // thread/worker-entry.ts as one CommonJS file: see scripts/bundle.mjs

/** Milliseconds a terminated thread may take to exit before its Piscina instance is counted as short of a thread. */
const exitWatchMs = 2_000;

/** Piscina's run options: one frozen object for all tasks, since termination is the host's own. */
const noRunOptions = Object.freeze({});

/** Ends a task the balancer did not place; its handlers ignore it. */
const refusedReason = new Error("not placed on its thread");

/** The task of `grow`: placed nowhere, so Piscina starts a thread for it (and the stub queue ends it). */
const growTask = Object.freeze({}) as WorkerTask;

const ignore = () => {};

/** A thread as Piscina's balancer sees it. */
type PiscinaWorker = Parameters<NonNullable<NonNullable<ConstructorParameters<typeof Piscina>[0]>["loadBalancer"]>>[1][number];

/**
 * Piscina's queue, always empty: the balancer places every task or refuses
 * it, and a refused task is ended here at once rather than left to wait.
 * Piscina reads its size whenever a worker may have freed up.
 */
class RefusingQueue implements TaskQueue {
  readonly #onRefused: () => void;
  readonly #onPolled: () => void;
  constructor(onRefused: () => void, onPolled: () => void) {
    this.#onRefused = onRefused;
    this.#onPolled = onPolled;
  }
  get size(): number {
    this.#onPolled();
    return 0;
  }
  push(task: Parameters<TaskQueue["push"]>[0]): void {
    this.#onRefused();
    (task as unknown as SettleableTask).done(refusedReason);
  }
  unshift(task: Parameters<TaskQueue["push"]>[0]): void {
    this.push(task);
  }
  shift(): null {
    return null;
  }
  remove(): void {}
}

/** The {@link ThreadHost} over Piscina. */
export class PiscinaHost<Token> implements ThreadHost<Token> {
  readonly #options: ResolvedPoolOptions;
  readonly #clock: Clock;
  readonly #threads = new ThreadRecords();
  readonly #workerData: WorkerBootData & Record<string, unknown>;
  readonly #hooks: ThreadHookSet;
  readonly #events: ThreadHostEvents<Token>;
  #current: PiscinaInstance;
  /** Instances replaced but still running tasks. */
  readonly #retired = new Set<PiscinaInstance>();
  #started = 0;
  /** Threads lost in a row before they had started. */
  #bootFailures = 0;
  #isLatchReported = false;
  #destroyed: Promise<void> | undefined;
  /** The thread the balancer is to pick during a `post`; 0 outside one (and for a grow task). */
  #target = 0;
  /** Set by the stub queue when the balancer refused the task being run. */
  #isRefused = false;
  /** The worker the balancer placed the task being run on. */
  #placed: PiscinaWorker | undefined;
  /** Threads running a task the pool posted, and their workers: a worker whose usage is back to 0 is free. */
  readonly #busy = new Map<number, PiscinaWorker>();
  #isPolling = false;

  constructor(options: ResolvedPoolOptions, clock: Clock, workerData: WorkerBootData, events: ThreadHostEvents<Token>) {
    this.#options = options;
    this.#clock = clock;
    this.#hooks = new ThreadHookSet();
    this.#workerData = { ...this.#hooks.workerData(), ...workerData };
    this.#events = events;
    this.#current = this.#start();
  }

  get bootFailures(): number {
    return this.#bootFailures;
  }

  resetBootFailures(): void {
    this.#bootFailures = 0;
  }

  get threadCount(): number {
    let threads = 0;
    for (const instance of this.#all()) threads += instance.piscina.threads.length;
    return threads;
  }

  get workers(): Worker[] {
    return this.#all().flatMap((instance) => instance.piscina.threads);
  }

  /** Once the threads are being destroyed nothing is repaired any more. */
  get #isDestroying(): boolean {
    return this.#destroyed !== undefined;
  }

  /** Every live instance, retired ones first. */
  #all(): PiscinaInstance[] {
    return [...this.#retired, this.#current];
  }

  post(threadId: number, task: WorkerTask, token: Token): boolean {
    const record = this.#threads.get(threadId);
    const instance = record?.readyIn as PiscinaInstance | undefined;
    if (instance === undefined || instance.isRetired || record!.exitWatch !== undefined) return false;
    this.#target = threadId;
    this.#isRefused = false;
    const reply = instance.piscina.run(task, noRunOptions);
    this.#target = 0;
    if (this.#isRefused) {
      reply.catch(ignore);
      return false;
    }
    instance.running += 1;
    const worker = this.#placed!;
    this.#busy.set(threadId, worker);
    reply.then(
      (value) => {
        if (this.#busy.get(threadId) === worker) this.#busy.delete(threadId);
        // A reply is proof the thread started, whether or not its boot message came first.
        this.#onBoot(threadId);
        this.#onTaskLeft(instance);
        this.#events.replied(token, readWorkerReply(value));
      },
      (error: unknown) => {
        if (this.#busy.get(threadId) === worker) this.#busy.delete(threadId);
        // A thread that failed mid-task (a crash) leaves the processes its bash calls started: they
        // end with it. The file locks it held are freed when it exits (see #releaseLocksAtExit).
        void this.#hooks.threadLost(threadId);
        this.#onTaskLeft(instance);
        this.#events.failed(token, threadId, error);
      },
    );
    return true;
  }

  /**
   * Piscina read its queue's size: a worker may have finished its task.
   * Each busy thread whose worker runs nothing now is `freed`; the pool may
   * post to it from inside this (Piscina's queue being empty, `run` places
   * the task at once), which is why a poll within a poll does nothing.
   */
  #poll(): void {
    if (this.#isPolling || this.#busy.size === 0) return;
    this.#isPolling = true;
    try {
      for (const [threadId, worker] of this.#busy) {
        if (worker.currentUsage !== 0) continue;
        this.#busy.delete(threadId);
        this.#events.freed(threadId);
      }
    } finally {
      this.#isPolling = false;
    }
  }

  grow(): void {
    const instance = this.#current;
    if (this.#isDestroying || instance.isLatched || instance.readyThreads + instance.starting >= this.#options.maxThreads) return;
    instance.starting += 1;
    instance.piscina.run(growTask, noRunOptions).catch(ignore);
  }

  restart(): void {
    if (this.#isDestroying) return;
    const old = this.#current;
    old.isRetired = true;
    this.#current = this.#start();
    if (old.running === 0) void old.piscina.destroy();
    else this.#retired.add(old);
  }

  /** A thread started: its boot message or a reply arrived. */
  #onBoot(threadId: number): void {
    const record = this.#threads.get(threadId);
    if (record !== undefined) record.isBooted = true;
    this.#bootFailures = 0;
  }

  /** A task left one of `instance`'s threads: a retired instance goes once its last task has. */
  #onTaskLeft(instance: PiscinaInstance): void {
    instance.running -= 1;
    if (instance.isRetired && instance.running === 0 && this.#retired.delete(instance)) void instance.piscina.destroy();
  }

  /**
   * Terminates one thread. Piscina sees the exit and replaces the worker; one
   * that does not exit in time (blocked in native code, where termination
   * cannot reach) leaves its instance a thread short for good, so the
   * instance counts as latched.
   */
  terminate(threadId: number): void {
    const record = this.#threads.get(threadId);
    const instance = record?.readyIn as PiscinaInstance | undefined;
    if (record === undefined || instance === undefined || record.exitWatch !== undefined) return;
    const thread = instance.piscina.threads.find((candidate) => candidate.threadId === threadId);
    if (thread === undefined) return;
    this.#threads.watchExit(
      record,
      this.#clock.setTimeout(() => {
        this.#threads.endExitWatch(record);
        // A thread stuck in a system call that does not return (a FIFO's read) would hold its
        // file locks for as long: the host gives up on it, and so do the edits waiting behind it.
        this.#hooks.threadExited(threadId);
        if (!instance.isRetired && !this.#isDestroying) this.#markLatched(instance);
      }, exitWatchMs),
    );
    // Its bash calls' processes (pi's coding tools) end with it; the file locks it holds are freed when it exits.
    // Swept at once (a thread blocked in native code may never exit) and again once it has exited: a
    // shell it was spawning as the sweep read /proc could not yet be told by its environment.
    void thread.terminate().then(
      () => this.#hooks.threadLost(threadId),
      () => this.#hooks.threadLost(threadId),
    );
    void this.#hooks.threadLost(threadId);
  }

  /**
   * Terminates every thread. A thread blocked in native code (a read of a
   * FIFO, say) cannot be terminated until the call returns; this waits for
   * it no longer than the exit watch.
   */
  destroy(): Promise<void> {
    for (const timer of this.#threads.endExitWatches()) this.#clock.clearTimeout(timer);
    this.#destroyed ??= (async () => {
      const all = this.#all();
      const threadIds = all.flatMap((instance) => instance.piscina.threads.map((thread) => thread.threadId));
      const destroyed = Promise.allSettled([
        ...all.map((instance) => instance.piscina.destroy()),
        ...threadIds.map((threadId) => this.#hooks.threadLost(threadId)),
      ]);
      let timer: unknown;
      const watch = new Promise<void>((resolve) => {
        timer = this.#clock.setTimeout(resolve, exitWatchMs);
      });
      await Promise.race([destroyed, watch]);
      this.#clock.clearTimeout(timer);
    })();
    return this.#destroyed;
  }

  describe(): Pick<PoolDiagnosis, "generations" | "generationsStarted" | "bootFailures"> {
    return {
      generations: this.#all().map((instance) => ({
        threads: instance.piscina.threads.map(({ threadId }) => ({
          threadId,
          isUsable: this.#threads.get(threadId)?.readyIn === instance,
          isBooted: this.#threads.get(threadId)?.isBooted === true,
        })),
        // The pool's queue, not the host's: the pool fills it in.
        queued: 0,
        running: instance.running,
        isLatched: instance.isLatched,
        isRetired: instance.isRetired,
      })),
      generationsStarted: this.#started,
      bootFailures: this.#bootFailures,
    };
  }

  #start(): PiscinaInstance {
    this.#started += 1;
    const options = this.#options;
    const piscina = new Piscina<WorkerTask, WorkerReply | OkPair>({
      filename: workerEntryUrl.href,
      minThreads: options.minThreads,
      maxThreads: options.maxThreads,
      idleTimeout: options.idleTimeout,
      concurrentTasksPerWorker: 1,
      // The pool counts its own utilization; Piscina's run- and wait-time histograms would cost every task.
      recordTiming: false,
      taskQueue: new RefusingQueue(
        () => {
          this.#isRefused = true;
        },
        () => this.#poll(),
      ),
      workerData: this.#workerData,
      ...(options.resourceLimits === undefined ? {} : { resourceLimits: { ...options.resourceLimits } }),
      ...(options.env === undefined ? {} : { env: { ...options.env } }),
      // Piscina asks it synchronously in `run` (its queue is always empty), with its ready workers.
      loadBalancer: (_task, workers) => {
        const target = this.#target;
        if (target !== 0) {
          for (const worker of workers) {
            if (worker.id !== target || worker.currentUsage !== 0) continue;
            this.#placed = worker;
            return worker;
          }
        }
        return null;
      },
    });
    const created: PiscinaInstance = {
      piscina,
      readyThreads: 0,
      starting: 0,
      running: 0,
      unreconciledLosses: 0,
      isLatched: false,
      isRetired: false,
    };
    piscina.on("workerCreate", (worker: { id: number }) => this.#onWorkerReady(created, worker.id));
    piscina.on("workerDestroy", () => this.#onWorkerLost(created));
    piscina.on("message", (message: unknown) => {
      if (isBootMessage(message)) this.#onBoot(message.threadId);
      else this.#events.message(message);
    });
    // Without a listener, a worker failing while idle would take the host down.
    piscina.on("error", (error: unknown) => this.#events.error(error));
    return created;
  }

  /**
   * Piscina marked a worker ready (`workerCreate`). It tells its own
   * bookkeeping right after this listener, so the pool hears of the thread a
   * microtask later, once Piscina would place a task on it.
   */
  #onWorkerReady(instance: PiscinaInstance, threadId: number): void {
    const record = this.#threads.of(threadId);
    if (record.readyIn === instance) return;
    record.readyIn = instance;
    instance.readyThreads += 1;
    if (instance.starting > 0) instance.starting -= 1;
    this.#releaseLocksAtExit(instance.piscina, threadId);
    queueMicrotask(() => {
      if (this.#threads.get(threadId) === record && !instance.isRetired && !this.#isDestroying) this.#events.ready(threadId);
    });
  }

  /**
   * Frees the file locks (pi's coding tools' edits and writes, see
   * `path-lock-table.ts`) that thread `threadId` holds once it has exited,
   * however it ended: terminated, crashed, out of memory, or `process.exit`
   * in a tool. Only a ready thread takes tasks, so only one can hold a lock;
   * one listener per thread, nothing per task.
   */
  #releaseLocksAtExit(piscina: Piscina<WorkerTask, WorkerReply | OkPair>, threadId: number): void {
    const thread = piscina.threads.find((candidate) => candidate.threadId === threadId);
    // Not listed: it has already gone, before it could take a task.
    thread?.once("exit", () => this.#hooks.threadExited(threadId));
  }

  /**
   * Piscina is removing a worker: idle, finished, terminated or crashed. It
   * has not yet taken it off its list nor started a replacement (that comes
   * right after, unless latched), and a worker that has exited no longer
   * knows its thread id; so the loss is reconciled once this turn is over,
   * against the threads still alive.
   */
  #onWorkerLost(instance: PiscinaInstance): void {
    instance.unreconciledLosses += 1;
    if (instance.unreconciledLosses === 1) queueMicrotask(() => this.#reconcile(instance));
  }

  #reconcile(instance: PiscinaInstance): void {
    const live = new Set(instance.piscina.threads.map((thread) => thread.threadId));
    const isCounted = !instance.isRetired && !this.#isDestroying;
    let readyLost = 0;
    for (const record of [...this.#threads.readyIn(instance)]) {
      if (live.has(record.threadId)) continue;
      readyLost += 1;
      instance.readyThreads -= 1;
      // Piscina marks its first workers ready before they have loaded anything.
      if (!record.isBooted && record.exitWatch === undefined && isCounted) this.#bootFailures += 1;
      const exitWatch = this.#threads.endExitWatch(record);
      if (exitWatch !== undefined) this.#clock.clearTimeout(exitWatch);
      this.#threads.delete(record.threadId);
      this.#events.lost(record.threadId);
    }
    const unreadyLost = instance.unreconciledLosses - readyLost;
    instance.unreconciledLosses = 0;
    if (unreadyLost <= 0) return;
    instance.starting = Math.max(0, instance.starting - unreadyLost);
    if (this.#isDestroying || instance.isRetired) return;
    // Piscina's bootstrap latch: it will not replace this loss or any later one.
    this.#bootFailures += unreadyLost;
    this.#markLatched(instance);
  }

  #markLatched(instance: PiscinaInstance): void {
    instance.isLatched = true;
    if (this.#isLatchReported) return;
    this.#isLatchReported = true;
    queueMicrotask(() => {
      this.#isLatchReported = false;
      if (this.#current.isLatched && !this.#isDestroying) this.#events.stalled();
    });
  }
}
