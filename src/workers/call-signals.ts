/**
 * The main thread's side of the shared-memory flags (`WorkerBootData`): each
 * is read by a thread that may be busy in a loop, or decided by an atomic
 * swap, where a port message would wait for the thread's event loop.
 *
 * @module
 */
import { flagSlotCount, flagSlotMask, type AbortMessage, type WorkerBootData } from "./protocol.js";

const slotArray = () => new Int32Array(new SharedArrayBuffer(flagSlotCount * Int32Array.BYTES_PER_ELEMENT));

export class CallSignals {
  /** Per call's slot: its sequence number once it is aborted (a busy tool polls `signal.aborted`). */
  readonly #abortFlags = slotArray();
  /** Per thread's slot: the call whose tool finished, swapped against the pool's deadline (an atomic decision). */
  readonly #endFlags = slotArray();
  /** Per call's slot: how many of its partials the main thread has taken (read by `onUpdate`, synchronously). */
  readonly #takenUpdates = slotArray();
  /** Per call's slot: its sequence number once the pool asks it to give its thread back (`ctx.shouldYield()`, a poll). */
  readonly #yieldFlags = slotArray();

  bootData(leftoverGraceMs: number): WorkerBootData {
    return {
      abortFlags: this.#abortFlags,
      leftoverGraceMs,
      endFlags: this.#endFlags,
      takenUpdates: this.#takenUpdates,
      yieldFlags: this.#yieldFlags,
    };
  }

  /** Set after the reason is sent on the port: a tool that sees the flag finds the message there. */
  abort(seq: number): void {
    Atomics.store(this.#abortFlags, seq & flagSlotMask, seq);
  }

  /** Claims call `seq`'s end for a deadline: true when the tool had finished first (its reply is on its way). */
  hasFinished(threadId: number, seq: number): boolean {
    return Atomics.exchange(this.#endFlags, threadId & flagSlotMask, -seq) === seq;
  }

  tookUpdates(seq: number, count: number): void {
    Atomics.store(this.#takenUpdates, seq & flagSlotMask, count);
  }

  /** Asks call `seq` (a spread call's part) to give its thread back: its `ctx.shouldYield()` turns true. */
  askToYield(seq: number): void {
    Atomics.store(this.#yieldFlags, seq & flagSlotMask, seq);
  }
}

/** The abort message of call `seq`; a reason that cannot be cloned is left out (the default `AbortError`). */
export function abortMessageOf(seq: number, reason: unknown): AbortMessage {
  if (reason instanceof DOMException) return { abort: seq, domException: { name: reason.name, message: reason.message } };
  if (reason === undefined) return { abort: seq };
  try {
    structuredClone(reason);
  } catch {
    return { abort: seq };
  }
  return { abort: seq, reason };
}
