import { randomUUID } from "node:crypto";
import { BroadcastChannel } from "node:worker_threads";

import { Piscina } from "piscina";

import type { Clock } from "../clock.js";
import { createDeferred, type Deferred } from "../deferred.js";
import { describeValue, type ErrorCode } from "../errors.js";
import type { ResolvedPoolOptions } from "../options.js";
import type { AgentToolResult } from "../types.js";
import {
  flagSlotCount,
  flagSlotMask,
  isUpdateMessage,
  maxSeq,
  type WorkerBootData,
  type WorkerReply,
  type WorkerTask,
} from "./protocol.js";
import type { WorkerTool } from "./worker-tool.js";

/** One worker call as the coordinator hands it to the pool. */
export interface WorkerCallRequest {
  tool: WorkerTool;
  toolCallId: string;
  /** Validated arguments; structured-cloned to the worker. */
  args: unknown;
  /** The batch's signal: aborts `ctx.signal` in the worker, then terminates a call that ignores it. */
  signal?: AbortSignal | undefined;
  /** Receives each partial result on the main thread, in the order the tool sent them. */
  onUpdate?: ((partialResult: AgentToolResult<unknown>) => void) | undefined;
  /** The agent session the call belongs to: sessions take turns for the pool's capacity. */
  sessionKey?: string | undefined;
}

/**
 * What the coordinator needs of a pool: the local {@link WorkerPool} and the
 * fleet's remote pool both have it, so the coordinator never learns where a
 * call runs.
 */
export interface ToolCallPool {
  /** Runs one call. Resolves with its outcome; never rejects. */
  run(request: WorkerCallRequest): Promise<WorkerCallOutcome>;
  /** A snapshot of the pool's state. */
  readonly stats: PoolStats;
  /** Stops the pool; with `force`, calls still running end at once with `TP_ERR_CLOSED`. */
  close(options?: { force?: boolean }): Promise<void>;
}

/** How a worker call ended. Never a rejection: faults are outcomes too. */
export type WorkerCallOutcome =
  | { kind: "ok"; result: AgentToolResult<unknown> }
  | { kind: "error"; message: string; code?: ErrorCode };

/** Snapshot of the pool's state. */
export interface PoolStats {
  /** Worker threads alive. */
  threads: number;
  /** Calls running in a worker. */
  running: number;
  /** Calls waiting for a worker. */
  queued: number;
  /** Calls finished since the pool started. */
  completed: number;
  /** Share of the pool's capacity spent running tasks since it started (0..1). */
  utilization: number;
}

interface CallState {
  readonly seq: number;
  readonly request: WorkerCallRequest;
  readonly resolve: (outcome: WorkerCallOutcome) => void;
  /** Present when the call may have to be terminated (it has a time limit or an abort signal). */
  readonly kill: AbortController | undefined;
  killReason: "timeout" | "aborted" | undefined;
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

const workerEntryUrl = new URL("./worker-entry.js", import.meta.url);

/** Piscina's run options of a call that can never be terminated: one object for all. */
const noRunOptions = Object.freeze({});

/**
 * The Piscina pool under a runtime, with what Piscina lacks for tool calls:
 * partial results while a call runs, cooperative abort then termination after
 * a grace period, a time limit counted from the call's start, a queue limit
 * that answers at once, and every fault turned into an outcome.
 *
 * Each worker runs one call at a time (`concurrentTasksPerWorker: 1`), because
 * terminating a worker must never take an innocent neighbour down with it.
 */
export class WorkerPool implements ToolCallPool {
  readonly #options: ResolvedPoolOptions;
  readonly #clock: Clock;
  readonly #piscina: Piscina<WorkerTask, WorkerReply>;
  readonly #calls = new Map<number, CallState>();
  readonly #abortFlags = new Int32Array(new SharedArrayBuffer(flagSlotCount * Int32Array.BYTES_PER_ELEMENT));
  readonly #retireFlags = new Int32Array(new SharedArrayBuffer(flagSlotCount * Int32Array.BYTES_PER_ELEMENT));
  readonly #control: BroadcastChannel;
  readonly #onPoolError: (error: unknown) => void;
  #seq = 0;
  #queued = 0;
  #isClosed = false;
  /** Resolved when the last call settles after close() began. */
  #drained: Deferred<void> | undefined;
  #destroyed: Promise<void> | undefined;

