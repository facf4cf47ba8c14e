import { randomUUID } from "node:crypto";
import { BroadcastChannel, type Worker } from "node:worker_threads";

import { Piscina } from "piscina";

import type { Clock } from "../clock.js";
import { createDeferred, type Deferred } from "../deferred.js";
import type { ResolvedPoolOptions } from "../options.js";
import type { AgentToolResult } from "../types.js";
import { CallQueue, callOf, type QueuedCall } from "./call-queue.js";
import type { WorkerTool } from "./worker-tool.js";
import { classifyFailure } from "./classify-failure.js";
import { SpreadHost, type SpreadPart } from "./spread-host.js";
import type {
  CallTiming,
  PoolDiagnosis,
  PoolStats,
  ToolCallPool,
  WorkerCallOutcome,
  WorkerCallRequest,
} from "./pool-contract.js";
import {
  flagSlotCount,
  flagSlotMask,
  isBootMessage,
  isSpreadRequest,
  isUpdateMessage,
  maxSeq,
  type WorkerBootData,
  type WorkerReply,
  type WorkerTask,
  type WorkerToolDefinition,
} from "./protocol.js";

interface CallState extends QueuedCall {
  readonly seq: number;
  readonly request: WorkerCallRequest;
  /** The call's tool, as numbered in this pool. */
  readonly tool: PoolTool;
  /** The message for the worker, once submitted; the balancer adds the tool's definition for a thread that may not know it. */
  task: WorkerTask | undefined;
  readonly resolve: (outcome: WorkerCallOutcome) => void;
  /** The Piscina instance the call was submitted to; changes when a waiting call is moved to a fresh one. */
  generation: Generation;
  /** The thread running the call, once dispatched. */
  threadId: number;
  /** When a thread was picked for it: the end of its queue wait. */
  startedAt: number | undefined;
  /** The run time the worker timed, from its reply. */
  runMs: number | undefined;
  killReason: "timeout" | "aborted" | "reply-lost" | undefined;
  /** Its tool has finished (the worker's end flag said so at a deadline): the reply is awaited, never overtaken by a timeout. */
  hasFinished: boolean;
  isDispatched: boolean;
  isAborted: boolean;
  isSettled: boolean;
  updatesSeen: number;
  /** The worker's reply, held until every partial it announces has arrived. */
  reply: WorkerReply | undefined;
  timeoutTimer: unknown;
  graceTimer: unknown;
  onAbort: (() => void) | undefined;
}

/**
 * One Piscina instance with the queue and thread bookkeeping the pool keeps
 * for it. A pool normally has one for its whole life; it starts another only
 * when Piscina will no longer replace lost workers (see {@link WorkerPool}).
 */
