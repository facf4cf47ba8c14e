/**
 * The worker pool: a facade over its parts (the thread host, the call queue,
 * session admission, tool numbering, shared-memory signals, spread parts),
 * owning the call lifecycle and the scheduling.
 *
 * Longer than the house's ~400 lines: a call's phases (waiting, running,
 * finished, replied, settled) and their timers are one state machine, kept
 * in one class so that every transition is read in one place.
 *
 * @module
 */
import type { Worker } from "node:worker_threads";

import type { Clock } from "../clock.js";
import { createDeferred, type Deferred } from "../deferred.js";
import { outcomeTexts } from "../errors.js";
import type { ResolvedPoolOptions } from "../options.js";
import type { AgentToolResult } from "../types.js";
import { CallQueue } from "./call-queue.js";
import { CallTable } from "./call-table.js";
import { classifyFailure } from "./classify-failure.js";
import { SessionAdmission } from "./session-admission.js";
import { SpreadHost, type SpreadPart } from "./spread-host.js";
import { PiscinaHost } from "./piscina-host.js";
import { createPoolCall, outcomeOf, type PoolCall } from "./pool-call.js";
import { AbortGroups } from "./abort-groups.js";
import { BusyWindow } from "./busy-window.js";
import { abortMessageOf, CallSignals } from "./call-signals.js";
import { ToolNumbering } from "./tool-numbering.js";
import type { CallTiming } from "../contracts/call-timing.js";
import type { PoolDiagnosis, PoolStats, ToolCallPool, WorkerCallOutcome, WorkerCallRequest } from "../contracts/pool-contract.js";
import { isLoadedMessage, isSpreadRequest, isUpdateMessage, maxSeq, type WorkerBootData, type WorkerReply, type WorkerTask } from "./protocol.js";
import type { ThreadHost, ThreadHostEvents } from "./thread-host.js";
import { callEventBase, endedOutcomeOf, PoolEventSource, type PoolThreadEntry } from "../contracts/pool-events.js";

/** Makes the threads under a pool: the Piscina host, or a fake one in the pool's unit tests. */
type CreateThreadHost = (
  options: ResolvedPoolOptions,
  clock: Clock,
  workerData: WorkerBootData,
  events: ThreadHostEvents<PoolCall>,
) => ThreadHost<PoolCall>;

const createPiscinaHost: CreateThreadHost = (options, clock, workerData, events) => new PiscinaHost(options, clock, workerData, events);

/** A thread the pool may post to, as the pool sees it. */
interface PoolThread {
  /** The tools it has answered a call of: its later calls of them go without the definition. */
  knownTools: Set<number> | undefined;
  /** The call posted to it and not yet freed from it; 0 while it is idle. */
  busySeq: number;
}

/** The one session of every call when `scheduling` is `"fifo"`. */
const fifoSession = Symbol("fifo");

/** Workers lost in a row before they finished starting, after which waiting calls fail instead of waiting for a thread. */
const maxBootFailures = 5;

/** Beyond a call's leftover grace, how long the reply of a finished call may take to be read. */
const replyMarginMs = 5_000;

/**
 * How long an aborted call's thread may take to load the call's tool before
 * its grace starts: the grace is the tool's time to stop, and a tool cannot
 * hear its abort (pi's tools answer at once) before its module has loaded,
 * which for a large module on a busy machine takes longer than the grace.
 * A module whose load hangs still ends the call, this much later.
 */
export const toolLoadGraceMs = 30_000;

/**
 * The worker pool under a runtime, with what a bare thread pool lacks for tool calls:
 * partial results while a call runs, cooperative abort then termination after
 * a grace period, a time limit counted from the call's start, a queue limit
 * that answers at once, and every fault turned into an outcome.
 *
 * Each worker runs one call at a time (`concurrentTasksPerWorker: 1`), because
 * terminating a worker must never take an innocent neighbour down with it.
 *
 * The threads belong to a {@link ThreadHost} (`piscina-host.ts`), which
 * keeps them up whatever is lost; the pool keeps the calls. It holds the
 * queue (`call-queue.ts`) and the idle threads, and posts a call to a
 * thread the moment both exist: the call starts then, with no round trip
 * through the host to learn it. If threads keep failing to start, waiting
 * calls end with `TP_ERR_WORKER_CRASH` rather than wait.
 */
