/**
 * The Piscina instances under a {@link WorkerPool} and their threads: starting
 * an instance, seeing its workers lost, telling which losses Piscina will not
 * make good, replacing a latched instance, terminating a thread and watching
 * that it exits, destroying them all. Runs on the main thread.
 *
 * **Threads are kept up whatever is lost.** Piscina replaces a lost worker
 * only while no worker has ever been lost before it was ready: after one such
 * loss it sets a one-way latch (`workerFailsDuringBootstrap`) and every later
 * loss shrinks the pool for good, down to no thread and calls waiting forever.
 * Two things keep that from stranding a call:
 * - the balancer gives calls only to threads Piscina has marked ready, so
 *   terminating a call's thread (time limit, abort, leftover work) can never
 *   trip the latch;
 * - a loss that trips it anyway (a thread killed from outside while starting,
 *   a thread failing to start) or a terminated thread that does not exit marks
 *   the instance latched, and the pool moves the calls waiting on it to a
 *   fresh instance at once (at the next call, if none waits). The old
 *   instance finishes its running calls and is destroyed.
 *
 * @module
 */
import { Piscina } from "piscina";

import type { Clock } from "../clock.js";
import type { ResolvedPoolOptions } from "../options.js";
import { CallQueue, type QueuedCall } from "./call-queue.js";
import type { PoolDiagnosis } from "../contracts/pool-contract.js";
import { releasePathLocksOf } from "../tools/coding/path-lock-table.js";
import { sweepThreadProcesses } from "../tools/coding/process-tree.js";
import type { WorkerBootData, WorkerReply, WorkerTask } from "./protocol.js";
import type { ThreadRecords } from "./thread-records.js";

/**
 * One Piscina instance with the queue and counts kept for it. A pool
 * normally has one for its whole life.
 */
export interface PiscinaInstance {
  readonly piscina: Piscina<WorkerTask, WorkerReply>;
  readonly queue: CallQueue;
  /** Threads Piscina has marked ready (their records say so): the only ones the balancer picks. */
  readyThreads: number;
  /** Calls dispatched to one of its threads and not yet settled. */
  running: number;
  /** Workers removed this turn, not yet matched against the threads still alive. */
  unreconciledLosses: number;
  /**
   * Set once Piscina will not keep this instance's thread count up: a worker
   * was lost before it was ready (Piscina's bootstrap latch), or a terminated
   * thread did not exit. Waiting calls then move to a fresh instance.
   */
  isLatched: boolean;
  /** Replaced by a newer instance: takes no calls, and is destroyed once its running calls end. */
  isRetired: boolean;
}

/** A call waiting in an instance's queue: it names the instance it was submitted to. */
export interface InstanceCall extends QueuedCall {
  instance: PiscinaInstance;
}

type LoadBalancer = NonNullable<NonNullable<ConstructorParameters<typeof Piscina>[0]>["loadBalancer"]>;
/** A task as Piscina's balancer sees it. */
export type PiscinaTask = Parameters<LoadBalancer>[0];
/** A thread as Piscina's balancer sees it. */
export type PiscinaWorker = Parameters<LoadBalancer>[1][number];

/** What the instances tell their pool. */
export interface InstanceEvents {
  /** Whether `worker` may take the task's call now; when it may, the call is dispatched to it. */
  dispatch(task: PiscinaTask, worker: PiscinaWorker): boolean;
  /** A message a worker posted besides its replies. */
  message(message: unknown): void;
  /** An error Piscina reported outside any task. */
  error(error: unknown): void;
  /** A thread was lost (it is no longer counted as ready anywhere). */
  threadLost(threadId: number): void;
  /** The current instance is latched: its waiting calls need a fresh instance (or an end). */
  latched(): void;
}

const workerEntryUrl = new URL("./thread/worker-entry.cjs", import.meta.url); // thread/worker-entry.ts as one CommonJS file: see scripts/bundle.mjs

/** Milliseconds a terminated thread may take to exit before its Piscina instance is counted as short of a thread. */
const exitWatchMs = 2_000;

/** Settles a moved call's old Piscina task; its handlers ignore it. */
export const movedReason = new Error("moved to a fresh Piscina instance");

