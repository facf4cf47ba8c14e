/**
 * The worker pool: a facade over its parts (Piscina instances, thread
 * records, session admission, tool numbering, shared-memory signals, spread
 * parts), owning the call lifecycle.
 *
 * Longer than the house's ~400 lines: a call's phases (waiting, running,
 * finished, replied, settled) and their timers are one state machine, kept
 * in one class so that every transition is read in one place.
 *
 * @module
 */
import type { Worker } from "node:worker_threads";

import { Piscina } from "piscina";

import type { Clock } from "../clock.js";
import { createDeferred, type Deferred } from "../deferred.js";
import { outcomeTexts } from "../errors.js";
import type { ResolvedPoolOptions } from "../options.js";
import type { AgentToolResult } from "../types.js";
import { callOf } from "./call-queue.js";
import { classifyFailure } from "./classify-failure.js";
import { SessionAdmission } from "./session-admission.js";
import { SpreadHost, type SpreadPart } from "./spread-host.js";
import { movedReason, PiscinaInstances, type PiscinaWorker } from "./piscina-instances.js";
import { createPoolCall, outcomeOf, type PoolCall } from "./pool-call.js";
import { AbortGroups } from "./abort-groups.js";
import { BusyWindow } from "./busy-window.js";
import { abortMessageOf, CallSignals } from "./call-signals.js";
import { ThreadRecords } from "./thread-records.js";
import { ToolNumbering } from "./tool-numbering.js";
import type { CallTiming } from "../contracts/call-timing.js";
import type { PoolDiagnosis, PoolStats, ToolCallPool, WorkerCallOutcome, WorkerCallRequest } from "../contracts/pool-contract.js";
import { isBootMessage, isSpreadRequest, isUpdateMessage, maxSeq, type WorkerReply, type WorkerTask } from "./protocol.js";
import { sweepThreadProcesses } from "../tools/coding/process-tree.js";

/** Piscina's run options: one frozen object for all calls, since termination is the pool's own. */
const noRunOptions = Object.freeze({});

/** The one session of every call when `scheduling` is `"fifo"`. */
const fifoSession = Symbol("fifo");

/** Workers lost in a row before they finished starting, after which waiting calls fail instead of waiting for a thread. */
const maxBootFailures = 5;

/** Beyond a call's leftover grace, how long the reply of a finished call may take to be read. */
const replyMarginMs = 5_000;

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
 * Threads are kept up whatever is lost ({@link PiscinaInstances}), waiting
 * calls moving to a fresh Piscina instance when Piscina will not replace a
 * lost worker. If workers keep failing to start, waiting calls end with
 * `TP_ERR_WORKER_CRASH` rather than wait.
 *
 * The queue is the pool's own `CallQueue` (`call-queue.ts`), plugged into Piscina, and
 * termination is the pool's own (`worker.terminate()`), not Piscina's abort
 * signal: a task with a signal would go to Piscina's private skip queue, out
 * of the pool's reach.
 */
export class WorkerPool implements ToolCallPool {
  readonly #options: ResolvedPoolOptions;
  readonly #clock: Clock;
  readonly #instances: PiscinaInstances;
  readonly #calls = new Map<number, PoolCall>();
  readonly #signals = new CallSignals();
  readonly #onPoolError: (error: unknown) => void;
  readonly #threads = new ThreadRecords();
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
  /** Resolved when the last call settles after close() began. */
  #drained: Deferred<void> | undefined;

  constructor(options: ResolvedPoolOptions, clock: Clock, onPoolError: (error: unknown) => void) {
    this.#options = options;
    this.#clock = clock;
    this.#busy = new BusyWindow(clock.now());
    this.#onPoolError = onPoolError;
    this.#tools = new ToolNumbering(options);
    this.#admission = options.maxRunningPerSession === undefined ? undefined : new SessionAdmission(options.maxRunningPerSession);
    this.#instances = new PiscinaInstances(options, clock, this.#threads, this.#signals.bootData(options.leftoverGraceMs), {
      dispatch: (task, worker) => {
        if (this.#signals.isRetired(worker.id)) return false;
        this.#onDispatch(callOf(task) as PoolCall, worker);
        return true;
      },
      message: (message) => {
        if (isUpdateMessage(message)) this.#onUpdate(message.seq, message.partial);
        else if (isBootMessage(message)) this.#instances.onBoot(message.threadId);
        else if (isSpreadRequest(message)) (this.#spread ??= this.#createSpreadHost()).onRequest(message);
      },
      error: (error) => this.#onPoolError(error),
      threadLost: (threadId) => this.#spread?.onThreadLost(threadId),
      latched: () => this.#repair(),
    });
  }

  /** The pool's resolved options. */
  get options(): ResolvedPoolOptions {
    return this.#options;
  }

