/**
 * One call on a worker thread: its partial results (held back while the
 * pool is behind), its run time, and the reply built from its outcome, with
 * the checks a result must pass to cross back (clone, size) and the grace
 * its leftover work gets before the thread is retired.
 *
 * @module
 */
import { parentPort, threadId } from "node:worker_threads";

import { describeThrown, type ThrownErrorFields } from "../../errors.js";
import type { AgentToolResult, WorkerToolContext } from "../../types.js";
import { shareRepeatedStrings } from "../repeated-strings.js";
import {
  flagSlotMask,
  maxUpdatesInFlight,
  updateTag,
  type OkPair,
  type WorkerReply,
  type WorkerTask,
  type WorkerToolDefinition,
} from "../protocol.js";
import { boot } from "./boot-data.js";
import { endCallSignal } from "./call-signal.js";
import { inspectResult } from "./inspect-result.js";
import { moveToHost } from "./move-to-host.js";
import { dropSpreadsOf } from "./spread-client.js";

/** A tool this thread knows, by its number in the pool; `execute` once its module has loaded. */
export interface KnownTool extends WorkerToolDefinition {
  execute: ToolExecute | undefined;
}

export type ToolExecute = (args: unknown, ctx: WorkerToolContext<unknown>) => unknown;

export type ErrorOutcome = { kind: "error"; message: string; thrown?: ThrownErrorFields };

/** Resources pending at the end of the last call that left none behind. */
let resourceBaseline: number | undefined;

/**
 * What was pending before a call; anything more afterwards is work the call
 * left behind. Between calls the worker sleeps in Atomics.wait, so the count
 * at the end of the last call still holds.
 */
export function resourcesBeforeCall(): number {
  return (resourceBaseline ??= process.getActiveResourcesInfo().length);
}

/** A module's start-up work is not a call's leftover: the next call counts afresh. */
export function forgetResourceBaseline(): void {
  resourceBaseline = undefined;
}

/** One call on this thread: its partial results, run time and the reply built from its outcome. */
export class CallRun {
  readonly #task: WorkerTask;
  readonly #tool: KnownTool;
  readonly #resourcesBefore: number;
  readonly #startedAt = performance.now();
  #updates = 0;
  #unclonedUpdate: string | undefined;
  /** The latest partial held back while the pool has too many of this call's to take; see {@link maxUpdatesInFlight}. */
  #heldUpdate: AgentToolResult<unknown> | undefined;
  #isHoldingUpdate = false;
  #heldUpdateTimer: NodeJS.Timeout | undefined;
  /** Set once the outcome is in: the call's `ctx` no longer acts. */
  isFinished = false;

  constructor(task: WorkerTask, tool: KnownTool, resourcesBefore: number) {
    this.#task = task;
    this.#tool = tool;
    this.#resourcesBefore = resourcesBefore;
  }

  /**
   * The call's `ctx.onUpdate`: a function of its own, since tools may call it
   * detached. A partial sent once the tool has settled is dropped here, at
   * its source: it would cross on another port than the reply and could reach
   * the coordinator before it, and pi (1.6) emits no partial a tool sends
   * after its execute settled.
   */
  readonly onUpdate = (partialResult: AgentToolResult<unknown>): void => {
    if (this.isFinished) return;
    // The pool's count of this call's partials starts at zero (the slot may
    // hold another call's): set before the first partial can reach the pool.
    if (this.#updates === 0 && !this.#isHoldingUpdate) Atomics.store(boot.takenUpdates, this.#task.seq & flagSlotMask, 0);
    if (this.#isHoldingUpdate || this.#isPoolBehind()) {
      // Latest wins: a partial is a snapshot of progress, and the pool is
      // behind; only the newest is worth its memory.
      this.#heldUpdate = partialResult;
      this.#isHoldingUpdate = true;
      this.#heldUpdateTimer ??= setTimeout(() => this.#postHeldUpdate(), heldUpdatePollMs);
      return;
    }
    this.#post(partialResult);
  };

  #isPoolBehind(): boolean {
    return this.#updates - Atomics.load(boot.takenUpdates, this.#task.seq & flagSlotMask) >= maxUpdatesInFlight;
  }

  /** A method, not a field: the closure a timer needs is made only by a call that holds a partial back. */
  #postHeldUpdate(): void {
    this.#heldUpdateTimer = undefined;
    if (!this.#isHoldingUpdate || this.isFinished) return;
    if (this.#isPoolBehind()) {
      this.#heldUpdateTimer = setTimeout(() => this.#postHeldUpdate(), heldUpdatePollMs);
      return;
    }
    this.#postHeld();
  }