export class PiscinaInstances {
  readonly #options: ResolvedPoolOptions;
  readonly #clock: Clock;
  readonly #threads: ThreadRecords;
  readonly #workerData: WorkerBootData;
  readonly #events: InstanceEvents;
  #current: PiscinaInstance;
  /** Instances replaced but still running calls. */
  readonly #retired = new Set<PiscinaInstance>();
  #started = 0;
  /** Threads lost in a row before they had started. */
  #bootFailures = 0;
  #isLatchReported = false;
  #destroyed: Promise<void> | undefined;

  constructor(options: ResolvedPoolOptions, clock: Clock, threads: ThreadRecords, workerData: WorkerBootData, events: InstanceEvents) {
    this.#options = options;
    this.#clock = clock;
    this.#threads = threads;
    this.#workerData = workerData;
    this.#events = events;
    this.#current = this.#start();
  }

  /** The instance that takes new calls. */
  get current(): PiscinaInstance {
    return this.#current;
  }

  /** Every live instance, retired ones first. */
  get all(): PiscinaInstance[] {
    return [...this.#retired, this.#current];
  }

  get bootFailures(): number {
    return this.#bootFailures;
  }

  /** Once the threads are being destroyed nothing is repaired any more. */
  get isDestroying(): boolean {
    return this.#destroyed !== undefined;
  }

  /** A thread started: its boot message or a reply arrived. */
  onBoot(threadId: number): void {
    this.#threads.of(threadId).isBooted = true;
    this.#bootFailures = 0;
  }

  /** Forgets the failed starts counted so far (after the pool ended the calls they stranded). */
  resetBootFailures(): void {
    this.#bootFailures = 0;
  }

  /**
   * Starts a fresh instance and moves every call waiting on the current one
   * to it, in order (their old tasks are settled with {@link movedReason},
   * which their handlers ignore); returns the moved calls, for the pool to
   * submit again.
   */
  replace(): InstanceCall[] {
    const old = this.#current;
    old.isRetired = true;
    this.#current = this.#start();
    const waiting = old.queue.calls() as InstanceCall[];
    for (const call of waiting) call.instance = this.#current;
    old.queue.drain(movedReason);
    if (old.running === 0) void old.piscina.destroy();
    else this.#retired.add(old);
    return waiting;
  }

  /** A call left one of `instance`'s threads: a retired instance goes once its last call has. */
  onCallLeftThread(instance: PiscinaInstance): void {
    instance.running -= 1;
    if (instance.isRetired && instance.running === 0 && this.#retired.delete(instance)) void instance.piscina.destroy();
  }

  /**
   * Terminates one of an instance's threads. Piscina sees the exit and
   * replaces the worker; one that does not exit in time (blocked in native
   * code, where termination cannot reach) leaves its instance a thread short
   * for good, so the instance counts as latched.
   */
  terminateThread(instance: PiscinaInstance, threadId: number): void {
    const thread = instance.piscina.threads.find((candidate) => candidate.threadId === threadId);
    if (thread === undefined || this.#threads.isTerminating(threadId)) return;
    const record = this.#threads.of(threadId);
    this.#threads.watchExit(
      record,
      this.#clock.setTimeout(() => {
        this.#threads.endExitWatch(record);
        // A thread stuck in a system call that does not return (a FIFO's read) would hold its
        // file locks for as long: the pool gives up on it, and so do the edits waiting behind it.
        releasePathLocksOf(threadId);
        if (!instance.isRetired && !this.isDestroying) this.#markLatched(instance);
      }, exitWatchMs),
    );
    // Its bash calls' processes (pi's coding tools) end with it; the file locks it holds are freed when it exits.
    // Swept at once (a thread blocked in native code may never exit) and again once it has exited: a
    // shell it was spawning as the sweep read /proc could not yet be told by its environment.
    void thread.terminate().then(
      () => sweepThreadProcesses(threadId),
      () => sweepThreadProcesses(threadId),
    );
    void sweepThreadProcesses(threadId);
  }

