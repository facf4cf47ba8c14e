/**
 * The main thread's side of the shared-memory flags (`WorkerBootData`): a
 * port message would wait for a busy thread's event loop.
 *
 * @module
 */
import { flagSlotCount, flagSlotMask, type AbortMessage, type WorkerBootData } from "./protocol.js";

const slotArray = () => new Int32Array(new SharedArrayBuffer(flagSlotCount * Int32Array.BYTES_PER_ELEMENT));

export class CallSignals {
  /** A busy tool polls `signal.aborted`. */
  readonly #abortFlags = slotArray();
  /** Finished tool against deadline: whichever side swaps first decides. */
  readonly #endFlags = slotArray();
  /** `onUpdate` reads it synchronously to hold partials back. */
  readonly #takenUpdates = slotArray();
  /** `ctx.shouldYield()` polls it. */
  readonly #yieldFlags = slotArray();
  /** A freed thread is handed its next call before its reply is read. */
  readonly #retireFlags = slotArray();

  bootData(leftoverGraceMs: number): WorkerBootData {
    return {
      abortFlags: this.#abortFlags,
      leftoverGraceMs,
      endFlags: this.#endFlags,
      takenUpdates: this.#takenUpdates,
      yieldFlags: this.#yieldFlags,
      retireFlags: this.#retireFlags,
    };
  }

  /** Whether `threadId` left work behind (it must take no further call). */
  isRetired(threadId: number): boolean {
    return Atomics.load(this.#retireFlags, threadId & flagSlotMask) === threadId;
  }

  /** Set after the reason is sent on the port: a tool that sees the flag finds the message there. */
  abort(seq: number): void {
    Atomics.store(this.#abortFlags, seq & flagSlotMask, seq);
  }

  /** Claims the end for a deadline; true when the tool finished first (its reply is on its way). */
  hasFinished(threadId: number, seq: number): boolean {
    return Atomics.exchange(this.#endFlags, threadId & flagSlotMask, -seq) === seq;
  }

  tookUpdates(seq: number, count: number): void {
    Atomics.store(this.#takenUpdates, seq & flagSlotMask, count);
  }

  askToYield(seq: number): void {
    Atomics.store(this.#yieldFlags, seq & flagSlotMask, seq);
  }
}

/** A reason that cannot be cloned is left out (the thread uses the default `AbortError`). */
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