interface Generation {
  readonly piscina: Piscina<WorkerTask, WorkerReply>;
  readonly queue: CallQueue;
  /** Threads Piscina has marked ready (its `workerCreate` event): the only ones the balancer picks. */
  readonly usable: Set<number>;
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


/** A tool as the pool numbers it: its calls' messages carry the number; a thread learns the definition once. */
interface PoolTool {
  readonly id: number;
  readonly definition: WorkerToolDefinition;
}

/** A thread as Piscina's balancer sees it. */
type PiscinaWorker = Parameters<NonNullable<NonNullable<ConstructorParameters<typeof Piscina>[0]>["loadBalancer"]>>[1][number];

const workerEntryUrl = new URL("./worker-entry.cjs", import.meta.url); // worker-entry.ts as one CommonJS file: see scripts/bundle.mjs

/** Piscina's run options: one frozen object for all calls, since termination is the pool's own. */
const noRunOptions = Object.freeze({});

/** Different exports one tool's calls may spread to (each keeps a tool entry for the pool's life). */
const maxPartExports = 64;

/** The one session of every call when `scheduling` is `"fifo"`. */
const fifoSession = Symbol("fifo");

/** Workers lost in a row before they finished starting, after which waiting calls fail instead of waiting for a thread. */
const maxBootFailures = 5;

/** Milliseconds a terminated thread may take to exit before its Piscina instance is counted as short of a thread. */
const exitWatchMs = 2_000;

/** Beyond a call's leftover grace, how long the reply of a finished call may take to be read. */
const replyMarginMs = 5_000;

/** Settles a moved call's old Piscina task; its handlers ignore it. */
const movedReason = new Error("moved to a fresh Piscina instance");
/** Settles the Piscina task of a waiting call that was ended before it ran. */
const endedReason = new Error("ended before it ran");

/**
 * The Piscina pool under a runtime, with what Piscina lacks for tool calls:
 * partial results while a call runs, cooperative abort then termination after
 * a grace period, a time limit counted from the call's start, a queue limit
 * that answers at once, and every fault turned into an outcome.
 *
 * Each worker runs one call at a time (`concurrentTasksPerWorker: 1`), because
 * terminating a worker must never take an innocent neighbour down with it.
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
 *   the instance latched, and the calls waiting on it move to a fresh Piscina
 *   instance at once (at the next call, if none waits). The old instance
 *   finishes its running calls and is destroyed. If workers keep failing to
 *   start, waiting calls end with `TP_ERR_WORKER_CRASH` rather than wait.
 *
 * The queue is the pool's own {@link CallQueue}, plugged into Piscina, and
 * termination is the pool's own (`worker.terminate()`), not Piscina's abort
 * signal: a task with a signal would go to Piscina's private skip queue, out
 * of the pool's reach.
 */
export class WorkerPool implements ToolCallPool {
  readonly #options: ResolvedPoolOptions;
  readonly #clock: Clock;
  #current: Generation;
  /** Instances replaced but still running calls. */
  readonly #retired = new Set<Generation>();
  #generationsStarted = 0;
  readonly #calls = new Map<number, CallState>();
  readonly #abortFlags = new Int32Array(new SharedArrayBuffer(flagSlotCount * Int32Array.BYTES_PER_ELEMENT));
  readonly #retireFlags = new Int32Array(new SharedArrayBuffer(flagSlotCount * Int32Array.BYTES_PER_ELEMENT));
  readonly #endFlags = new Int32Array(new SharedArrayBuffer(flagSlotCount * Int32Array.BYTES_PER_ELEMENT));
  readonly #takenUpdates = new Int32Array(new SharedArrayBuffer(flagSlotCount * Int32Array.BYTES_PER_ELEMENT));
  readonly #control: BroadcastChannel;
  readonly #controlChannel: string;
  readonly #onPoolError: (error: unknown) => void;
  /** Threads known to have started: their boot message or a reply arrived. */
  readonly #booted = new Set<number>();
  /** Threads the pool terminated, with the timer that watches for their exit. */
  readonly #terminating = new Map<number, unknown>();
  #bootFailures = 0;
  readonly #tools = new Map<WorkerTool, PoolTool>();
  /** The tools that parts of spread calls run as: per calling tool's number, by export name. */
  readonly #partTools = new Map<number, Map<string, WorkerTool>>();
  /** Created on the first `ctx.spread` request: pools whose tools never spread keep none. */
  #spread: SpreadHost | undefined;
  /** Per live thread, the tools it has answered a call of: its later calls of them go without the definition. */
  readonly #threadTools = new Map<number, Set<number>>();
  /**
   * With `maxRunningPerSession`: per session, how many of its calls Piscina
   * holds (waiting in its queue or running), and the calls held back until
   * one of those settles. A session never has more than the cap in Piscina,
   * so it can never run more than that at once, and Piscina's queue holds
   * only calls that may start.
   */
  readonly #admission: Map<unknown, { admitted: number; parked: CallState[] }> | undefined;
  #isRepairScheduled = false;
  #seq = 0;
  #queued = 0;
  #completed = 0;
  #isClosed = false;
  /** Resolved when the last call settles after close() began. */
  #drained: Deferred<void> | undefined;
  #destroyed: Promise<void> | undefined;

  constructor(options: ResolvedPoolOptions, clock: Clock, onPoolError: (error: unknown) => void) {
    this.#options = options;
    this.#clock = clock;
    this.#onPoolError = onPoolError;
    this.#admission = options.maxRunningPerSession === undefined ? undefined : new Map();
    this.#controlChannel = `toolpool:${randomUUID()}`;
    this.#control = new BroadcastChannel(this.#controlChannel);
    this.#control.unref();
    this.#current = this.#startGeneration();
  }

  /** The pool's resolved options. */
  get options(): ResolvedPoolOptions {
    return this.#options;
  }

