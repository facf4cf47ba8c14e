/**
 * The main thread's side of the flags that cross to worker threads in
 * shared memory (`WorkerBootData` in `protocol.ts`, where the worker's side
 * reads them): each is read by a thread that may be busy in a loop, or must
 * be decided by an atomic swap, where a port message would wait for a turn
 * of the thread's event loop. One set per pool.
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

  /** What every worker of the pool starts with. */
  bootData(leftoverGraceMs: number): WorkerBootData {
    return {
      abortFlags: this.#abortFlags,
      leftoverGraceMs,
      endFlags: this.#endFlags,
      takenUpdates: this.#takenUpdates,
      yieldFlags: this.#yieldFlags,
    };
  }

  /**
   * Flags call `seq` as aborted; its thread's port carries the reason, sent
   * first, so a tool that sees the flag finds the message already there.
   */
  abort(seq: number): void {
    Atomics.store(this.#abortFlags, seq & flagSlotMask, seq);
  }

  /**
   * Claims call `seq`'s end on `threadId` for a deadline: true when the tool
   * had already finished (its reply is on its way, so the call must not be
   * reported as overrun), false when the claim came first and the thread may
   * be terminated. Whichever side swaps first decides.
   */
  hasFinished(threadId: number, seq: number): boolean {
    return Atomics.exchange(this.#endFlags, threadId & flagSlotMask, -seq) === seq;
  }

  /** Call `seq`'s partials taken so far: the worker holds later ones back while too many are untaken. */
  tookUpdates(seq: number, count: number): void {
    Atomics.store(this.#takenUpdates, seq & flagSlotMask, count);
  }

  /** Asks call `seq` (a spread call's part) to give its thread back: its `ctx.shouldYield()` turns true. */
  askToYield(seq: number): void {
    Atomics.store(this.#yieldFlags, seq & flagSlotMask, seq);
  }
}

/**
 * The message that aborts call `seq` with `reason` (the batch signal's), as
 * structured clone carries it: a `DOMException` by its name and message
 * (Node 20 clones it as a bare object); a reason that cannot be cloned is
 * left out, and the tool's signal then has the default `AbortError`.
 */
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
