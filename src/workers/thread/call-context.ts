/** A call's `ctx` in the worker. @module */
import type { SpreadOutcome, WorkerToolContext } from "../../types.js";
import { flagSlotMask, type WorkerTask } from "../protocol.js";
import { boot } from "./boot-data.js";
import type { CallRun } from "./call-run.js";
import { takeCallSignal } from "./call-signal.js";
import { requestSpread } from "./spread-client.js";

/** The signal is made on first use (most calls never look); an earlier abort is not missed, the flag says so. */
export class CallContext implements WorkerToolContext<unknown> {
  readonly toolCallId: string;
  readonly onUpdate: WorkerToolContext<unknown>["onUpdate"];
  declare readonly traceparent?: string;
  declare readonly context?: unknown;
  readonly #seq: number;
  readonly #run: CallRun;
  #signal: AbortSignal | undefined;

  constructor(task: WorkerTask, run: CallRun) {
    this.toolCallId = task.toolCallId;
    this.onUpdate = run.onUpdate;
    this.#seq = task.seq;
    this.#run = run;
    if (task.traceparent !== undefined) (this as { traceparent?: string }).traceparent = task.traceparent;
    if (task.context !== undefined) (this as { context?: unknown }).context = task.context;
  }

  get signal(): AbortSignal {
    return (this.#signal ??= takeCallSignal(this.#seq));
  }

  /** One read of shared memory. */
  shouldYield(): boolean {
    return Atomics.load(boot.yieldFlags, this.#seq & flagSlotMask) === this.#seq;
  }

  /** Posted at once: parts start while the call goes on. */
  spread<TOutput = unknown>(exportName: string, inputs: readonly unknown[]): Promise<SpreadOutcome<TOutput>[]> {
    // A ctx kept past its call would ask for a call the pool no longer runs.
    if (this.#run.isFinished) return Promise.reject(new Error("ctx.spread: the call has ended"));
    return requestSpread(this.#seq, exportName, inputs) as Promise<SpreadOutcome<TOutput>[]>;
  }
}