  /** A snapshot of threads, running and queued calls. */
  get stats(): PoolStats {
    let threads = this.#current.piscina.threads.length;
    for (const generation of this.#retired) threads += generation.piscina.threads.length;
    return {
      threads,
      running: this.#calls.size - this.#queued,
      queued: this.#queued,
      completed: this.#completed,
      utilization: this.#current.piscina.utilization,
      ...this.#waitingSessions(),
    };
  }

  #waitingSessions(): { sessionsWaiting: number; longestWaitMs: number } {
    const queue = this.#current.queue;
    let sessionsWaiting = queue.sessionsWaiting;
    let longestWaitMs = queue.longestWaitMs();
    for (const [session, { parked }] of this.#admission ?? []) {
      if (parked.length === 0) continue;
      if (!queue.hasSession(session)) sessionsWaiting += 1;
      longestWaitMs = Math.max(longestWaitMs, this.#clock.now() - parked[0]!.enqueuedAt);
    }
    return { sessionsWaiting, longestWaitMs };
  }

  /** The live threads of every Piscina instance, for supervision (and tests that kill one from outside). */
  get workers(): Worker[] {
    return [...this.#retired, this.#current].flatMap((generation) => generation.piscina.threads);
  }

  /** The inner state: Piscina instances, threads and every call not yet settled. */
  diagnose(): PoolDiagnosis {
    const describe = (generation: Generation) => ({
      threads: generation.piscina.threads.map(({ threadId }) => ({
        threadId,
        isUsable: generation.usable.has(threadId),
        isBooted: this.#booted.has(threadId),
      })),
      queued: generation.queue.size,
      running: generation.running,
      isLatched: generation.isLatched,
      isRetired: generation.isRetired,
    });
    return {
      generations: [...this.#retired, this.#current].map(describe),
      generationsStarted: this.#generationsStarted,
      bootFailures: this.#bootFailures,
      calls: [...this.#calls.values()].map((call) => ({
        tool: call.request.tool.name,
        toolCallId: call.request.toolCallId,
        state: call.isDispatched ? "running" : "waiting",
        ...(call.isDispatched ? { threadId: call.threadId } : {}),
        isAborted: call.isAborted,
      })),
    };
  }

  /** Runs one call on a worker. Resolves with its outcome; never rejects. */
  run(request: WorkerCallRequest): Promise<WorkerCallOutcome> {
    const toolName = request.tool.name;
    if (this.#isClosed) {
      return Promise.resolve({ kind: "error", code: "TP_ERR_CLOSED", message: `Tool "${toolName}" was not run: the pool is closed` });
    }
    if (this.#isQueueFull()) {
      return Promise.resolve({
        kind: "error",
        code: "TP_ERR_QUEUE_FULL",
        message: `Tool "${toolName}" was not run: the pool's queue is full (maxQueue ${this.#options.maxQueue})`,
      });
    }
    // A latched instance would not keep its threads up: start afresh first.
    if (this.#current.isLatched) this.#replaceGeneration();
    return new Promise<WorkerCallOutcome>((resolve) => {
      const call = this.#enqueue(request, this.#options.scheduling === "fifo" ? fifoSession : (request.session ?? Symbol("session")), resolve);
      if (this.#admission === undefined || this.#admit(call)) this.#submit(call);
    });
  }

  /** A new call, registered and listening to its signal; not yet submitted. */
  #enqueue(request: WorkerCallRequest, session: unknown, resolve: (outcome: WorkerCallOutcome) => void): CallState {
    const seq = this.#nextSeq();
    const call: CallState = {
      seq,
      tool: this.#toolOf(request.tool),
      task: undefined,
      // FIFO is one line that every call joins; fair, a line per session.
      session,
      cost: request.tool.cost,
      enqueuedAt: this.#clock.now(),
      request,
      resolve,
      generation: this.#current,
      threadId: 0,
      startedAt: undefined,
      runMs: undefined,
      killReason: undefined,
      hasFinished: false,
      isDispatched: false,
      isAborted: false,
      isSettled: false,
      updatesSeen: 0,
      reply: undefined,
      timeoutTimer: undefined,
      graceTimer: undefined,
      onAbort: undefined,
    };
    this.#calls.set(seq, call);
    this.#queued += 1;
    const signal = request.signal;
    if (signal !== undefined) {
      if (signal.aborted) this.#abort(call);
      else {
        call.onAbort = () => this.#abort(call);
        signal.addEventListener("abort", call.onAbort, { once: true });
      }
    }
    return call;
  }

  /**
   * Stops the pool; calls submitted afterwards end with `TP_ERR_CLOSED`.
   * Calls already submitted, queued ones included, finish first, unless
   * `force` is set: then every running or queued call ends at once with
   * `TP_ERR_CLOSED`. Then the threads are terminated.
   */
  async close(options: { force?: boolean } = {}): Promise<void> {
    this.#isClosed = true;
    if (options.force) {
      for (const call of [...this.#calls.values()]) {
        this.#settle(call, {
          kind: "error",
          code: "TP_ERR_CLOSED",
          message: `Tool "${call.request.tool.name}" was stopped: the runtime was closed by force`,
        });
      }
    }
    // Piscina's own close() waits for tasks through events that a forced
    // destroy() never sends, so the drain is tracked here, on our own calls.
    if (this.#calls.size > 0) await (this.#drained ??= createDeferred()).promise;
    for (const timer of this.#terminating.values()) this.#clock.clearTimeout(timer);
    this.#terminating.clear();
    this.#destroyed ??= this.#destroyAll().finally(() => {
      this.#control.close();
      this.#spread?.close();
    });
    await this.#destroyed;
  }

  /**
   * Terminates every thread. A thread blocked in native code (a read of a
   * FIFO, say) cannot be terminated until the call returns; close waits for
   * it no longer than the exit watch.
   */
  async #destroyAll(): Promise<void> {
    const generations = [...this.#retired, this.#current];
    const destroyed = Promise.allSettled(generations.map((generation) => generation.piscina.destroy()));
    let timer: unknown;
    const watch = new Promise<void>((resolve) => {
      timer = this.#clock.setTimeout(resolve, exitWatchMs);
    });
    await Promise.race([destroyed, watch]);
    this.#clock.clearTimeout(timer);
  }

  /**
   * Once the threads are being destroyed nothing is repaired any more. Until
   * then (a graceful close too) a stranded queue still moves on, so that the
   * calls a close waits for can end.
   */
  get #isDestroying(): boolean {
    return this.#destroyed !== undefined;
  }

