/**
 * One call on a worker thread: its partials, its run time, and the reply
 * built from its outcome, checked to cross back (clone, size).
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

/** `execute` once its module has loaded. */
export interface KnownTool extends WorkerToolDefinition {
  execute: ToolExecute | undefined;
}

export type ToolExecute = (args: unknown, ctx: WorkerToolContext<unknown>) => unknown;

export type ErrorOutcome = { kind: "error"; message: string; thrown?: ThrownErrorFields };

let resourceBaseline: number | undefined;

/** Between calls the worker sleeps in Atomics.wait, so the count at the last call's end still holds. */
export function resourcesBeforeCall(): number {
  return (resourceBaseline ??= process.getActiveResourcesInfo().length);
}

export function forgetResourceBaseline(): void {
  resourceBaseline = undefined;
}

export class CallRun {
  readonly #task: WorkerTask;
  readonly #tool: KnownTool;
  readonly #resourcesBefore: number;
  readonly #startedAt = performance.now();
  #updates = 0;
  #unclonedUpdate: string | undefined;
  #heldUpdate: AgentToolResult<unknown> | undefined;
  #isHoldingUpdate = false;
  #heldUpdateTimer: NodeJS.Timeout | undefined;
  isFinished = false;

  constructor(task: WorkerTask, tool: KnownTool, resourcesBefore: number) {
    this.#task = task;
    this.#tool = tool;
    this.#resourcesBefore = resourcesBefore;
  }

  /** A field, since tools call it detached. A partial after the tool settled is dropped: pi emits none either. */
  readonly onUpdate = (partialResult: AgentToolResult<unknown>): void => {
    if (this.isFinished) return;
    // The slot may hold another call's count.
    if (this.#updates === 0 && !this.#isHoldingUpdate) Atomics.store(boot.takenUpdates, this.#task.seq & flagSlotMask, 0);
    if (this.#isHoldingUpdate || this.#isPoolBehind()) {
      // The pool is behind: only the newest snapshot of progress is worth its memory.
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
      // Never thrown into the tool (pi's does not either): the call fails once the tool returns.
      this.#unclonedUpdate ??= describeThrown(error);
    }
  }

  /** A promise only when the call left work behind. */
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
        // The leftover work could throw during an unrelated call.
        reply.retiredThreadId = threadId;
        Atomics.store(boot.retireFlags, threadId & flagSlotMask, threadId);
      }
      return withTransferables(reply, transferables);
    });
  }
}

function withTransferables(reply: WorkerReply | OkPair, transferables: ArrayBuffer[]): unknown {
  if (transferables.length === 0) return reply;
  return moveToHost(reply, transferables);
}

/** Before the reply is posted: a deadline firing now waits for the reply instead of reporting an overrun. */
export function markEnded(seq: number): void {
  Atomics.exchange(boot.endFlags, threadId & flagSlotMask, seq);
}

const heldUpdatePollMs = 5;

function fault(code: "TP_ERR_RESULT_NOT_CLONEABLE" | "TP_ERR_RESULT_TOO_LARGE", message: string, updates: number, runMs: number): WorkerReply {
  return { kind: "fault", code, message, updates, runMs };
}

/** Fire-and-forget work gets a grace rather than costing a thread; a throw meanwhile is charged to its own call. */
async function leftoverWorkSettles(resourcesBefore: number): Promise<boolean> {
  const deadline = performance.now() + boot.leftoverGraceMs;
  while (performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    // The timer that woke us is gone by now, so the counts compare directly.
    if (process.getActiveResourcesInfo().length <= resourcesBefore) return true;
  }
  return false;
}
