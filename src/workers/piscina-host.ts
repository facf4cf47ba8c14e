/**
 * The thread host over Piscina, the one module that knows Piscina, through
 * its public API: a task names its thread in its queue options and the
 * balancer places it there; each thread has a port of its own, handed with
 * its first task; a lost thread that Piscina will not replace (its bootstrap
 * latch) makes the host `stalled`, and `restart` starts a fresh instance.
 *
 * @module
 */
import type { MessagePort, Worker } from "node:worker_threads";

import { Piscina } from "piscina";

import type { Clock } from "../clock.js";
import type { ResolvedPoolOptions } from "../options.js";
import type { PoolDiagnosis } from "../contracts/pool-contract.js";
import {
  isBootMessage,
  readWorkerReply,
  type OkPair,
  type ThreadMessage,
  type WorkerBootData,
  type WorkerReply,
  type WorkerTask,
} from "./protocol.js";
import type { ThreadHost, ThreadHostEvents } from "./thread-host.js";
import { ThreadHookSet } from "./thread-hook-set.js";
import { ThreadRecords, type ThreadRecord } from "./thread-records.js";

/** One Piscina instance; a host normally has one for its whole life. */
interface PiscinaInstance {
  readonly piscina: Piscina<WorkerTask, WorkerReply | OkPair>;
  readyThreads: number;
  /** Asked for by `grow`, not yet ready. */
  starting: number;
  running: number;
  /** Slots in its queue bound to no call yet. */
  staged: number;
  /** Workers removed this turn, not yet matched against the threads still alive. */
  unreconciledLosses: number;
  /** Piscina will not keep its thread count up (a worker lost before it was ready, or a terminated one that did not exit). */
  isLatched: boolean;
  /** Replaced: takes no tasks, destroyed once its running ones end. */
  isRetired: boolean;
}

type HostThread = ThreadRecord<PiscinaInstance>;

const workerEntryUrl = new URL("./thread/worker-entry.cjs", import.meta.url); // thread/worker-entry.ts as one CommonJS file: see scripts/bundle.mjs

/** How long a terminated thread may take to exit before its instance counts as short of a thread. */
const exitWatchMs = 2_000;

const queueOptions = Piscina.queueOptionsSymbol;

const noRunOptions = Object.freeze({});

/** Names no thread: placed nowhere, so Piscina starts a thread for it. */
const growTask = Object.freeze({}) as WorkerTask;

const ignore = () => {};

function notSentReply(error: unknown): WorkerReply {
  const detail = error instanceof Error ? error.message : String(error);
  return {
    kind: "error",
    message: `The call's arguments or context cannot be sent to a worker thread (structured clone): ${detail}`,
    updates: 0,
    undelivered: true,
  };
}

/** The run signal through which a task is withdrawn from Piscina's queue. */
class WithdrawSignal {
  aborted = false;
  #listener: (() => void) | undefined;
  addEventListener(_type: "abort", listener: () => void): void {
    this.#listener = listener;
  }
  removeEventListener(): void {
    this.#listener = undefined;
  }
  abort(): void {
    this.aborted = true;
    this.#listener?.();
  }
}

/**
 * A waiting call's place in Piscina's queue. Piscina places it when a thread
 * frees up, before that thread's last reply is read; the balancer then binds
 * it to the pool's next call (`take`), so the queue's turn is decided then.
 */
class Slot<Token> extends WithdrawSignal {
  readonly task = {} as WorkerTask;
  readonly instance: PiscinaInstance;
  token: Token | undefined;
  threadId = 0;
  constructor(instance: PiscinaInstance) {
    super();
    this.instance = instance;
    (this.task as unknown as Record<symbol, unknown>)[queueOptions] = this;
  }
}

export class PiscinaHost<Token> implements ThreadHost<Token> {
  readonly #options: ResolvedPoolOptions;
  readonly #clock: Clock;
  readonly #threads = new ThreadRecords<PiscinaInstance>();
  readonly #workerData: WorkerBootData & Record<string, unknown>;
  readonly #hooks = new ThreadHookSet();
  readonly #events: ThreadHostEvents<Token>;
  #current: PiscinaInstance;
  readonly #retired = new Set<PiscinaInstance>();
  #started = 0;
  #bootFailures = 0;
  #isLatchReported = false;
  #destroyed: Promise<void> | undefined;

  constructor(options: ResolvedPoolOptions, clock: Clock, workerData: WorkerBootData, events: ThreadHostEvents<Token>) {
    this.#options = options;
    this.#clock = clock;
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

  get #isDestroying(): boolean {
    return this.#destroyed !== undefined;
  }

  #all(): PiscinaInstance[] {
    return [...this.#retired, this.#current];
  }