  #startGeneration(): Generation {
    this.#generationsStarted += 1;
    const queue = new CallQueue({ now: () => this.#clock.now() });
    const workerData: WorkerBootData = {
      abortFlags: this.#abortFlags,
      controlChannel: this.#controlChannel,
      retireFlags: this.#retireFlags,
      leftoverGraceMs: this.#options.leftoverGraceMs,
      endFlags: this.#endFlags,
      takenUpdates: this.#takenUpdates,
    };
    const options = this.#options;
    let generation: Generation | undefined;
    const piscina = new Piscina<WorkerTask, WorkerReply>({
      filename: workerEntryUrl.href,
      minThreads: options.minThreads,
      maxThreads: options.maxThreads,
      idleTimeout: options.idleTimeout,
      concurrentTasksPerWorker: 1,
      taskQueue: queue,
      // A task the balancer could not place goes back to the front, not behind later arrivals.
      stricterFIFO: true,
      workerData,
      ...(options.resourceLimits === undefined ? {} : { resourceLimits: { ...options.resourceLimits } }),
      ...(options.env === undefined ? {} : { env: { ...options.env } }),
      // The balancer is the one place that sees a call leave the queue for a
      // worker: that moment starts its time limit. Piscina has no "task
      // started" event (and `AbortSignal.timeout` would count queue time).
      // Piscina offers it every worker, ready or not; a call posted to one
      // still starting could get it terminated before it is ready, which
      // trips Piscina's bootstrap latch. Only ready threads take calls.
      loadBalancer: (task, workers) => {
        const usable = generation!.usable;
        for (const worker of workers) {
          if (worker.currentUsage === 0 && usable.has(worker.id) && !this.#isRetired(worker.id)) {
            this.#onDispatch(callOf(task) as CallState, worker);
            return worker;
          }
        }
        return null;
      },
    });
    generation = { piscina, queue, usable: new Set(), running: 0, unreconciledLosses: 0, isLatched: false, isRetired: false };
    const created = generation;
    piscina.on("workerCreate", (worker: { id: number }) => created.usable.add(worker.id));
    piscina.on("workerDestroy", () => this.#onWorkerLost(created));
    piscina.on("message", (message: unknown) => {
      if (isUpdateMessage(message)) this.#onUpdate(message.seq, message.partial);
      else if (isBootMessage(message)) this.#onBoot(message.threadId);
      else if (isSpreadRequest(message)) (this.#spread ??= this.#createSpreadHost()).onRequest(message);
    });
    // Without a listener, a worker failing while idle would take the host down.
    piscina.on("error", (error: unknown) => this.#onPoolError(error));
    return generation;
  }

  #submit(call: CallState): void {
    const generation = call.generation;
    const { request, seq } = call;
    const task: WorkerTask & { [key: symbol]: CallState } = {
      seq,
      tool: call.tool.id,
      toolCallId: request.toolCallId,
      args: request.args,
      // Symbol-keyed, so it stays on this thread: the queue and the balancer read it.
      [Piscina.queueOptionsSymbol]: call,
    };
    if (request.traceparent !== undefined) task.traceparent = request.traceparent;
    call.task = task;
    generation.piscina.run(task, noRunOptions).then(
      (reply) => {
        if (call.generation === generation) this.#onReply(call, reply);
      },
      (error: unknown) => {
        if (call.generation === generation) this.#settle(call, this.#classifyFailure(call, error));
      },
    );
  }

  #onBoot(threadId: number): void {
    this.#booted.add(threadId);
    this.#bootFailures = 0;
  }

  /**
   * Piscina is removing a worker: idle, finished, terminated or crashed. It
   * has not yet taken it off its list nor started a replacement (that comes
   * right after, unless latched), and a worker that has exited no longer
   * knows its thread id; so the loss is reconciled once this turn is over,
   * against the threads still alive.
   */
  #onWorkerLost(generation: Generation): void {
    generation.unreconciledLosses += 1;
    if (generation.unreconciledLosses === 1) queueMicrotask(() => this.#reconcile(generation));
  }

  #reconcile(generation: Generation): void {
    const live = new Set(generation.piscina.threads.map((thread) => thread.threadId));
    const isCounted = !generation.isRetired && !this.#isDestroying;
    let usableLost = 0;
    for (const threadId of generation.usable) {
      if (live.has(threadId)) continue;
      usableLost += 1;
      generation.usable.delete(threadId);
      this.#threadTools.delete(threadId);
      this.#spread?.onThreadLost(threadId);
      // Piscina marks its first workers ready before they have loaded anything.
      if (!this.#booted.delete(threadId) && !this.#terminating.has(threadId) && isCounted) this.#bootFailures += 1;
      const exitWatch = this.#terminating.get(threadId);
      if (exitWatch !== undefined) {
        this.#clock.clearTimeout(exitWatch);
        this.#terminating.delete(threadId);
      }
    }
    const unreadyLost = generation.unreconciledLosses - usableLost;
    generation.unreconciledLosses = 0;
    if (unreadyLost <= 0 || this.#isDestroying || generation.isRetired) return;
    // Piscina's bootstrap latch: it will not replace this loss or any later one.
    this.#bootFailures += unreadyLost;
    this.#markLatched(generation);
  }

  #markLatched(generation: Generation): void {
    generation.isLatched = true;
    if (this.#isRepairScheduled) return;
    this.#isRepairScheduled = true;
    queueMicrotask(() => {
      this.#isRepairScheduled = false;
      this.#repair();
    });
  }

  /** Moves the calls waiting on a latched instance to a fresh one, or ends them if threads keep failing to start. */
  #repair(): void {
    const generation = this.#current;
    if (this.#isDestroying || !generation.isLatched || generation.queue.size === 0) return;
    if (this.#bootFailures >= maxBootFailures) {
      const waiting = generation.queue.calls() as CallState[];
      generation.queue.drain(movedReason);
      for (const call of waiting) {
        this.#settle(call, {
          kind: "error",
          code: "TP_ERR_WORKER_CRASH",
          message: `Tool "${call.request.tool.name}" was not run: ${this.#bootFailures} worker threads in a row failed to start`,
        });
      }
      // The next call tries a fresh instance; until then none is started.
      this.#bootFailures = 0;
      return;
    }
    this.#replaceGeneration();
  }

  /** Starts a fresh Piscina instance and moves every waiting call to it, in order. */
  #replaceGeneration(): void {
    const old = this.#current;
    old.isRetired = true;
    this.#current = this.#startGeneration();
    const waiting = old.queue.calls() as CallState[];
    for (const call of waiting) call.generation = this.#current;
    old.queue.drain(movedReason);
    for (const call of waiting) if (!call.isSettled) this.#submit(call);
    if (old.running === 0) void old.piscina.destroy();
    else this.#retired.add(old);
  }