  #postHeld(): void {
    const partial = this.#heldUpdate!;
    this.#heldUpdate = undefined;
    this.#isHoldingUpdate = false;
    this.#post(partial);
  }

  #post(partialResult: AgentToolResult<unknown>): void {
    try {
      parentPort!.postMessage({ [updateTag]: true, seq: this.#task.seq, partial: partialResult });
      this.#updates += 1;
    } catch (error) {
      // onUpdate never throws into the tool (pi's does not either); the call
      // fails once the tool returns.
      this.#unclonedUpdate ??= describeThrown(error);
    }
  }

  /** The reply for the tool's outcome; a promise only when the call left work behind that needs a grace period. */
  finish(outcome: { kind: "ok"; result: unknown } | ErrorOutcome): unknown {
    const runMs = performance.now() - this.#startedAt;
    const task = this.#task;
    const { toolName, maxResultBytes } = this.#tool;
    if (this.#heldUpdateTimer !== undefined) clearTimeout(this.#heldUpdateTimer);
    // The newest progress is sent before the result, as the tool sent it before returning.
    if (this.#isHoldingUpdate) this.#postHeld();
    this.isFinished = true;
    markEnded(task.seq);
    endCallSignal(task.seq);
    dropSpreadsOf(task.seq);
    const updates = this.#updates;
    let reply: WorkerReply;
    let transferables: ArrayBuffer[] = [];
    if (outcome.kind !== "ok") {
      reply = { ...outcome, updates, runMs };
    } else if (this.#unclonedUpdate !== undefined) {
      reply = fault(
        "TP_ERR_RESULT_NOT_CLONEABLE",
        `Tool "${toolName}" sent a partial result that cannot be cloned across threads: ${this.#unclonedUpdate}`,
        updates,
        runMs,
      );
    } else {
      const inspection = inspectResult(outcome.result, maxResultBytes);
      if (inspection.uncloneable !== undefined) {
        reply = fault(
          "TP_ERR_RESULT_NOT_CLONEABLE",
          `Tool "${toolName}" returned a result that cannot be cloned across threads: ${inspection.uncloneable}`,
          updates,
          runMs,
        );
      } else if (inspection.isTooLarge) {
        reply = fault(
          "TP_ERR_RESULT_TOO_LARGE",
          `Tool "${toolName}" returned ${inspection.bytes} bytes, more than maxResultBytes (${maxResultBytes})`,
          updates,
          runMs,
        );
      } else {
        reply = { kind: "ok", result: outcome.result, updates, runMs };
        transferables = inspection.transferables;
        const shared = inspection.longStrings > 1 ? shareRepeatedStrings(outcome.result) : undefined;
        if (shared !== undefined) reply = { ...reply, result: shared.result, repeats: shared.repeats };
      }
    }
    const resourcesAfter = process.getActiveResourcesInfo().length;
    if (resourcesAfter <= this.#resourcesBefore) {
      resourceBaseline = resourcesAfter;
      if (reply.kind === "ok" && updates === 0 && reply.repeats === undefined) {
        return withTransferables([reply.result, runMs] satisfies OkPair, transferables);
      }
      return withTransferables(reply, transferables);
    }
    return leftoverWorkSettles(this.#resourcesBefore).then((settled) => {
      if (settled) resourceBaseline = undefined;
      else {
        // The worker must not serve another call: the leftover work would run, and
        // could throw, during an unrelated call. The pool frees a thread only on its reply.
        reply.retiredThreadId = threadId;
      }
      return withTransferables(reply, transferables);
    });
  }
}

/** The reply as Piscina posts it: large buffers are moved, not copied. */
function withTransferables(reply: WorkerReply | OkPair, transferables: ArrayBuffer[]): unknown {
  if (transferables.length === 0) return reply;
  return moveToHost(reply, transferables);
}

/**
 * Tells the pool the tool has finished and its reply follows, before it is
 * posted: a deadline that fires now (or fired behind a busy main thread)
 * waits for the reply instead of reporting a finished call as timed out. If
 * the pool swapped first, this thread is being terminated; nothing to do.
 */
export function markEnded(seq: number): void {
  Atomics.exchange(boot.endFlags, threadId & flagSlotMask, seq);
}

/** How often a held-back partial checks whether the pool has caught up. */
const heldUpdatePollMs = 5;

function fault(code: "TP_ERR_RESULT_NOT_CLONEABLE" | "TP_ERR_RESULT_TOO_LARGE", message: string, updates: number, runMs: number): WorkerReply {
  return { kind: "fault", code, message, updates, runMs };
}

/**
 * Gives a call's leftover work (un-awaited timers, I/O) `leftoverGraceMs` to
 * finish, so that fire-and-forget work does not cost a worker each time. An
 * uncaught error meanwhile crashes the worker while the call is still in
 * flight, so it is charged to the call it belongs to.
 */
async function leftoverWorkSettles(resourcesBefore: number): Promise<boolean> {
  const deadline = performance.now() + boot.leftoverGraceMs;
  while (performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    // The timer that woke us is gone by now, so the counts compare directly.
    if (process.getActiveResourcesInfo().length <= resourcesBefore) return true;
  }
  return false;
}