export class WorkerPool implements ToolCallPool {
  readonly #options: ResolvedPoolOptions;
  readonly #clock: Clock;
  readonly #host: ThreadHost<PoolCall>;
  /** Every call not yet settled, by sequence number (not a `Map`: see call-table.ts). */
  readonly #calls = new CallTable<PoolCall>();
  readonly #queue: CallQueue<PoolCall>;
  /** The threads the host said ready and has not lost. */
  readonly #threads = new Map<number, PoolThread>();
  /** Threads with nothing posted to them, the one freed last at the end. */
  readonly #idle: number[] = [];
  readonly #signals = new CallSignals();
  readonly #onPoolError: (error: unknown) => void;
  /** The calls listening to each batch's signal, one listener per signal. */
  readonly #abortGroups = new AbortGroups<PoolCall>((call) => this.#abort(call));
  readonly #tools: ToolNumbering;
  /** Created on the first `ctx.spread` request: pools whose tools never spread keep none. */
  #spread: SpreadHost | undefined;
  /** With `maxRunningPerSession`. */
  readonly #admission: SessionAdmission<PoolCall> | undefined;
  #seq = 0;
  #queued = 0;
  #completed = 0;
  /** Thread time of the calls that ended lately, from reaching a thread to their end: `utilization`. */
  readonly #busy: BusyWindow;
  #isClosed = false;
  /** The host said it cannot keep threads up and no call waited then: the next call restarts it. */
  #isStalled = false;
  /** Resolved when the last call settles after close() began. */
  #drained: Deferred<void> | undefined;
  /** The pool's lifecycle events (calls `queued`, `started`, `ended`; threads `ready`, `exited`); made only while someone listens. */
  readonly events = new PoolEventSource(undefined, () => this.#threadEntries());

  /**
   * @param createHost makes the threads under the pool; the Piscina host
   *   unless a test hands a fake one.
   */
  constructor(options: ResolvedPoolOptions, clock: Clock, onPoolError: (error: unknown) => void, createHost: CreateThreadHost = createPiscinaHost) {
    this.#options = options;
    this.#clock = clock;
    this.#busy = new BusyWindow(clock.now());
    this.#onPoolError = onPoolError;
    this.#tools = new ToolNumbering(options);
    this.#queue = new CallQueue({ now: () => this.#clock.now() });
    this.#admission = options.maxRunningPerSession === undefined ? undefined : new SessionAdmission(options.maxRunningPerSession);
    this.#host = createHost(options, clock, this.#signals.bootData(options.leftoverGraceMs), {
      ready: (threadId) => this.#onReady(threadId),
      freed: (threadId) => this.#onFreed(threadId),
      replied: (call, reply) => this.#onReply(call, reply),
      failed: (call, threadId, error) => this.#onFailed(call, threadId, error),
      lost: (threadId) => this.#onLost(threadId),
      message: (message) => {
        if (isUpdateMessage(message)) this.#onUpdate(message.seq, message.partial);
        else if (isLoadedMessage(message)) this.#onLoaded(message.seq);
        else if (isSpreadRequest(message)) (this.#spread ??= this.#createSpreadHost()).onRequest(message);
      },
      error: (error) => this.#onPoolError(error),
      stalled: () => this.#onStalled(),
    });
  }

  /** The pool's resolved options. */
  get options(): ResolvedPoolOptions {
    return this.#options;
  }

  /** A snapshot of threads, running and queued calls. */
  get stats(): PoolStats {
    return {
      threads: this.#host.threadCount,
      running: this.#calls.size - this.#queued,
      queued: this.#queued,
      completed: this.#completed,
      utilization: this.#utilization(),
      ...this.#waitingSessions(),
    };
  }