  /** The pool's number for `tool`, given on its first call. */
  #toolOf(tool: WorkerTool): PoolTool {
    let numbered = this.#tools.get(tool);
    if (numbered === undefined) {
      numbered = {
        id: this.#tools.size + 1,
        definition: {
          moduleUrl: tool.moduleUrl,
          exportName: tool.exportName,
          toolName: tool.name,
          maxResultBytes: tool.maxResultBytes ?? this.#options.maxResultBytes,
        },
      };
      this.#tools.set(tool, numbered);
    }
    return numbered;
  }

  #createSpreadHost(): SpreadHost {
    return new SpreadHost(this.#controlChannel, {
      isRunning: (seq, threadId) => {
        const call = this.#calls.get(seq);
        return call !== undefined && call.isDispatched && !call.isSettled && call.reply === undefined && (threadId === undefined || call.threadId === threadId);
      },
      partSlots: (seq) => {
        const generation = this.#current;
        if (generation.isLatched) return 0;
        // Usable threads not running a call, less what waits for one (parts not yet placed included).
        const idle = Math.max(0, generation.usable.size - generation.running - generation.queue.size - this.#terminating.size);
        if (this.#admission === undefined) return idle;
        // Parts run in the caller's session: they take places under its cap like its calls.
        const admitted = this.#admission.get(this.#calls.get(seq)?.session)?.admitted ?? 0;
        return Math.min(idle, Math.max(0, this.#options.maxRunningPerSession! - admitted));
      },
      isClosed: () => this.#isClosed,
      runPart: (parentSeq, exportName, input) => this.#runPart(this.#calls.get(parentSeq)!, exportName, input),
    });
  }

  /**
   * Runs one part of a spread call: `exportName` of the calling tool's module,
   * as a call of its own in the caller's session, submitted at once (parts
   * go to idle threads only, so no admission or queue limit applies).
   */
  #runPart(parent: CallState, exportName: string, input: unknown): SpreadPart {
    const { moduleUrl, toolName, maxResultBytes } = parent.tool.definition;
    // Per calling tool (its name and result limit are the parts' too), per export.
    let parts = this.#partTools.get(parent.tool.id);
    if (parts === undefined) this.#partTools.set(parent.tool.id, (parts = new Map()));
    let tool = parts.get(exportName);
    if (tool === undefined) {
      if (parts.size >= maxPartExports) {
        throw new Error(`tool "${toolName}" already spreads ${maxPartExports} different exports, the most one tool may`);
      }
      tool = { name: `${toolName} (part: ${exportName})`, moduleUrl, exportName, maxResultBytes, cost: 1 } as unknown as WorkerTool;
      parts.set(exportName, tool);
    }
    let call: CallState | undefined;
    const outcome = new Promise<WorkerCallOutcome>((resolve) => {
      call = this.#enqueue({ tool, toolCallId: parent.request.toolCallId, args: input }, parent.session, resolve);
    });
    const part = call!;
    if (this.#admission !== undefined) {
      // Counted under the session's cap (partSlots left room for it), released when it settles.
      const entry = this.#admission.get(part.session);
      if (entry === undefined) this.#admission.set(part.session, { admitted: 1, parked: [] });
      else entry.admitted += 1;
    }
    this.#submit(part);
    return {
      seq: part.seq,
      outcome,
      stop: () => {
        if (part.isSettled) return;
        if (part.isDispatched) this.#abort(part);
        else this.#settle(part, { kind: "error", code: "TP_ERR_ABORTED", message: `${tool.name} was stopped before it ran: its call ended or was aborted` });
      },
    };
  }

  #nextSeq(): number {
    this.#seq = this.#seq >= maxSeq ? 1 : this.#seq + 1;
    return this.#seq;
  }