  post(threadId: number, task: WorkerTask, token: Token): boolean {
    const record = this.#threads.get(threadId);
    if (record === undefined || !this.#isUsable(record)) return false;
    const { instance } = record;
    (task as unknown as Record<symbol, unknown>)[queueOptions] = record.target;
    let runOptions: { transferList?: [MessagePort] } = noRunOptions;
    const port = record.portForThread;
    if (port !== undefined) {
      task.port = port;
      runOptions = { transferList: [port] };
      record.portForThread = undefined;
    }
    instance.running += 1;
    instance.piscina.run(task, runOptions).then(
      (value) => this.#onReplied(instance, threadId, token, value),
      (error: unknown) => this.#onRejected(instance, threadId, token, error, port),
    );
    return true;
  }

  stage(count: number): void {
    const instance = this.#current;
    if (this.#isDestroying || instance.isLatched) return;
    while (instance.staged < count) {
      instance.staged += 1;
      const slot = new Slot<Token>(instance);
      instance.piscina.run(slot.task, { signal: slot }).then(
        (value) => this.#onReplied(instance, slot.threadId, slot.token!, value),
        (error: unknown) => {
          if (slot.token === undefined) {
            if (!slot.aborted) instance.staged -= 1;
            return;
          }
          this.#onRejected(instance, slot.threadId, slot.token, error, undefined);
        },
      );
    }
  }

  /** Binds `slot` to the pool's next call on a freed thread that has had its port; withdrawn when none waits. */
  #place<Worker extends { id: number; currentUsage: number }>(slot: Slot<Token>, workers: readonly Worker[]): Worker | null {
    if (slot.aborted) return null;
    for (const worker of workers) {
      if (worker.currentUsage !== 0) continue;
      const record = this.#threads.get(worker.id);
      if (record === undefined || record.instance !== slot.instance || record.portForThread !== undefined || !this.#isUsable(record)) continue;
      const taken = this.#events.take(worker.id);
      if (taken === undefined) {
        // Nothing waits (or that thread may take nothing): withdrawn once Piscina is done with it.
        queueMicrotask(() => this.#withdraw(slot));
        return null;
      }
      Object.assign(slot.task, taken.task);
      slot.token = taken.token;
      slot.threadId = worker.id;
      slot.instance.staged -= 1;
      slot.instance.running += 1;
      return worker;
    }
    return null;
  }

  #withdraw(slot: Slot<Token>): void {
    if (slot.token !== undefined || slot.aborted) return;
    slot.instance.staged -= 1;
    slot.abort();
  }

  #onReplied(instance: PiscinaInstance, threadId: number, token: Token, value: WorkerReply | OkPair): void {
    // A reply is proof the thread started, whether or not its boot message came first.
    this.#onBoot(threadId);
    this.#onTaskLeft(instance);
    this.#events.replied(token, readWorkerReply(value));
  }

  /**
   * Piscina rejected the task: its thread is lost, or (a task it could not
   * clone) the thread never saw it and serves on, its port kept for its next
   * first task.
   */
  #onRejected(instance: PiscinaInstance, threadId: number, token: Token, error: unknown, port: MessagePort | undefined): void {
    const record = this.#threads.get(threadId);
    const isNotSent = record !== undefined && this.#isUsable(record) && error instanceof Error && error.name === "DataCloneError";
    if (!isNotSent) {
      this.#onFailed(instance, threadId, token, error);
      return;
    }
    if (port !== undefined) record.portForThread = port;
    this.#onTaskLeft(instance);
    this.#events.replied(token, notSentReply(error));
  }