  /** A snapshot of threads, running and queued calls. */
  get stats(): PoolStats {
    let threads = 0;
    for (const instance of this.#instances.all) threads += instance.piscina.threads.length;
    return {
      threads,
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
    const queue = this.#instances.current.queue;
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

  /** The live threads of every Piscina instance, for supervision (and tests that kill one from outside). */
  get workers(): Worker[] {
    return this.#instances.all.flatMap((instance) => instance.piscina.threads);
  }

  /** The inner state: Piscina instances, threads and every call not yet settled. */
  diagnose(): PoolDiagnosis {
    return {
      ...this.#instances.describe(),
      calls: [...this.#calls.values()].map((call) => ({
        tool: call.request.tool.name,
        toolCallId: call.request.toolCallId,
        state: call.phase === "waiting" ? "waiting" : "running",
        ...(call.phase === "waiting" ? {} : { threadId: call.threadId }),
        isAborted: call.isAborted,
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
    // A latched instance would not keep its threads up: start afresh first.
    if (this.#instances.current.isLatched) this.#replaceInstance();
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
    const call = createPoolCall(seq, request, this.#tools.toolOf(request.tool), session, this.#instances.current, this.#clock.now(), resolve);
    this.#calls.set(seq, call);
    this.#queued += 1;
    if (request.signal !== undefined) this.#abortGroups.add(request.signal, call);
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
          message: outcomeTexts.stoppedByForce(call.request.tool.name),
        });
      }
    }
    // Piscina's own close() waits for tasks through events that a forced
    // destroy() never sends, so the drain is tracked here, on our own calls.
    if (this.#calls.size > 0) await (this.#drained ??= createDeferred()).promise;
    try {
      await this.#instances.destroy();
    } finally {
      this.#signals.close();
      this.#spread?.close();
    }
  }

  #submit(call: PoolCall): void {
    const instance = call.instance;
    const { request, seq } = call;
    const task: WorkerTask & { [key: symbol]: PoolCall } = {
      seq,
      tool: call.tool.id,
      toolCallId: request.toolCallId,
      args: request.args,
      // Symbol-keyed, so it stays on this thread: the queue and the balancer read it.
      [Piscina.queueOptionsSymbol]: call,
    };
    if (request.traceparent !== undefined) task.traceparent = request.traceparent;
    if (call.context !== undefined) task.context = call.context;
    call.task = task;
    instance.piscina.run(task, noRunOptions).then(
      (reply) => {
        if (call.instance === instance) this.#onReply(call, reply);
      },
      (error: unknown) => {
        // A thread that failed mid-call (a crash) leaves the processes its bash calls started: they
        // end with it. The file locks it held are freed when it exits (see PiscinaInstances).
        if (call.threadId !== 0) void sweepThreadProcesses(call.threadId);
        if (call.instance === instance) this.#settle(call, this.#classifyFailure(call, error));
      },
    );
  }

  /** Moves the calls waiting on a latched instance to a fresh one, or ends them if threads keep failing to start. */
  #repair(): void {
    const instance = this.#instances.current;
    if (this.#instances.isDestroying || !instance.isLatched || instance.queue.size === 0) return;
    const bootFailures = this.#instances.bootFailures;
    if (bootFailures >= maxBootFailures) {
      const waiting = instance.queue.calls() as PoolCall[];
      instance.queue.drain(movedReason);
      for (const call of waiting) {
        this.#settle(call, {
          kind: "error",
          code: "TP_ERR_WORKER_CRASH",
          message: `Tool "${call.request.tool.name}" was not run: ${bootFailures} worker threads in a row failed to start`,
        });
      }
      // The next call tries a fresh instance; until then none is started.
      this.#instances.resetBootFailures();
      return;
    }
    this.#replaceInstance();
  }

  /** Moves every waiting call to a fresh Piscina instance, in order. */
  #replaceInstance(): void {
    for (const call of this.#instances.replace() as PoolCall[]) if (call.phase !== "settled") this.#submit(call);
  }

  #createSpreadHost(): SpreadHost {
    return new SpreadHost(this.#signals.controlChannel, {
      isRunning: (seq, threadId) => {
        const call = this.#calls.get(seq);
        return (
          call !== undefined && (call.phase === "running" || call.phase === "finished") && (threadId === undefined || call.threadId === threadId)
        );
      },
      partSlots: (seq) => {
        const instance = this.#instances.current;
        if (instance.isLatched) return 0;
        // Usable threads not running a call, less what waits for one (parts not yet placed included).
        const idle = Math.max(0, instance.readyThreads - instance.running - instance.queue.size - this.#threads.terminating);
        if (this.#admission === undefined) return idle;
        // Parts run in the caller's session: they take places under its cap like its calls.
        return Math.min(idle, this.#admission.room(this.#calls.get(seq)?.session));
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
  #runPart(parent: PoolCall, exportName: string, input: unknown): SpreadPart {
    const tool = this.#tools.partTool(parent.tool, exportName);
    let call: PoolCall | undefined;
    const outcome = new Promise<WorkerCallOutcome>((resolve) => {
      call = this.#enqueue({ tool, toolCallId: parent.request.toolCallId, args: input }, parent.session, resolve);
    });
    const part = call!;
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

  #onDispatch(call: PoolCall, worker: PiscinaWorker): void {
    if (call.phase !== "waiting") return;
    call.phase = "running";
    call.threadId = worker.id;
    // Posted right after this returns: a thread not yet seen answering a call
    // of the tool gets its definition (again, if a reply is still on its way).
    if (!this.#threads.knows(worker.id, call.tool.id)) call.task!.definition = call.tool.definition;
    call.startedAt = this.#clock.now();
    call.instance.running += 1;
    this.#queued -= 1;
    const { timeoutMs } = call.request.tool;
    if (timeoutMs !== undefined) call.timeoutTimer = this.#clock.setTimeout(() => this.#terminate(call, "timeout"), timeoutMs);
    if (call.isAborted) {
      call.task!.aborted = call.abortMessage;
      this.#startGracePeriod(call);
    }
  }

  #abort(call: PoolCall): void {
    if (call.isAborted || call.phase === "settled") return;
    call.isAborted = true;
    call.abortMessage = abortMessageOf(call.seq, call.request.signal?.reason);
    this.#signals.abort(call.abortMessage);
    if (call.phase === "running") this.#startGracePeriod(call);
    if (this.#spread !== undefined) this.#spread.onCallAborted(call.seq);
  }

  #startGracePeriod(call: PoolCall): void {
    if (call.phase !== "running") return;
    call.graceTimer ??= this.#clock.setTimeout(() => this.#terminate(call, "aborted"), this.#options.abortGraceMs);
  }

  /**
   * Ends a call that overran its time limit or its abort grace: the outcome is
   * settled at once (a thread blocked in native code may take long to die, or
   * never), then its thread is terminated and Piscina replaces it.
   */
  #terminate(call: PoolCall, reason: "timeout" | "aborted"): void {
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
    this.#instances.terminateThread(call.instance, call.threadId);
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
      this.#instances.terminateThread(call.instance, call.threadId);
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
    // A reply is proof the thread started, whether or not its boot message came first.
    this.#instances.onBoot(call.threadId);
    // ...and that it knows the call's tool from now on.
    this.#threads.learned(call.threadId, call.tool.id);
    if (reply.retiredThreadId !== undefined) this.#instances.terminateThread(call.instance, reply.retiredThreadId);
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

  #classifyFailure(call: PoolCall, error: unknown): WorkerCallOutcome {
    return classifyFailure(call.request.tool, error, {
      killReason: call.killReason,
      abortGraceMs: this.#options.abortGraceMs,
      replyWaitMs: this.#replyWaitMs,
      isClosed: this.#isClosed,
    });
  }

  #settle(call: PoolCall, outcome: WorkerCallOutcome): void {
    if (call.phase === "settled") return;
    const hasRun = call.phase !== "waiting";
    call.phase = "settled";
    // A part of a spread call is not a call of the pool's users: not counted, not admitted.
    // A part of a spread call counts as a call of its own here, as it does in `running` and `diagnose()`.
    this.#completed += 1;
    if (this.#spread !== undefined) this.#spread.onCallEnded(call.seq);
    let wasParked = false;
    if (hasRun) this.#instances.onCallLeftThread(call.instance);
    else {
      this.#queued -= 1;
      // A waiting call ended early (closed by force): it must not run later.
      wasParked = this.#admission?.unpark(call) === true;
      if (!wasParked) call.instance.queue.take(call, endedReason);
    }
    this.#clearTimers(call);
    if (call.request.signal !== undefined) this.#abortGroups.delete(call.request.signal, call);
    this.#calls.delete(call.seq);
    if (this.#admission !== undefined && !wasParked) {
      // The session's next parked call takes the place this one frees.
      const next = this.#admission.release(call.session);
      if (next !== undefined) {
        next.instance = this.#instances.current;
        this.#submit(next);
      }
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
    call.resolve(outcome);
  }

  #clearTimers(call: PoolCall): void {
    if (call.timeoutTimer !== undefined) this.#clock.clearTimeout(call.timeoutTimer);
    if (call.graceTimer !== undefined) this.#clock.clearTimeout(call.graceTimer);
    call.timeoutTimer = undefined;
    call.graceTimer = undefined;
  }
}
