/**
 * The main thread's side of the signals that cross to worker threads without
 * a message of Piscina's: five slot arrays in shared memory (see
 * `protocol.ts`, where the worker's side reads them) and the control channel
 * that wakes a worker awaiting its abort. One per pool.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { BroadcastChannel } from "node:worker_threads";

import { flagSlotCount, flagSlotMask, type AbortMessage, type WorkerBootData } from "./protocol.js";

const slotArray = () => new Int32Array(new SharedArrayBuffer(flagSlotCount * Int32Array.BYTES_PER_ELEMENT));

export class CallSignals {
  /** Per call's slot: its sequence number once it is aborted. */
  readonly #abortFlags = slotArray();
  /** Per thread's slot: its thread id once it must serve no further call (it left work behind). */
  readonly #retireFlags = slotArray();
  /** Per thread's slot: the sequence number of the call whose tool finished, swapped in before its reply. */
  readonly #endFlags = slotArray();
  /** Per call's slot: how many of its partials the main thread has taken. */
  readonly #takenUpdates = slotArray();
  /** Per call's slot: its sequence number once the pool asks it to give its thread back. */
  readonly #yieldFlags = slotArray();
  readonly #control: BroadcastChannel;
  /** The control channel's name, which the workers and spread channels derive theirs from. */
  readonly controlChannel = `toolpool:${randomUUID()}`;

  constructor() {
    this.#control = new BroadcastChannel(this.controlChannel);
    this.#control.unref();
  }

  /** What every worker of the pool starts with. */
  bootData(leftoverGraceMs: number): WorkerBootData {
    return {
      abortFlags: this.#abortFlags,
      controlChannel: this.controlChannel,
      retireFlags: this.#retireFlags,
      leftoverGraceMs,
      endFlags: this.#endFlags,
      takenUpdates: this.#takenUpdates,
      yieldFlags: this.#yieldFlags,
    };
  }

  /**
   * Aborts call `seq`: a message that fires its signal with the given
   * abort message's reason (see {@link abortMessageOf}), then a flag a busy
   * tool can poll, which finds the message already on its channel.
   */
  abort(message: AbortMessage): void {
    this.#control.postMessage(message);
    Atomics.store(this.#abortFlags, message.abort & flagSlotMask, message.abort);
  }

  /** Whether `threadId` retired itself (it must take no further call). */
  isRetired(threadId: number): boolean {
    return Atomics.load(this.#retireFlags, threadId & flagSlotMask) === threadId;
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

  close(): void {
    this.#control.close();
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