  #onFailed(instance: PiscinaInstance, threadId: number, token: Token, error: unknown): void {
    // Its bash calls' processes (pi's coding tools) end with it; what it holds is freed when it exits.
    void this.#hooks.threadLost(threadId);
    this.#onTaskLeft(instance);
    this.#events.failed(token, threadId, error);
  }

  /** An exited worker's threadId reads -1 before its removal reaches the host. */
  #isUsable(record: HostThread): boolean {
    return !record.isGone && !record.instance.isRetired && record.exitWatch === undefined && record.worker?.threadId === record.threadId;
  }

  send(threadId: number, message: ThreadMessage): void {
    this.#threads.get(threadId)?.port.postMessage(message);
  }

  grow(): void {
    const instance = this.#current;
    if (this.#isDestroying || instance.isLatched || instance.readyThreads + instance.starting >= this.#options.maxThreads) return;
    instance.starting += 1;
    // Piscina starts a thread for a task it could not place; the task itself is withdrawn at once.
    const withdraw = new WithdrawSignal();
    instance.piscina.run(growTask, { signal: withdraw }).catch(ignore);
    withdraw.abort();
  }

  restart(): void {
    if (this.#isDestroying) return;
    const old = this.#current;
    old.isRetired = true;
    this.#current = this.#start();
    if (old.running === 0) void old.piscina.destroy();
    else this.#retired.add(old);
  }

  #onBoot(threadId: number): void {
    const record = this.#threads.get(threadId);
    if (record !== undefined) record.isBooted = true;
    this.#bootFailures = 0;
  }

  #onTaskLeft(instance: PiscinaInstance): void {
    instance.running -= 1;
    if (instance.isRetired && instance.running === 0 && this.#retired.delete(instance)) void instance.piscina.destroy();
  }

  /** Piscina replaces a terminated worker once it exits; one blocked in native code leaves its instance short. */
  terminate(threadId: number): void {
    const record = this.#threads.get(threadId);
    const worker = record?.worker;
    if (record === undefined || worker === undefined || record.exitWatch !== undefined || worker.threadId !== threadId) return;
    const { instance } = record;
    record.exitWatch = this.#clock.setTimeout(() => {
      this.#threads.endExitWatch(record);
      // A thread stuck in a system call that does not return holds what it holds as long: the host gives up on it.
      this.#hooks.threadExited(threadId);
      if (!instance.isRetired && !this.#isDestroying) this.#markLatched(instance);
    }, exitWatchMs);
    // Swept at once (a thread blocked in native code may never exit) and again once it has: a
    // process it was spawning while the first sweep ran could not yet be told.
    void worker.terminate().then(
      () => this.#hooks.threadLost(threadId),
      () => this.#hooks.threadLost(threadId),
    );
    void this.#hooks.threadLost(threadId);
  }

  /** Waits for a thread blocked in native code no longer than the exit watch. */
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
      for (const instance of all) for (const record of [...this.#threads.readyIn(instance)]) this.#threads.delete(record.threadId);
    })();
    return this.#destroyed;
  }

  describe(): Pick<PoolDiagnosis, "generations" | "generationsStarted" | "bootFailures"> {
    return {
      generations: this.#all().map((instance) => ({
        threads: instance.piscina.threads.map(({ threadId }) => {
          const record = this.#threads.get(threadId);
          return { threadId, isUsable: record?.instance === instance, isBooted: record?.isBooted === true };
        }),
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
      workerData: this.#workerData,
      ...(options.resourceLimits === undefined ? {} : { resourceLimits: { ...options.resourceLimits } }),
      ...(options.env === undefined ? {} : { env: { ...options.env } }),
      // The thread the task names, if it is free; else the task waits in Piscina's queue for it.
      loadBalancer: (task, workers) => {
        const target = (task as unknown as Record<symbol, HostThread["target"] | Slot<Token> | null>)[queueOptions];
        if (target == null) return null;
        if (target instanceof Slot) return this.#place(target, workers);
        for (const worker of workers) if (worker.id === target.threadId) return worker.currentUsage === 0 ? worker : null;
        return null;
      },
    });
    const created: PiscinaInstance = {
      piscina,
      readyThreads: 0,
      starting: 0,
      running: 0,
      staged: 0,
      unreconciledLosses: 0,
      isLatched: false,
      isRetired: false,
    };
    piscina.on("workerCreate", (worker: { id: number }) => this.#onWorkerReady(created, worker.id));
    piscina.on("workerDestroy", (worker: { id: number }) => this.#onWorkerLost(created, worker.id));
    piscina.on("message", (message: unknown) => {
      if (isBootMessage(message)) this.#onBoot(message.threadId);
      else this.#events.message(message);
    });
    // Without a listener, a worker failing while idle would take the host down.
    piscina.on("error", (error: unknown) => this.#events.error(error));
    return created;
  }

  /** Piscina updates its own lists after this listener: the pool hears of the thread a microtask later. */
  #onWorkerReady(instance: PiscinaInstance, threadId: number): void {
    if (this.#threads.get(threadId)?.instance === instance) return;
    const worker = instance.piscina.threads.find((candidate) => candidate.threadId === threadId);
    const record = this.#threads.add(threadId, instance, worker);
    instance.readyThreads += 1;
    if (instance.starting > 0) instance.starting -= 1;
    // However it ends (terminated, crashed, out of memory, `process.exit` in a tool): one listener per thread.
    worker?.once("exit", () => this.#hooks.threadExited(threadId));
    queueMicrotask(() => {
      if (this.#threads.get(threadId) === record && !instance.isRetired && !this.#isDestroying) this.#events.ready(threadId);
    });
  }

  /** Piscina has not yet unlisted the worker, whose id reads -1: the loss is reconciled after this turn. */
  #onWorkerLost(instance: PiscinaInstance, threadId: number): void {
    const record = this.#threads.get(threadId);
    if (record !== undefined) record.isGone = true;
    instance.unreconciledLosses += 1;
    if (instance.unreconciledLosses === 1) queueMicrotask(() => this.#reconcile(instance));
  }

  #reconcile(instance: PiscinaInstance): void {
    const live = new Set(instance.piscina.threads.map((thread) => thread.threadId));
    const isCounted = !instance.isRetired && !this.#isDestroying;
    let readyLost = 0;
    for (const record of [...this.#threads.readyIn(instance)]) {
      if (live.has(record.threadId) && !record.isGone) continue;
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