  #isQueueFull(): boolean {
    const { maxQueue, maxThreads } = this.#options;
    if (maxQueue === undefined) return false;
    const freeThreads = maxThreads - (this.#calls.size - this.#queued);
    // The new call would have to wait, and maxQueue calls already do.
    return this.#queued + 1 - freeThreads > maxQueue;
  }

  #onDispatch(call: CallState, worker: PiscinaWorker): void {
    if (call.isDispatched || call.isSettled) return;
    call.isDispatched = true;
    call.threadId = worker.id;
    // Posted right after this returns: a thread not yet seen answering a call
    // of the tool gets its definition (again, if a reply is still on its way).
    if (this.#threadTools.get(worker.id)?.has(call.tool.id) !== true) call.task!.definition = call.tool.definition;
    call.startedAt = this.#clock.now();
    call.generation.running += 1;
    this.#queued -= 1;
    const { timeoutMs } = call.request.tool;
    if (timeoutMs !== undefined) call.timeoutTimer = this.#clock.setTimeout(() => this.#terminate(call, "timeout"), timeoutMs);
    if (call.isAborted) this.#startGracePeriod(call);
  }

  #abort(call: CallState): void {
    if (call.isAborted || call.isSettled) return;
    call.isAborted = true;
    Atomics.store(this.#abortFlags, call.seq & flagSlotMask, call.seq);
    this.#control.postMessage({ abort: call.seq });
    if (call.isDispatched && call.reply === undefined) this.#startGracePeriod(call);
    if (this.#spread !== undefined) this.#spread.onCallAborted(call.seq);
  }

  #startGracePeriod(call: CallState): void {
    if (call.hasFinished) return;
    call.graceTimer ??= this.#clock.setTimeout(() => this.#terminate(call, "aborted"), this.#options.abortGraceMs);
  }

