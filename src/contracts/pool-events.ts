/** Pool lifecycle events; a pool checks {@link PoolEventSource.isObserved} first, so nobody listening costs nothing. @module */
import type { ErrorCode } from "../errors.js";
import type { CallTiming } from "./call-timing.js";
import type { WorkerCallOutcome } from "./pool-contract.js";

export interface PoolCallEventBase {
  /** `"shared"`, `"pool:<name>"`, the name of a tool with its own pool, or `"fleet"`; set by the runtime. */
  pool: string;
  /** `pool` and `seq` together name one call from `queued` to `ended`. */
  seq: number;
  /** Absent for a call from `agentTools()`. */
  batchId: string | undefined;
  sessionKey: string | undefined;
  toolCallId: string;
  tool: string;
  at: number;
}

/** The event base of call `seq`; the runtime fills in `pool`. */
export function callEventBase(
  seq: number,
  request: { readonly batchId?: string; readonly sessionKey?: string; readonly toolCallId: string; readonly tool: { readonly name: string } },
  at: number,
): PoolCallEventBase {
  return { pool: "", seq, batchId: request.batchId, sessionKey: request.sessionKey, toolCallId: request.toolCallId, tool: request.tool.name, at };
}

/** An error with a code is a fault. */
export function endedOutcomeOf(outcome: WorkerCallOutcome): Pick<PoolCallEndedEvent, "outcome" | "code"> {
  if (outcome.kind === "ok") return { outcome: "ok", code: undefined };
  return { outcome: outcome.code === undefined ? "error" : "fault", code: outcome.code };
}

/** Waits for a thread (it may start in the same turn). */
export interface PoolCallQueuedEvent extends PoolCallEventBase {
  type: "queued";
}

/** Posted to a thread: its time limit starts now. A fleet's call has `node`, and `queueWaitMs` includes the Redis trips. */
export interface PoolCallStartedEvent extends PoolCallEventBase {
  type: "started";
  threadId: number | undefined;
  node?: string;
  queueWaitMs: number;
}

/** `"error"`: the tool's own error result; `"fault"`: what pi cannot have (crash, timeout, pool closed…), named by `code`. */
export interface PoolCallEndedEvent extends PoolCallEventBase {
  type: "ended";
  outcome: "ok" | "error" | "fault";
  code: ErrorCode | undefined;
  /** Absent for a call that never started, and for a fleet's call. */
  threadId: number | undefined;
  /** Absent for a local pool's call, and for a fleet's call that never started. */
  node?: string;
  timing: CallTiming;
}

export type PoolCallEvent = PoolCallQueuedEvent | PoolCallStartedEvent | PoolCallEndedEvent;

/** Must not throw: a throw is reported as a warning and the pool goes on. */
export type PoolCallListener = (event: PoolCallEvent) => void;

/** `"ready"`: the thread may take calls; `"exited"`: no more (it may come before the `ended` of the call it ran). */
export interface PoolThreadEvent {
  type: "thread";
  change: "ready" | "exited";
  pool: string;
  threadId: number;
  at: number;
}

/** Like {@link PoolCallListener}, must not throw. */
export type PoolThreadListener = (event: PoolThreadEvent) => void;

/** A thread that may take calls now. */
export interface PoolThreadEntry {
  pool: string;
  threadId: number;
  /** Its running call's `started` event; absent while idle. */
  running?: PoolCallStartedEvent;
}

/** A pool's own listeners, or the runtime's aggregate (`runtime.poolEvents`). */
export class PoolEventSource {
  readonly #listeners = new Set<PoolCallListener>();
  readonly #threadListeners = new Set<PoolThreadListener>();
  readonly #onObserved: ((isObserved: boolean) => void) | undefined;
  readonly #listThreads: (() => PoolThreadEntry[]) | undefined;

  /** @param onObserved called with `true` when the first listener of either kind comes, `false` when the last goes. */
  constructor(onObserved?: (isObserved: boolean) => void, listThreads?: () => PoolThreadEntry[]) {
    this.#onObserved = onObserved;
    this.#listThreads = listThreads;
  }

  get isObserved(): boolean {
    return this.#listeners.size + this.#threadListeners.size !== 0;
  }

  get listenerCount(): number {
    return this.#listeners.size + this.#threadListeners.size;
  }

  /** The threads `ready` and not `exited`, for a late listener: read it right after `onThread`, in the same turn. */
  threads(): PoolThreadEntry[] {
    return this.#listThreads?.() ?? [];
  }

  on(listener: PoolCallListener): void {
    if (this.#listeners.has(listener)) return;
    this.#listeners.add(listener);
    this.#observed(1);
  }

  off(listener: PoolCallListener): void {
    if (this.#listeners.delete(listener)) this.#observed(-1);
  }

  onThread(listener: PoolThreadListener): void {
    if (this.#threadListeners.has(listener)) return;
    this.#threadListeners.add(listener);
    this.#observed(1);
  }

  offThread(listener: PoolThreadListener): void {
    if (this.#threadListeners.delete(listener)) this.#observed(-1);
  }

  emit(event: PoolCallEvent): void {
    for (const listener of this.#listeners) deliver(listener, event);
  }

  emitThread(event: PoolThreadEvent): void {
    for (const listener of this.#threadListeners) deliver(listener, event);
  }

  #observed(change: 1 | -1): void {
    const count = this.listenerCount;
    if (change === 1 ? count === 1 : count === 0) this.#onObserved?.(change === 1);
  }
}

function deliver<E>(listener: (event: E) => void, event: E): void {
  try {
    listener(event);
  } catch (error) {
    process.emitWarning(`A toolpool pool event listener threw: ${error instanceof Error ? error.message : String(error)}`, "ToolpoolWarning");
  }
}
