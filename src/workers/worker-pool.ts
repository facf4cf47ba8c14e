/**
 * The worker pool: a facade over its parts (the thread host, the call book,
 * queue and timers, session admission, shared-memory signals, spread parts),
 * owning the call lifecycle and the scheduling.
 *
 * @module
 */
import type { Worker } from "node:worker_threads";

import type { Clock } from "../clock.js";
import { outcomeTexts } from "../errors.js";
import type { ResolvedPoolOptions } from "../options.js";
import type { AgentToolResult } from "../types.js";
import { CallBook } from "./call-book.js";
import { CallQueue } from "./call-queue.js";
import { CallTimers, type Deadline, toolLoadGraceMs } from "./call-timers.js";
import { classifyFailure } from "./classify-failure.js";
import { SessionAdmission } from "./session-admission.js";
import { SpreadParts } from "./spread-parts.js";
import { PiscinaHost } from "./piscina-host.js";
import { createPoolCall, outcomeOf, type PoolCall } from "./pool-call.js";
import { BusyWindow } from "./busy-window.js";
import { abortMessageOf, CallSignals } from "./call-signals.js";
import { ToolNumbering } from "./tool-numbering.js";
import type { PoolDiagnosis, PoolStats, ToolCallPool, WorkerCallOutcome, WorkerCallRequest } from "../contracts/pool-contract.js";
import { isLoadedMessage, isSpreadRequest, isUpdateMessage, maxSeq, type WorkerBootData, type WorkerReply, type WorkerTask } from "./protocol.js";
import type { ThreadHost, ThreadHostEvents } from "./thread-host.js";
import { callEventBase, type PoolEventSource, type PoolThreadEntry } from "../contracts/pool-events.js";

export { toolLoadGraceMs } from "./call-timers.js";

/** Makes the threads under a pool: the Piscina host, or a fake one in tests. */
type CreateThreadHost = (
  options: ResolvedPoolOptions,
  clock: Clock,
  workerData: WorkerBootData,
  events: ThreadHostEvents<PoolCall>,
) => ThreadHost<PoolCall>;

const createPiscinaHost: CreateThreadHost = (options, clock, workerData, events) => new PiscinaHost(options, clock, workerData, events);

interface PoolThread {
  /** The tools it has answered a call of: its later calls of them go without the definition. */
  knownTools: Set<number> | undefined;
  /** The call posted to it and not yet freed from it; 0 while it is idle. */
  busySeq: number;
}

/** The one session of every call when `scheduling` is `"fifo"`. */
const fifoSession = Symbol("fifo");

/** Workers lost in a row before they started, after which waiting calls fail rather than wait. */
const maxBootFailures = 5;

/**
 * Each thread runs one call at a time: terminating it must never take an
 * innocent neighbour down. The pool posts a call to an idle thread the
 * moment both exist, with no round trip through the host.
 */
export class WorkerPool implements ToolCallPool {
  readonly #options: ResolvedPoolOptions;
  readonly #clock: Clock;
  readonly #host: ThreadHost<PoolCall>;
  readonly #book: CallBook<PoolCall>;
  readonly #queue: CallQueue<PoolCall>;
  /** Those the host said ready and has not lost. */
  readonly #threads = new Map<number, PoolThread>();
  /** Threads with nothing posted to them, the one freed last at the end. */
  readonly #idle: number[] = [];
  readonly #signals = new CallSignals();
  readonly #timers: CallTimers;
  readonly #onPoolError: (error: unknown) => void;
  readonly #tools: ToolNumbering;
  #parts: SpreadParts | undefined;
  readonly #admission: SessionAdmission<PoolCall> | undefined;
  #seq = 0;
  readonly #busy: BusyWindow;
  #isClosed = false;
  /** The host could not keep threads up and no call waited: the next call restarts it. */
  #isStalled = false;
  /** Calls `queued`, `started`, `ended`; threads `ready`, `exited`. */
  readonly events: PoolEventSource;