  /**
   * Ends a call that overran its time limit or its abort grace: the outcome is
   * settled at once (a thread blocked in native code may take long to die, or
   * never), then its thread is terminated and Piscina replaces it.
   */
  #terminate(call: CallState, reason: "timeout" | "aborted"): void {
    if (call.isSettled || call.reply !== undefined || call.hasFinished) return;
    // The tool may have finished with its reply on the way: the timer fired
    // in the same turn, or late behind a busy main thread (timers run before
    // the messages that came meanwhile). The worker swapped its mark in
    // before posting the reply; whichever side swaps first decides.
    if (Atomics.exchange(this.#endFlags, call.threadId & flagSlotMask, -call.seq) === call.seq) {
      this.#awaitReply(call);
      return;
    }
    call.killReason = reason;
    this.#settle(call, this.#classifyFailure(call, undefined));
    this.#terminateThread(call.generation, call.threadId);
  }

  /**
   * Waits for the reply of a call whose tool finished: it comes once the
   * call's leftover work has had its grace. A thread blocked before posting
   * it (a busy loop in that leftover work) is terminated after the wait, and
   * the call reported as finished with its result lost, never as timed out.
   */
  #awaitReply(call: CallState): void {
    this.#clearTimers(call);
    call.hasFinished = true;
    call.timeoutTimer = this.#clock.setTimeout(() => {
      if (call.isSettled || call.reply !== undefined) return;
      call.killReason = "reply-lost";
      this.#settle(call, this.#classifyFailure(call, undefined));
      this.#terminateThread(call.generation, call.threadId);
    }, this.#replyWaitMs);
  }

  /** How long a finished call's reply may take to arrive: its leftover work's grace, and a margin for a busy main thread. */
  get #replyWaitMs(): number {
    return this.#options.leftoverGraceMs + replyMarginMs;
  }

  /**
   * Terminates one of a generation's threads. Piscina sees the exit and
   * replaces the worker; one that does not exit in time (blocked in native
   * code, where termination cannot reach) leaves its instance a thread short
   * for good, so the instance counts as latched.
   */
  #terminateThread(generation: Generation, threadId: number): void {
    const thread = generation.piscina.threads.find((candidate) => candidate.threadId === threadId);
    if (thread === undefined || this.#terminating.has(threadId)) return;
    this.#terminating.set(
      threadId,
      this.#clock.setTimeout(() => {
        this.#terminating.delete(threadId);
        if (!generation.isRetired && !this.#isDestroying) this.#markLatched(generation);
      }, exitWatchMs),
    );
    void thread.terminate();
  }

  #onUpdate(seq: number, partial: unknown): void {
    const call = this.#calls.get(seq);
    if (call === undefined || call.isSettled) return;
    call.updatesSeen += 1;
    // Lets the worker send more: it holds partials back while too many are untaken.
    Atomics.store(this.#takenUpdates, seq & flagSlotMask, call.updatesSeen);
    call.request.onUpdate?.(partial as AgentToolResult<unknown>);
    if (call.reply !== undefined && call.updatesSeen >= call.reply.updates) this.#settle(call, toOutcome(call.reply));
  }

  #onReply(call: CallState, reply: WorkerReply): void {
    // A reply is proof the thread started, whether or not its boot message came first.
    this.#onBoot(call.threadId);
    // ...and that it knows the call's tool from now on.
    let known = this.#threadTools.get(call.threadId);
    if (known === undefined) this.#threadTools.set(call.threadId, (known = new Set()));
    known.add(call.tool.id);
    if (reply.retiredThreadId !== undefined) this.#terminateThread(call.generation, reply.retiredThreadId);
    if (call.isSettled) return;
    call.runMs = reply.runMs;
    // Partials travel on another port than the reply: wait for the last one.
    if (call.updatesSeen >= reply.updates) this.#settle(call, toOutcome(reply));
    else {
      call.reply = reply;
      // The call has left its thread, which may already run another call:
      // neither its time limit nor an abort may terminate that thread now.
      this.#clearTimers(call);
    }
  }

  #isRetired(threadId: number): boolean {
    return Atomics.load(this.#retireFlags, threadId & flagSlotMask) === threadId;
  }

  #classifyFailure(call: CallState, error: unknown): WorkerCallOutcome {
    return classifyFailure(call.request.tool, error, {
      killReason: call.killReason,
      abortGraceMs: this.#options.abortGraceMs,
      replyWaitMs: this.#replyWaitMs,
      isClosed: this.#isClosed,
    });
  }

  #settle(call: CallState, outcome: WorkerCallOutcome): void {
    if (call.isSettled) return;
    call.isSettled = true;
    // A part of a spread call is not a call of the pool's users: not counted, not admitted.
    // A part of a spread call counts as a call of its own here, as it does in `running` and `diagnose()`.
    this.#completed += 1;
    if (this.#spread !== undefined) this.#spread.onCallEnded(call.seq);
    let wasParked = false;
    if (call.isDispatched) this.#onCallLeftThread(call.generation);
    else {
      this.#queued -= 1;
      // A waiting call ended early (closed by force): it must not run later.
      wasParked = this.#unpark(call);
      if (!wasParked) call.generation.queue.take(call, endedReason);
    }
    this.#clearTimers(call);
    if (call.onAbort !== undefined) call.request.signal?.removeEventListener("abort", call.onAbort);
    this.#calls.delete(call.seq);
    if (this.#admission !== undefined && !wasParked) this.#releaseAdmission(call);
    if (this.#calls.size === 0) this.#drained?.resolve();
    const timing: CallTiming = { submittedAt: call.enqueuedAt, endedAt: this.#clock.now() };
    if (call.startedAt !== undefined) timing.startedAt = call.startedAt;
    if (call.isDispatched) timing.threadId = call.threadId;
    if (call.runMs !== undefined) timing.runMs = call.runMs;
    // Every outcome reaching here is a fresh object of this call's.
    outcome.timing = timing;
    call.resolve(outcome);
  }

  /** Whether the call may go to Piscina now (its session is under the cap); else it is parked. */
  #admit(call: CallState): boolean {
    let entry = this.#admission!.get(call.session);
    if (entry === undefined) this.#admission!.set(call.session, (entry = { admitted: 0, parked: [] }));
    if (entry.admitted < this.#options.maxRunningPerSession!) {
      entry.admitted += 1;
      return true;
    }
    entry.parked.push(call);
    return false;
  }

  /** A settled call frees its session's place in Piscina: the session's next parked call takes it. */
  #releaseAdmission(call: CallState): void {
    const entry = this.#admission!.get(call.session);
    if (entry === undefined) return;
    const next = entry.parked.shift();
    if (next !== undefined) {
      next.generation = this.#current;
      this.#submit(next);
    } else if (--entry.admitted === 0) this.#admission!.delete(call.session);
  }

  /** Takes a parked call out of its session's line; false when it was not parked. */
  #unpark(call: CallState): boolean {
    const parked = this.#admission?.get(call.session)?.parked;
    const index = parked?.indexOf(call) ?? -1;
    if (index === -1) return false;
    parked!.splice(index, 1);
    return true;
  }

  #clearTimers(call: CallState): void {
    if (call.timeoutTimer !== undefined) this.#clock.clearTimeout(call.timeoutTimer);
    if (call.graceTimer !== undefined) this.#clock.clearTimeout(call.graceTimer);
    call.timeoutTimer = undefined;
    call.graceTimer = undefined;
  }

  #onCallLeftThread(generation: Generation): void {
    generation.running -= 1;
    if (generation.isRetired && generation.running === 0 && this.#retired.delete(generation)) void generation.piscina.destroy();
  }
}

function toOutcome(reply: WorkerReply): WorkerCallOutcome {
  switch (reply.kind) {
    case "ok":
      return { kind: "ok", result: reply.result as AgentToolResult<unknown> };
    case "error":
      return { kind: "error", message: reply.message };
    case "fault":
      return { kind: "error", message: reply.message, code: reply.code };
  }
}