  /**
   * Terminates every thread. A thread blocked in native code (a read of a
   * FIFO, say) cannot be terminated until the call returns; this waits for
   * it no longer than the exit watch.
   */
  destroy(): Promise<void> {
    for (const timer of this.#threads.endExitWatches()) this.#clock.clearTimeout(timer);
    this.#destroyed ??= (async () => {
      const threadIds = this.all.flatMap((instance) => instance.piscina.threads.map((thread) => thread.threadId));
      const destroyed = Promise.allSettled([
        ...this.all.map((instance) => instance.piscina.destroy()),
        ...threadIds.map((threadId) => sweepThreadProcesses(threadId)),
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

  /** The instances and their threads, for {@link PoolDiagnosis}. */
  describe(): Pick<PoolDiagnosis, "generations" | "generationsStarted" | "bootFailures"> {
    return {
      generations: this.all.map((instance) => ({
        threads: instance.piscina.threads.map(({ threadId }) => ({
          threadId,
          isUsable: this.#threads.get(threadId)?.readyIn === instance,
          isBooted: this.#threads.get(threadId)?.isBooted === true,
        })),
        queued: instance.queue.size,
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
    const queue = new CallQueue({ now: () => this.#clock.now() });
    // Set right below; the balancer runs only once calls come.
    let instance: PiscinaInstance | undefined;
    const piscina = new Piscina<WorkerTask, WorkerReply>({
      filename: workerEntryUrl.href,
      minThreads: options.minThreads,
      maxThreads: options.maxThreads,
      idleTimeout: options.idleTimeout,
      concurrentTasksPerWorker: 1,
      // The pool counts its own utilization; Piscina's run- and wait-time histograms would cost every task.
      recordTiming: false,
      taskQueue: queue,
      // A task the balancer could not place goes back to the front, not behind later arrivals.
      stricterFIFO: true,
      workerData: this.#workerData,
      ...(options.resourceLimits === undefined ? {} : { resourceLimits: { ...options.resourceLimits } }),
      ...(options.env === undefined ? {} : { env: { ...options.env } }),
      // The balancer is the one place that sees a call leave the queue for a
      // worker: that moment starts its time limit. Piscina has no "task
      // started" event (and `AbortSignal.timeout` would count queue time).
      // Piscina offers it every worker, ready or not; a call posted to one
      // still starting could get it terminated before it is ready, which
      // trips Piscina's bootstrap latch. Only ready threads take calls.
      loadBalancer: (task, workers) => {
        for (const worker of workers) {
          if (worker.currentUsage === 0 && this.#threads.get(worker.id)?.readyIn === instance && this.#events.dispatch(task, worker)) return worker;
        }
        return null;
      },
    });
    const created: PiscinaInstance = { piscina, queue, readyThreads: 0, running: 0, unreconciledLosses: 0, isLatched: false, isRetired: false };
    instance = created;
    piscina.on("workerCreate", (worker: { id: number }) => {
      const record = this.#threads.of(worker.id);
      if (record.readyIn === created) return;
      record.readyIn = created;
      created.readyThreads += 1;
      this.#releaseLocksAtExit(piscina, worker.id);
    });
    piscina.on("workerDestroy", () => this.#onWorkerLost(created));
    piscina.on("message", (message: unknown) => this.#events.message(message));
    // Without a listener, a worker failing while idle would take the host down.
    piscina.on("error", (error: unknown) => this.#events.error(error));
    return created;
  }

  /**
   * Frees the file locks (pi's coding tools' edits and writes, see
   * `path-lock-table.ts`) that thread `threadId` holds once it has exited,
   * however it ended: terminated by the pool, crashed, out of memory, or
   * `process.exit` in a tool. Only a ready thread takes calls, so only one
   * can hold a lock; one listener per thread, nothing per call.
   */
  #releaseLocksAtExit(piscina: Piscina<WorkerTask, WorkerReply>, threadId: number): void {
    const thread = piscina.threads.find((candidate) => candidate.threadId === threadId);
    // Not listed: it has already gone, before it could take a call.
    thread?.once("exit", () => releasePathLocksOf(threadId));
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
    const isCounted = !instance.isRetired && !this.isDestroying;
    let readyLost = 0;
    for (const record of [...this.#threads.readyIn(instance)]) {
      if (live.has(record.threadId)) continue;
      readyLost += 1;
      instance.readyThreads -= 1;
      this.#events.threadLost(record.threadId);
      // Piscina marks its first workers ready before they have loaded anything.
      if (!record.isBooted && record.exitWatch === undefined && isCounted) this.#bootFailures += 1;
      const exitWatch = this.#threads.endExitWatch(record);
      if (exitWatch !== undefined) this.#clock.clearTimeout(exitWatch);
      this.#threads.delete(record.threadId);
    }
    const unreadyLost = instance.unreconciledLosses - readyLost;
    instance.unreconciledLosses = 0;
    if (unreadyLost <= 0 || this.isDestroying || instance.isRetired) return;
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
      this.#events.latched();
    });
  }
}