  constructor(options: ResolvedPoolOptions, clock: Clock, onPoolError: (error: unknown) => void, createHost: CreateThreadHost = createPiscinaHost) {
    this.#options = options;
    this.#clock = clock;
    this.#busy = new BusyWindow(clock.now());
    this.#onPoolError = onPoolError;
    this.#tools = new ToolNumbering(options);
    this.#queue = new CallQueue({ now: () => this.#clock.now() });
    this.#book = new CallBook({ now: () => this.#clock.now(), onAbort: (call) => this.#abort(call), listThreads: () => this.#threadEntries() });
    this.events = this.#book.events;
    this.#timers = new CallTimers(clock, options, (call, deadline) => this.#onExpired(call, deadline));
    this.#admission = options.maxRunningPerSession === undefined ? undefined : new SessionAdmission(options.maxRunningPerSession);
    this.#host = createHost(options, clock, this.#signals.bootData(options.leftoverGraceMs), {
      ready: (threadId) => this.#onReady(threadId),
      take: (threadId) => this.#take(threadId),
      replied: (call, reply) => this.#onReply(call, reply),
      failed: (call, threadId, error) => this.#onFailed(call, threadId, error),
      lost: (threadId) => this.#onLost(threadId),
      message: (message) => {
        if (isUpdateMessage(message)) this.#onUpdate(message.seq, message.partial);
        else if (isLoadedMessage(message)) this.#onLoaded(message.seq);
        else if (isSpreadRequest(message)) (this.#parts ??= this.#createParts()).onRequest(message);
      },
      error: (error) => this.#onPoolError(error),
      stalled: () => this.#onStalled(),
    });
  }

  get options(): ResolvedPoolOptions {
    return this.#options;
  }

  get stats(): PoolStats {
    return {
      threads: this.#host.threadCount,
      running: this.#book.running,
      queued: this.#book.queued,
      completed: this.#book.completed,
      utilization: this.#utilization(),
      ...this.#waitingSessions(),
    };
  }

  /** The pool's own count: Piscina's spans the pool's life, and its histograms cost every task. */
  #utilization(): number {
    const running: number[] = [];
    for (const call of this.#book.values()) if (call.startedAt !== undefined) running.push(call.startedAt);
    return this.#busy.utilization(this.#clock.now(), this.#options.maxThreads, running);
  }

  #waitingSessions(): { sessionsWaiting: number; longestWaitMs: number } {
    const queue = this.#queue;
    let sessionsWaiting = queue.sessionsWaiting;
    let longestWaitMs = queue.longestWaitMs();
    if (this.#admission !== undefined) {
      for (const [session, oldestEnqueuedAt] of this.#admission.parkedSessions()) {
        if (!queue.hasSession(session)) sessionsWaiting += 1;
        longestWaitMs = Math.max(longestWaitMs, this.#clock.now() - oldestEnqueuedAt);
      }
    }
    return { sessionsWaiting, longestWaitMs };
  }

  get workers(): Worker[] {
    return this.#host.workers;
  }

  diagnose(): PoolDiagnosis {
    const host = this.#host.describe();
    const current = host.generations.at(-1);
    if (current !== undefined) current.queued = this.#queue.size;
    return {
      ...host,
      calls: this.#book.inOrder().map((call) => ({
        tool: call.request.tool.name,
        toolCallId: call.request.toolCallId,
        state: call.phase === "waiting" ? "waiting" : "running",
        ...(call.phase === "waiting" ? {} : { threadId: call.threadId }),
        isAborted: call.isAborted,
        ...(call.phase === "running" && call.isLoading ? { isLoading: true } : {}),
      })),
    };
  }

  /** Never rejects. */
  run(request: WorkerCallRequest): Promise<WorkerCallOutcome> {
    const toolName = request.tool.name;
    if (this.#isClosed) {
      return Promise.resolve({ kind: "error", code: "TP_ERR_CLOSED", message: outcomeTexts.poolClosed(toolName) });
    }
    if (this.isQueueFull()) {
      return Promise.resolve({
        kind: "error",
        code: "TP_ERR_QUEUE_FULL",
        message: `Tool "${toolName}" was not run: the pool's queue is full (maxQueue ${this.#options.maxQueue})`,
      });
    }
    let context: unknown;
    if (request.tool.context !== undefined) {
      try {
        context = request.tool.context({ toolCallId: request.toolCallId, sessionKey: request.sessionKey });
      } catch (error) {
        return Promise.resolve({ kind: "error", message: error instanceof Error ? error.message : String(error) });
      }
    }
    if (this.#isStalled) {
      this.#isStalled = false;
      this.#host.restart();
    }
    return new Promise<WorkerCallOutcome>((resolve) => {
      // FIFO is one line that every call joins; fair, a line per session.
      const call = this.#enqueue(request, this.#options.scheduling === "fifo" ? fifoSession : (request.session ?? Symbol("session")), resolve);
      call.context = context;
      if (this.#admission === undefined || this.#admission.admit(call)) this.#submit(call);
    });
  }

  #enqueue(request: WorkerCallRequest, session: unknown, resolve: (outcome: WorkerCallOutcome) => void): PoolCall {
    this.#seq = this.#seq >= maxSeq ? 1 : this.#seq + 1;
    const call = createPoolCall(this.#seq, request, this.#tools.toolOf(request.tool), session, this.#clock.now(), resolve);
    this.#book.add(call);
    return call;
  }

  /** Submitted calls finish first unless `force`, which ends them with `TP_ERR_CLOSED`. */
  async close(options: { force?: boolean } = {}): Promise<void> {
    this.#isClosed = true;
    if (options.force) {
      for (const call of this.#book.inOrder()) {
        this.#settle(call, { kind: "error", code: "TP_ERR_CLOSED", message: outcomeTexts.stoppedByForce(call.request.tool.name) });
      }
    }
    // The book, not the threads: a forced end leaves threads running calls whose outcome is given.
    await this.#book.drained();
    await this.#host.destroy();
  }

  #submit(call: PoolCall): void {
    if (this.#queue.size === 0) {
      while (this.#idle.length > 0) if (this.#startOn(call, this.#idle.pop()!)) return;
    }
    this.#queue.push(call);
    this.#host.grow();
    this.#parts?.askToYield(call.session);
    this.#stage();
  }

  #pump(): void {
    while (this.#queue.size > 0 && this.#idle.length > 0) {
      const threadId = this.#idle.pop()!;
      const call = this.#queue.shift()!;
      // Refused: the thread is going away, and the call keeps its place and its session its turn.
      if (!this.#startOn(call, threadId)) this.#queue.unshift(call);
    }
  }

  /** False, the thread forgotten, if it may not take the call (retired, or going away). */
  #startOn(call: PoolCall, threadId: number): boolean {
    const thread = this.#threads.get(threadId);
    if (thread === undefined) return false;
    if (!this.#host.post(threadId, this.#taskOf(call, thread), call)) {
      this.#forgetThread(threadId);
      return false;
    }
    this.#started(call, thread, threadId);
    return true;
  }

  #taskOf(call: PoolCall, thread: PoolThread): WorkerTask {
    const { request, seq } = call;
    const task: WorkerTask = { seq, tool: call.tool.id, toolCallId: request.toolCallId, args: request.args };
    if (request.traceparent !== undefined) task.traceparent = request.traceparent;
    if (call.context !== undefined) task.context = call.context;
    // A thread not yet seen answering a call of the tool gets its definition (and may have to load its module).
    if (thread.knownTools?.has(call.tool.id) !== true) task.definition = call.tool.definition;
    call.isLoading = task.definition !== undefined;
    if (call.isAborted) task.aborted = call.abortMessage;
    return task;
  }

  #started(call: PoolCall, thread: PoolThread, threadId: number): void {
    thread.busySeq = call.seq;
    call.phase = "running";
    call.threadId = threadId;
    this.#timers.startTimeLimit(call);
    if (call.isAborted) this.#timers.startGrace(call);
    this.#book.start(call, threadId);
  }

  /** A thread freed before its reply is read takes the queue's next call (its reply then finds it busy). */
  #take(threadId: number): { task: WorkerTask; token: PoolCall } | undefined {
    const thread = this.#threads.get(threadId);
    if (thread === undefined || this.#signals.isRetired(threadId)) return undefined;
    const call = this.#queue.shift();
    if (call == null) return undefined;
    const task = this.#taskOf(call, thread);
    this.#started(call, thread, threadId);
    return { task, token: call };
  }

  /** Every busy thread finds a waiting call staged in Piscina's queue when it frees up. */
  #stage(): void {
    if (this.#host.stage === undefined || this.#idle.length > 0 || this.#queue.size === 0) return;
    this.#host.stage(Math.min(this.#queue.size, this.#threads.size));
  }

  #onReady(threadId: number): void {
    if (this.#threads.has(threadId)) return;
    this.#threads.set(threadId, { knownTools: undefined, busySeq: 0 });
    this.#idle.push(threadId);
    if (this.events.isObserved) this.events.emitThread({ type: "thread", change: "ready", pool: "", threadId, at: this.#clock.now() });
    this.#pump();
    this.#stage();
  }

  /** The thread is gone: it is no longer idle, and takes no call again. */
  #onLost(threadId: number): void {
    this.#forgetThread(threadId);
    const index = this.#idle.indexOf(threadId);
    if (index !== -1) this.#idle.splice(index, 1);
    // Piscina replaces only up to minThreads: a waiting call asks for the lost thread's place.
    if (this.#queue.size > 0) this.#host.grow();
  }

  /** What a late listener of `events` has missed. */
  #threadEntries(): PoolThreadEntry[] {
    return [...this.#threads].map(([threadId, { busySeq }]) => {
      const call = this.#book.get(busySeq);
      if (call?.startedAt === undefined) return { pool: "", threadId };
      const queueWaitMs = call.startedAt - call.enqueuedAt;
      return { pool: "", threadId, running: { type: "started", ...callEventBase(call.seq, call.request, call.startedAt), threadId, queueWaitMs } };
    });
  }

  #forgetThread(threadId: number): void {
    if (!this.#threads.delete(threadId) || !this.events.isObserved) return;
    this.events.emitThread({ type: "thread", change: "exited", pool: "", threadId, at: this.#clock.now() });
  }

  /** Waiting calls move to fresh threads, or end if threads keep failing to start. */
  #onStalled(): void {
    if (this.#isClosed && this.#book.size === 0) return;
    if (this.#queue.size === 0) {
      this.#isStalled = true;
      return;
    }
    const bootFailures = this.#host.bootFailures;
    if (bootFailures < maxBootFailures) {
      this.#host.restart();
      return;
    }
    for (const call of this.#queue.calls()) {
      this.#settle(call, {
        kind: "error",
        code: "TP_ERR_WORKER_CRASH",
        message: `Tool "${call.request.tool.name}" was not run: ${bootFailures} worker threads in a row failed to start`,
      });
    }
    this.#host.resetBootFailures();
    this.#isStalled = true;
  }

  #createParts(): SpreadParts {
    const settings = { book: this.#book, queue: this.#queue, admission: this.#admission, tools: this.#tools, signals: this.#signals };
    return new SpreadParts(
      { ...settings, timers: this.#timers, maxThreads: this.#options.maxThreads },
      {
        enqueue: (request, session, resolve) => this.#enqueue(request, session, resolve),
        submit: (call) => this.#submit(call),
        abort: (call) => this.#abort(call),
        settle: (call, outcome) => this.#settle(call, outcome),
        spareThreads: () => (this.#isStalled ? 0 : Math.max(0, this.#idle.length - this.#queue.size)),
        isClosed: () => this.#isClosed,
        send: (threadId, reply) => this.#host.send(threadId, reply),
      },
    );
  }

  /** Whether `run` would refuse a call now: every thread busy and `maxQueue` calls waiting. */
  isQueueFull(): boolean {
    const { maxQueue, maxThreads } = this.#options;
    if (maxQueue === undefined) return false;
    const freeThreads = maxThreads - this.#book.running;
    return this.#book.queued + 1 - freeThreads > maxQueue;
  }

  #abort(call: PoolCall): void {
    if (call.isAborted || call.phase === "settled") return;
    call.isAborted = true;
    call.abortMessage = abortMessageOf(call.seq, call.request.signal?.reason);
    if (call.phase === "running") this.#host.send(call.threadId, call.abortMessage);
    this.#signals.abort(call.seq);
    if (call.phase === "running") this.#timers.startGrace(call);
    this.#parts?.onCallAborted(call.seq);
  }

  #onLoaded(seq: number): void {
    const call = this.#book.get(seq);
    if (call === undefined || !call.isLoading) return;
    call.isLoading = false;
    this.#timers.restartGrace(call);
  }

  #onExpired(call: PoolCall, deadline: Deadline): void {
    if (deadline === "reply-lost") {
      if (call.phase !== "finished") return;
      call.killReason = "reply-lost";
      this.#settle(call, this.#classifyFailure(call, undefined));
      this.#host.terminate(call.threadId);
    } else if (deadline !== "preempted" || this.#parts?.shouldPreempt(call) === true) {
      this.#terminate(call, deadline);
    }
  }

  /** Settled before its thread dies: one blocked in native code may take long to, or never. */
  #terminate(call: PoolCall, reason: "timeout" | "aborted" | "preempted"): void {
    if (call.phase !== "running") return;
    // The tool may have finished with its reply on the way: the worker swaps
    // its end mark in before posting it, and whichever side swaps first decides.
    if (this.#signals.hasFinished(call.threadId, call.seq)) {
      call.phase = "finished";
      this.#timers.awaitReply(call);
      return;
    }
    call.killReason = reason;
    this.#settle(call, this.#classifyFailure(call, undefined));
    this.#host.terminate(call.threadId);
  }

  #onUpdate(seq: number, partial: unknown): void {
    const call = this.#book.get(seq);
    if (call === undefined || call.phase === "settled") return;
    call.updatesSeen += 1;
    // Lets the worker send more: it holds partials back while too many are untaken.
    this.#signals.tookUpdates(seq, call.updatesSeen);
    call.request.onUpdate?.(partial as AgentToolResult<unknown>);
    if (call.phase === "replied" && call.updatesSeen >= call.reply!.updates) this.#settle(call, outcomeOf(call.reply!));
  }

  #onReply(call: PoolCall, reply: WorkerReply): void {
    const { threadId } = call;
    if (reply.retiredThreadId !== undefined) this.#host.terminate(reply.retiredThreadId);
    const thread = this.#threads.get(threadId);
    if (thread !== undefined) {
      // The thread takes its next call before this outcome goes out: it never waits on the main thread.
      if (reply.undelivered === undefined) (thread.knownTools ??= new Set()).add(call.tool.id);
      if (thread.busySeq === call.seq) {
        thread.busySeq = 0;
        if (reply.retiredThreadId !== threadId) {
          this.#idle.push(threadId);
          this.#pump();
        }
      }
    }
    this.#stage();
    if (call.phase === "settled") return;
    call.runMs = reply.runMs;
    // Partials travel on another port than the reply: wait for the last one.
    if (call.updatesSeen >= reply.updates) this.#settle(call, outcomeOf(reply));
    else {
      call.phase = "replied";
      call.reply = reply;
      // Its thread may run another call already: nothing of this one may terminate it.
      this.#timers.clear(call);
    }
  }

  #onFailed(call: PoolCall, threadId: number, error: unknown): void {
    this.#onLost(threadId);
    this.#settle(call, this.#classifyFailure(call, error));
  }

  #classifyFailure(call: PoolCall, error: unknown): WorkerCallOutcome {
    return classifyFailure(call.request.tool, error, {
      killReason: call.killReason,
      abortGraceMs: this.#options.abortGraceMs,
      loadGraceMs: call.isLoading ? toolLoadGraceMs : undefined,
      replyWaitMs: this.#timers.replyWaitMs,
      isClosed: this.#isClosed,
    });
  }

  #settle(call: PoolCall, outcome: WorkerCallOutcome): void {
    if (call.phase === "settled") return;
    const hasRun = call.phase !== "waiting";
    call.phase = "settled";
    this.#parts?.onCallEnded(call.seq);
    let wasParked = false;
    if (!hasRun) {
      wasParked = this.#admission?.unpark(call) === true;
      if (!wasParked) this.#queue.take(call);
    }
    this.#timers.clear(call);
    if (this.#admission !== undefined && !wasParked) {
      // The session's next parked call takes the place this one frees.
      const next = this.#admission.release(call.session);
      if (next !== undefined) this.#submit(next);
    }
    const timing = this.#book.timing(call);
    if (call.startedAt !== undefined) this.#busy.addRun(call.startedAt, timing.endedAt, timing.endedAt);
    if (hasRun) timing.threadId = call.threadId;
    if (call.runMs !== undefined) timing.runMs = call.runMs;
    // Every outcome reaching here is a fresh object of this call's.
    outcome.timing = timing;
    this.#book.end(call, outcome, timing);
    call.resolve(outcome);
  }
}