  constructor(options: ResolvedPoolOptions, clock: Clock, onPoolError: (error: unknown) => void) {
    this.#options = options;
    this.#clock = clock;
    this.#onPoolError = onPoolError;
    const controlChannel = `toolpool:${randomUUID()}`;
    this.#control = new BroadcastChannel(controlChannel);
    this.#control.unref();
    const workerData: WorkerBootData = {
      abortFlags: this.#abortFlags,
      controlChannel,
      retireFlags: this.#retireFlags,
      leftoverGraceMs: options.leftoverGraceMs,
    };
    this.#piscina = new Piscina<WorkerTask, WorkerReply>({
      filename: workerEntryUrl.href,
      minThreads: options.minThreads,
      maxThreads: options.maxThreads,
      idleTimeout: options.idleTimeout,
      concurrentTasksPerWorker: 1,
      workerData,
      ...(options.resourceLimits === undefined ? {} : { resourceLimits: { ...options.resourceLimits } }),
      ...(options.env === undefined ? {} : { env: { ...options.env } }),
      // The balancer is the one place that sees a call leave the queue for a
      // worker: that moment starts its time limit. Piscina has no "task
      // started" event (and `AbortSignal.timeout` would count queue time).
      loadBalancer: (task, workers) => {
        for (const worker of workers) {
          if (worker.currentUsage === 0 && !this.#isRetired(worker.id)) {
            this.#onDispatch((task as unknown as Record<symbol, number>)[Piscina.queueOptionsSymbol]);
            return worker;
          }
        }
        return null;
      },
    });
    this.#piscina.on("message", (message: unknown) => {
      if (isUpdateMessage(message)) this.#onUpdate(message.seq, message.partial);
    });
    // Without a listener, a worker failing while idle would take the host down.
    this.#piscina.on("error", (error: unknown) => this.#onPoolError(error));
  }

  /** The pool's resolved options. */
  get options(): ResolvedPoolOptions {
    return this.#options;
  }

  /** A snapshot of threads, running and queued calls. */
  get stats(): PoolStats {
    return {
      threads: this.#piscina.threads.length,
      running: this.#calls.size - this.#queued,
      queued: this.#queued,
      completed: this.#piscina.completed,
      utilization: this.#piscina.utilization,
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
    const seq = this.#nextSeq();
    const isKillable = request.tool.timeoutMs !== undefined || request.signal !== undefined;
    return new Promise<WorkerCallOutcome>((resolve) => {
      const call: CallState = {
        seq,
        request,
        resolve,
        kill: isKillable ? new AbortController() : undefined,
        killReason: undefined,
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
      const task: WorkerTask & { [key: symbol]: number } = {
        seq,
        moduleUrl: request.tool.moduleUrl,
        exportName: request.tool.exportName,
        toolName,
        toolCallId: request.toolCallId,
        args: request.args,
        maxResultBytes: request.tool.maxResultBytes ?? this.#options.maxResultBytes,
        // Symbol-keyed, so it stays on this thread: the balancer reads it.
        [Piscina.queueOptionsSymbol]: seq,
      };
      const signal = request.signal;
      if (signal !== undefined) {
        if (signal.aborted) this.#abort(call);
        else {
          call.onAbort = () => this.#abort(call);
          signal.addEventListener("abort", call.onAbort, { once: true });
        }
      }
      this.#piscina.run(task, call.kill === undefined ? noRunOptions : { signal: call.kill.signal }).then(
        (reply) => this.#onReply(call, reply),
        (error: unknown) => this.#settle(call, this.#classifyFailure(call, error)),
      );
    });
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
    this.#destroyed ??= this.#piscina.destroy().finally(() => this.#control.close());
    await this.#destroyed;
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

  #onDispatch(seq: number | undefined): void {
    const call = seq === undefined ? undefined : this.#calls.get(seq);
    if (call === undefined || call.isDispatched) return;
    call.isDispatched = true;
    this.#queued -= 1;
    const { timeoutMs } = call.request.tool;
    if (timeoutMs !== undefined) {
      call.timeoutTimer = this.#clock.setTimeout(() => this.#terminate(call, "timeout"), timeoutMs);
    }
    if (call.isAborted) this.#startGracePeriod(call);
  }

  #abort(call: CallState): void {
    if (call.isAborted || call.isSettled) return;
    call.isAborted = true;
    Atomics.store(this.#abortFlags, call.seq & flagSlotMask, call.seq);
    this.#control.postMessage({ abort: call.seq });
    if (call.isDispatched) this.#startGracePeriod(call);
  }

  #startGracePeriod(call: CallState): void {
    call.graceTimer ??= this.#clock.setTimeout(() => this.#terminate(call, "aborted"), this.#options.abortGraceMs);
  }

  #terminate(call: CallState, reason: "timeout" | "aborted"): void {
    if (call.isSettled || call.kill === undefined) return;
    call.killReason = reason;
    // Piscina terminates the worker running an aborted task and replaces it.
    call.kill.abort();
  }

  #onUpdate(seq: number, partial: unknown): void {
    const call = this.#calls.get(seq);
    if (call === undefined || call.isSettled) return;
    call.updatesSeen += 1;
    call.request.onUpdate?.(partial as AgentToolResult<unknown>);
    if (call.reply !== undefined && call.updatesSeen >= call.reply.updates) this.#settle(call, toOutcome(call.reply));
  }

  #onReply(call: CallState, reply: WorkerReply): void {
    if (reply.retiredThreadId !== undefined) this.#retire(reply.retiredThreadId);
    if (call.isSettled) return;
    // Partials travel on another port than the reply: wait for the last one.
    if (call.updatesSeen >= reply.updates) this.#settle(call, toOutcome(reply));
    else call.reply = reply;
  }

  #isRetired(threadId: number): boolean {
    return Atomics.load(this.#retireFlags, threadId & flagSlotMask) === threadId;
  }

  /**
   * Terminates a worker whose call left work behind. The worker flagged itself
   * before replying, so the balancer has not given it another call; Piscina
   * sees the exit and starts a replacement.
   */
  #retire(threadId: number): void {
    const worker = this.#piscina.threads.find((thread) => thread.threadId === threadId);
    void worker?.terminate();
  }

  #classifyFailure(call: CallState, error: unknown): WorkerCallOutcome {
    const name = call.request.tool.name;
    if (call.killReason === "timeout") {
      return {
        kind: "error",
        code: "TP_ERR_TIMEOUT",
        message: `Tool "${name}" timed out after ${call.request.tool.timeoutMs} ms; its worker was terminated`,
      };
    }
    if (call.killReason === "aborted") {
      return {
        kind: "error",
        code: "TP_ERR_ABORTED",
        message: `Tool "${name}" did not stop within ${this.#options.abortGraceMs} ms of the abort; its worker was terminated`,
      };
    }
    const code = (error as { code?: unknown } | null)?.code;
    const message = error instanceof Error ? error.message : "";
    if (code === "ERR_WORKER_OUT_OF_MEMORY") {
      return {
        kind: "error",
        code: "TP_ERR_OUT_OF_MEMORY",
        message: `Tool "${name}" ran out of memory: its worker exceeded the JS heap limit and was terminated`,
      };
    }
    // Piscina reports a worker's exit only in this message; it has no code.
    const exit = /^worker exited with code: (-?\d+)$/.exec(message);
    if (exit !== null) {
      return { kind: "error", code: "TP_ERR_WORKER_EXIT", message: `Tool "${name}" ended its worker with exit code ${exit[1]}` };
    }
    if ((error as { name?: unknown } | null)?.name === "DataCloneError") {
      return { kind: "error", code: "TP_ERR_RESULT_NOT_CLONEABLE", message: `Tool "${name}" returned a result that cannot be cloned across threads: ${message}` };
    }
    if (this.#isClosed) {
      return { kind: "error", code: "TP_ERR_CLOSED", message: `Tool "${name}" was stopped: the pool was closed` };
    }
    return {
      kind: "error",
      code: "TP_ERR_WORKER_CRASH",
      message: `Tool "${name}" crashed its worker: ${message || describeValue(error)}`,
    };
  }

  #settle(call: CallState, outcome: WorkerCallOutcome): void {
    if (call.isSettled) return;
    call.isSettled = true;
    if (!call.isDispatched) this.#queued -= 1;
    if (call.timeoutTimer !== undefined) this.#clock.clearTimeout(call.timeoutTimer);
    if (call.graceTimer !== undefined) this.#clock.clearTimeout(call.graceTimer);
    if (call.onAbort !== undefined) call.request.signal?.removeEventListener("abort", call.onAbort);
    this.#calls.delete(call.seq);
    if (this.#calls.size === 0) this.#drained?.resolve();
    call.resolve(outcome);
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