  /**
   * The share of the pool's capacity over the last seconds (`maxThreads` ×
   * the window) that its threads spent on calls, running ones included. The
   * pool's own count: Piscina's figure is off by a factor of 1000 in 5.3.2
   * and spans the pool's whole life, and its timing histograms cost every
   * task (`recordTiming: false`).
   */
  #utilization(): number {
    const running: number[] = [];
    for (const call of this.#calls.values()) if (call.startedAt !== undefined) running.push(call.startedAt);
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

  /** The live threads, for supervision (and tests that kill one from outside). */
  get workers(): Worker[] {
    return this.#host.workers;
  }

  /** The inner state: the host's threads and every call not yet settled. */
  diagnose(): PoolDiagnosis {
    const host = this.#host.describe();
    const current = host.generations.at(-1);
    if (current !== undefined) current.queued = this.#queue.size;
    return {
      ...host,
      calls: this.#calls.inOrder().map((call) => ({
        tool: call.request.tool.name,
        toolCallId: call.request.toolCallId,
        state: call.phase === "waiting" ? "waiting" : "running",
        ...(call.phase === "waiting" ? {} : { threadId: call.threadId }),
        isAborted: call.isAborted,
        ...(call.phase === "running" && call.isLoading ? { isLoading: true } : {}),
      })),
    };
  }

  /** Runs one call on a worker. Resolves with its outcome; never rejects. */
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
    // Threads that could not be kept up: start afresh first.
    if (this.#isStalled) {
      this.#isStalled = false;
      this.#host.restart();
    }
    return new Promise<WorkerCallOutcome>((resolve) => {
      const call = this.#enqueue(request, this.#options.scheduling === "fifo" ? fifoSession : (request.session ?? Symbol("session")), resolve);
      call.context = context;
      if (this.#admission === undefined || this.#admission.admit(call)) this.#submit(call);
    });
  }

  /** A new call, registered and listening to its signal; not yet submitted. */
  #enqueue(request: WorkerCallRequest, session: unknown, resolve: (outcome: WorkerCallOutcome) => void): PoolCall {
    const seq = this.#nextSeq();
    // FIFO is one line that every call joins; fair, a line per session.
    const call = createPoolCall(seq, request, this.#tools.toolOf(request.tool), session, this.#clock.now(), resolve);
    this.#calls.add(call);
    this.#queued += 1;
    if (request.signal !== undefined) this.#abortGroups.add(request.signal, call);
    if (this.events.isObserved) this.events.emit({ type: "queued", ...callEventBase(call.seq, call.request, call.enqueuedAt) });
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
      for (const call of this.#calls.inOrder()) {
        this.#settle(call, {
          kind: "error",
          code: "TP_ERR_CLOSED",
          message: outcomeTexts.stoppedByForce(call.request.tool.name),
        });
      }
    }
    // The drain is tracked on the pool's own calls: a forced end leaves
    // threads still running calls whose outcome is already given.
    if (this.#calls.size > 0) await (this.#drained ??= createDeferred()).promise;
    await this.#host.destroy();
  }

  /** Starts a call on an idle thread if there is one and nothing waits before it; else queues it. */
  #submit(call: PoolCall): void {
    if (this.#queue.size === 0) {
      while (this.#idle.length > 0) if (this.#startOn(call, this.#idle.pop()!)) return;
    }
    this.#queue.push(call);
    // Every call that has to wait asks for a thread; the host starts one while below its maximum.
    this.#host.grow();
    if (this.#spread !== undefined && this.#spread.parts.size > 0) this.#askPartsToYield(call.session);
  }

  /**
   * A call of `session` waits for a thread: the running parts of other
   * sessions' spread calls are asked to give theirs back. A part still on
   * its thread `abortGraceMs` later (stuck in one step: a regular expression
   * that backtracks for ever cannot be interrupted) is preempted: its
   * thread is terminated and replaced, and the calling call does its work.
   */
  #askPartsToYield(session: unknown): void {
    for (const seq of this.#spread!.parts) {
      const part = this.#calls.get(seq);
      if (part === undefined || part.phase !== "running" || part.session === session) continue;
      this.#signals.askToYield(seq);
      part.preemptTimer ??= this.#clock.setTimeout(() => this.#preempt(part), this.#options.abortGraceMs);
    }
  }

  /** A part asked to yield has not: terminated while a call of another session still waits for a thread. */
  #preempt(part: PoolCall): void {
    part.preemptTimer = undefined;
    // An aborted part has its abort's own grace, whole, from the abort on.
    if (part.isAborted) return;
    const others = this.#queue.sessionsWaiting - (this.#queue.hasSession(part.session) ? 1 : 0);
    // No one else waits any more: the part keeps its thread (the next waiting call asks it again).
    if (others > 0) this.#terminate(part, "preempted");
  }

  /**
   * Threads that call `seq` may take for parts now: idle ones no waiting call
   * needs, within its session's fair share of the pool (its threads divided
   * evenly among the sessions with calls running or waiting), and under its
   * session's cap.
   */
  #partSlots(seq: number): number {
    if (this.#isStalled) return 0;
    const idle = Math.max(0, this.#idle.length - this.#queue.size);
    const session = this.#calls.get(seq)?.session;
    if (idle === 0) return 0;
    const sessions = new Set<unknown>([session]);
    let own = 0;
    for (const call of this.#calls.values()) {
      sessions.add(call.session);
      if (call.session === session && call.phase !== "waiting" && call.phase !== "settled") own += 1;
    }
    const share = Math.max(0, Math.ceil(this.#options.maxThreads / sessions.size) - own);
    const slots = Math.min(idle, share);
    if (this.#admission === undefined) return slots;
    // Parts run in the caller's session: they take places under its cap like its calls.
    return Math.min(slots, this.#admission.room(session));
  }

  /** Hands waiting calls to idle threads, in the queue's turn order. */
  #pump(): void {
    while (this.#queue.size > 0 && this.#idle.length > 0) {
      const threadId = this.#idle.pop()!;
      const call = this.#queue.shift()!;
      // Refused: the thread is going away, and the call keeps its place and its session its turn.
      if (!this.#startOn(call, threadId)) this.#queue.unshift(call);
    }
  }

  /**
   * Posts a waiting call to idle thread `threadId`: the call starts now, and
   * with it its time limit. Returns false, and forgets the thread, if the
   * thread may not take it (retired by its leftover work, or going away).
   */
  #startOn(call: PoolCall, threadId: number): boolean {
    const thread = this.#threads.get(threadId);
    if (thread === undefined) return false;
    const { request, seq } = call;
    const task: WorkerTask = { seq, tool: call.tool.id, toolCallId: request.toolCallId, args: request.args };
    if (request.traceparent !== undefined) task.traceparent = request.traceparent;
    if (call.context !== undefined) task.context = call.context;
    // A thread not yet seen answering a call of the tool gets its definition (and may have to load its module).
    if (thread.knownTools?.has(call.tool.id) !== true) task.definition = call.tool.definition;
    call.isLoading = task.definition !== undefined;
    if (call.isAborted) task.aborted = call.abortMessage;
    if (!this.#host.post(threadId, task, call)) {
      this.#forgetThread(threadId);
      return false;
    }
    thread.busySeq = seq;
    call.phase = "running";
    call.threadId = threadId;
    call.startedAt = this.#clock.now();
    this.#queued -= 1;
    const { timeoutMs } = request.tool;
    if (timeoutMs !== undefined) call.timeoutTimer = this.#clock.setTimeout(() => this.#terminate(call, "timeout"), timeoutMs);
    if (call.isAborted) this.#startGracePeriod(call);
    if (this.events.isObserved) {
      this.events.emit({
        type: "started",
        ...callEventBase(call.seq, call.request, call.startedAt),
        threadId,
        queueWaitMs: call.startedAt - call.enqueuedAt,
      });
    }
    return true;
  }

  #onReady(threadId: number): void {
    if (this.#threads.has(threadId)) return;
    this.#threads.set(threadId, { knownTools: undefined, busySeq: 0 });
    this.#idle.push(threadId);
    if (this.events.isObserved) this.events.emitThread({ type: "thread", change: "ready", pool: "", threadId, at: this.#clock.now() });
    this.#pump();
  }

  /** Thread `threadId` finished its call (its reply is on its way): it takes the next call at once. */
  #onFreed(threadId: number): void {
    const thread = this.#threads.get(threadId);
    if (thread === undefined || thread.busySeq === 0) return;
    thread.busySeq = 0;
    this.#idle.push(threadId);
    this.#pump();
  }

  #onLost(threadId: number): void {
    this.#forgetThread(threadId);
    const index = this.#idle.indexOf(threadId);
    if (index !== -1) this.#idle.splice(index, 1);
  }

  /** The threads that may take calls, each with the call it runs: what a late listener of `events` has missed. */
  #threadEntries(): PoolThreadEntry[] {
    return [...this.#threads].map(([threadId, { busySeq }]) => {
      const call = this.#calls.get(busySeq);
      if (call?.startedAt === undefined) return { pool: "", threadId };
      const queueWaitMs = call.startedAt - call.enqueuedAt;
      return { pool: "", threadId, running: { type: "started", ...callEventBase(call.seq, call.request, call.startedAt), threadId, queueWaitMs } };
    });
  }

  /** The pool posts nothing more to thread `threadId`: it is gone, or going. */
  #forgetThread(threadId: number): void {
    if (!this.#threads.delete(threadId) || !this.events.isObserved) return;
    this.events.emitThread({ type: "thread", change: "exited", pool: "", threadId, at: this.#clock.now() });
  }

  /**
   * The host cannot keep threads up. Calls waiting move to fresh threads,
   * or end if threads keep failing to start; with none waiting, the next
   * call starts fresh threads.
   */
  #onStalled(): void {
    if (this.#isClosed && this.#calls.size === 0) return;
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
    // The next call tries fresh threads; until then none is started.
    this.#host.resetBootFailures();
    this.#isStalled = true;
  }

  #createSpreadHost(): SpreadHost {
    return new SpreadHost({
      isRunning: (seq, threadId) => {
        const call = this.#calls.get(seq);
        return (
          call !== undefined && (call.phase === "running" || call.phase === "finished") && (threadId === undefined || call.threadId === threadId)
        );
      },
      partSlots: (seq) => this.#partSlots(seq),
      isClosed: () => this.#isClosed,
      runPart: (parentSeq, exportName, input) => this.#runPart(this.#calls.get(parentSeq)!, exportName, input),
      send: (threadId, reply) => this.#host.send(threadId, reply),
    });
  }

  /**
   * Runs one part of a spread call: `exportName` of the calling tool's module,
   * as a call of its own in the caller's session, submitted at once (parts
   * go to idle threads only, so no admission or queue limit applies).
   */
  #runPart(parent: PoolCall, exportName: string, input: unknown): SpreadPart {
    const tool = this.#tools.partTool(parent.tool, exportName);
    // A part of a capped call takes a slot of each of its caps, or does not run (a cap is full).
    const partCaps = parent.request.partCaps;
    const release = partCaps?.take();
    if (partCaps !== undefined && release === undefined) throw new Error("a cap of the call is full");
    let call: PoolCall | undefined;
    const outcome = new Promise<WorkerCallOutcome>((resolve) => {
      const { toolCallId, batchId, sessionKey } = parent.request;
      call = this.#enqueue({ tool, toolCallId, args: input, batchId, sessionKey }, parent.session, resolve);
    });
    const part = call!;
    if (release !== undefined) void outcome.then(release);
    // Counted under the session's cap (partSlots left room for it), released when it settles.
    this.#admission?.count(part.session);
    this.#submit(part);
    return {
      seq: part.seq,
      outcome,
      stop: () => {
        if (part.phase === "settled") return;
        if (part.phase !== "waiting") this.#abort(part);
        else
          this.#settle(part, {
            kind: "error",
            code: "TP_ERR_ABORTED",
            message: `${tool.name} was stopped before it ran: its call ended or was aborted`,
          });
      },
    };
  }

  #nextSeq(): number {
    this.#seq = this.#seq >= maxSeq ? 1 : this.#seq + 1;
    return this.#seq;
  }

  /** Whether a call handed to `run` now would be refused: every thread busy and `maxQueue` calls waiting. */
  isQueueFull(): boolean {
    const { maxQueue, maxThreads } = this.#options;
    if (maxQueue === undefined) return false;
    const freeThreads = maxThreads - (this.#calls.size - this.#queued);
    // The new call would have to wait, and maxQueue calls already do.
    return this.#queued + 1 - freeThreads > maxQueue;
  }

  #abort(call: PoolCall): void {
    if (call.isAborted || call.phase === "settled") return;
    call.isAborted = true;
    call.abortMessage = abortMessageOf(call.seq, call.request.signal?.reason);
    if (call.phase === "running") this.#host.send(call.threadId, call.abortMessage);
    this.#signals.abort(call.seq);
    if (call.phase === "running") this.#startGracePeriod(call);
    if (this.#spread !== undefined) this.#spread.onCallAborted(call.seq);
  }

  /** An aborted call's time to stop; on a thread still loading its tool, the load's allowance first (see {@link toolLoadGraceMs}). */
  #startGracePeriod(call: PoolCall): void {
    if (call.phase !== "running") return;
    const graceMs = this.#options.abortGraceMs + (call.isLoading ? toolLoadGraceMs : 0);
    call.graceTimer ??= this.#clock.setTimeout(() => this.#terminate(call, "aborted"), graceMs);
  }

  /** Call `seq`'s thread has its tool loaded: an abort's grace counts from now. */
  #onLoaded(seq: number): void {
    const call = this.#calls.get(seq);
    if (call === undefined || !call.isLoading) return;
    call.isLoading = false;
    if (!call.isAborted || call.phase !== "running" || call.graceTimer === undefined) return;
    this.#clock.clearTimeout(call.graceTimer);
    call.graceTimer = undefined;
    this.#startGracePeriod(call);
  }

  /**
   * Ends a call that overran its time limit or its abort grace: the outcome is
   * settled at once (a thread blocked in native code may take long to die, or
   * never), then its thread is terminated and the host replaces it.
   */
  #terminate(call: PoolCall, reason: "timeout" | "aborted" | "preempted"): void {
    if (call.phase !== "running") return;
    // The tool may have finished with its reply on the way: the timer fired
    // in the same turn, or late behind a busy main thread (timers run before
    // the messages that came meanwhile). The worker swapped its mark in
    // before posting the reply; whichever side swaps first decides.
    if (this.#signals.hasFinished(call.threadId, call.seq)) {
      this.#awaitReply(call);
      return;
    }
    call.killReason = reason;
    this.#settle(call, this.#classifyFailure(call, undefined));
    this.#host.terminate(call.threadId);
  }

  /**
   * Waits for the reply of a call whose tool finished: it comes once the
   * call's leftover work has had its grace. A thread blocked before posting
   * it (a busy loop in that leftover work) is terminated after the wait, and
   * the call reported as finished with its result lost, never as timed out.
   */
  #awaitReply(call: PoolCall): void {
    this.#clearTimers(call);
    call.phase = "finished";
    call.timeoutTimer = this.#clock.setTimeout(() => {
      if (call.phase !== "finished") return;
      call.killReason = "reply-lost";
      this.#settle(call, this.#classifyFailure(call, undefined));
      this.#host.terminate(call.threadId);
    }, this.#replyWaitMs);
  }

  /** How long a finished call's reply may take to arrive: its leftover work's grace, and a margin for a busy main thread. */
  get #replyWaitMs(): number {
    return this.#options.leftoverGraceMs + replyMarginMs;
  }

  #onUpdate(seq: number, partial: unknown): void {
    const call = this.#calls.get(seq);
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
      // It knows the call's tool from now on. Unless the host said so first,
      // it is free: it takes the next call before this one's outcome goes
      // out, so a thread never waits on the main thread's handling of a
      // result. (So a call's `ended` event may come after the `started` of
      // the next call on its thread.)
      (thread.knownTools ??= new Set()).add(call.tool.id);
      if (thread.busySeq === call.seq) {
        thread.busySeq = 0;
        if (reply.retiredThreadId !== threadId) {
          this.#idle.push(threadId);
          this.#pump();
        }
      }
    }
    if (call.phase === "settled") return;
    call.runMs = reply.runMs;
    // Partials travel on another port than the reply: wait for the last one.
    if (call.updatesSeen >= reply.updates) this.#settle(call, outcomeOf(reply));
    else {
      call.phase = "replied";
      call.reply = reply;
      // The call has left its thread, which may already run another call:
      // neither its time limit nor an abort may terminate that thread now.
      this.#clearTimers(call);
    }
  }

  /** The thread running `call` is gone: crashed, exited, or terminated by the pool. */
  #onFailed(call: PoolCall, threadId: number, error: unknown): void {
    this.#onLost(threadId);
    this.#settle(call, this.#classifyFailure(call, error));
  }

  #classifyFailure(call: PoolCall, error: unknown): WorkerCallOutcome {
    return classifyFailure(call.request.tool, error, {
      killReason: call.killReason,
      abortGraceMs: this.#options.abortGraceMs,
      loadGraceMs: call.isLoading ? toolLoadGraceMs : undefined,
      replyWaitMs: this.#replyWaitMs,
      isClosed: this.#isClosed,
    });
  }

  #settle(call: PoolCall, outcome: WorkerCallOutcome): void {
    if (call.phase === "settled") return;
    const hasRun = call.phase !== "waiting";
    call.phase = "settled";
    // A part of a spread call counts as a call of its own here, as it does in `running` and `diagnose()`.
    this.#completed += 1;
    if (this.#spread !== undefined) this.#spread.onCallEnded(call.seq);
    let wasParked = false;
    if (!hasRun) {
      this.#queued -= 1;
      // A waiting call ended early (closed by force): it must not run later.
      wasParked = this.#admission?.unpark(call) === true;
      if (!wasParked) this.#queue.take(call);
    }
    this.#clearTimers(call);
    if (call.request.signal !== undefined) this.#abortGroups.delete(call.request.signal, call);
    this.#calls.delete(call.seq);
    if (this.#admission !== undefined && !wasParked) {
      // The session's next parked call takes the place this one frees.
      const next = this.#admission.release(call.session);
      if (next !== undefined) this.#submit(next);
    }
    if (this.#calls.size === 0) this.#drained?.resolve();
    const timing: CallTiming = { submittedAt: call.enqueuedAt, endedAt: this.#clock.now() };
    if (call.startedAt !== undefined) {
      timing.startedAt = call.startedAt;
      this.#busy.addRun(call.startedAt, timing.endedAt, timing.endedAt);
    }
    if (hasRun) timing.threadId = call.threadId;
    if (call.runMs !== undefined) timing.runMs = call.runMs;
    // Every outcome reaching here is a fresh object of this call's.
    outcome.timing = timing;
    if (this.events.isObserved) {
      this.events.emit({
        type: "ended",
        ...callEventBase(call.seq, call.request, timing.endedAt),
        ...endedOutcomeOf(outcome),
        threadId: timing.threadId,
        timing,
      });
    }
    call.resolve(outcome);
  }

  #clearTimers(call: PoolCall): void {
    if (call.timeoutTimer !== undefined) this.#clock.clearTimeout(call.timeoutTimer);
    if (call.graceTimer !== undefined) this.#clock.clearTimeout(call.graceTimer);
    if (call.preemptTimer !== undefined) this.#clock.clearTimeout(call.preemptTimer);
    call.timeoutTimer = undefined;
    call.graceTimer = undefined;
    call.preemptTimer = undefined;
  }
}
