/**
 * A call's `ctx.signal` in the worker: a real AbortSignal that fires on the
 * abort message the pool sends on this thread's port, and whose `aborted`,
 * `reason` and `throwIfAborted` also read the call's shared abort flag, so a
 * tool busy in a loop (its event loop never turning) still sees the abort.
 *
 * @module
 */
import { getEventListeners } from "node:events";

import { flagSlotMask, type AbortMessage } from "../protocol.js";
import { boot } from "./boot-data.js";
import { receivePendingMessages } from "./thread-port.js";

/** The controllers of the calls that took their signal, by sequence number. */
const running = new Map<number, AbortController>();

/**
 * The abort of a call that has not taken its signal yet: only the call this
 * thread runs (or is about to run) is ever aborted on its port.
 */
let heard: { seq: number; reason: unknown } | undefined;

/** An abort message from the pool (on the port, or with a task that was aborted before it reached the thread). */
export function takeAbortMessage(message: AbortMessage): void {
  const reason = abortReasonOf(message);
  const controller = running.get(message.abort);
  if (controller !== undefined) controller.abort(reason);
  else heard = { seq: message.abort, reason };
}

/** Call `seq` has ended: its signal is no longer its. */
export function endCallSignal(seq: number): void {
  running.delete(seq);
  if (heard?.seq === seq) heard = undefined;
}

/** The reason an abort message carries, as the batch's signal had it. */
function abortReasonOf(message: AbortMessage): unknown {
  if (message.domException !== undefined) return new DOMException(message.domException.message, message.domException.name);
  return "reason" in message ? message.reason : createAbortReason();
}

/**
 * The reason of call `seq`'s abort, whose flag is set: from its message,
 * taken off the port now if it has not been dispatched yet; the default
 * `AbortError` if it is not there.
 */
function reasonOf(seq: number): unknown {
  receivePendingMessages(() => heard?.seq === seq || abortedGetter.call(running.get(seq)?.signal ?? neverAborted) === true);
  if (heard?.seq !== seq) return createAbortReason();
  const { reason } = heard;
  heard = undefined;
  return reason;
}

const abortedGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")!.get!;
const neverAborted = new AbortController().signal;
const reasonGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "reason")!.get!;

function isFlagged(seq: number): boolean {
  return Atomics.load(boot.abortFlags, seq & flagSlotMask) === seq;
}

/** A call's abort signal, with the call it currently belongs to. */
interface CallSignal {
  readonly controller: AbortController;
  readonly signal: AbortSignal;
  /** Aborts the signal if the call's flag is set. */
  readonly sync: () => void;
  /** Aborts the signal (unless it is already) if the flag or a message this thread heard says its call is aborted. */
  readonly abortHeard: () => void;
  seq: number;
}

/**
 * The last call's signal, for the next call to reuse: an AbortController and
 * its accessors cost more than a call's own work in the pool, and every
 * built-in tool looks at its signal. Reuse is safe only while nothing of the
 * last call can tell: the signal was never aborted and no listener is left.
 */
let spareSignal: CallSignal | undefined;

/** Call `seq`'s signal, taken on the tool's first look. */
export function takeCallSignal(seq: number): AbortSignal {
  const spare = spareSignal;
  const callSignal = spare !== undefined && isUntouched(spare.signal) ? spare : createCallSignal();
  spareSignal = callSignal;
  callSignal.seq = seq;
  running.set(seq, callSignal.controller);
  // Aborted before the signal was taken: its event fires on the next turn, as
  // the message would have, so a tool that takes the signal and then listens hears it.
  if (isFlagged(seq) || heard?.seq === seq) setImmediate(callSignal.abortHeard);
  return callSignal.signal;
}

function isUntouched(signal: AbortSignal): boolean {
  return !abortedGetter.call(signal) && signal.onabort === null && getEventListeners(signal, "abort").length === 0;
}

function createCallSignal(): CallSignal {
  const controller = new AbortController();
  const signal = controller.signal;
  const callSignal: CallSignal = {
    controller,
    signal,
    seq: 0,
    sync: () => {
      if (!abortedGetter.call(signal) && isFlagged(callSignal.seq)) controller.abort(reasonOf(callSignal.seq));
    },
    abortHeard: () => {
      // Read again: a signal reused by a later call must not abort it.
      const { seq } = callSignal;
      if (!abortedGetter.call(signal) && (isFlagged(seq) || heard?.seq === seq)) controller.abort(reasonOf(seq));
    },
  };
  const { sync } = callSignal;
  Object.defineProperties(signal, {
    aborted: {
      configurable: true,
      get: () => {
        sync();
        return abortedGetter.call(signal) as boolean;
      },
    },
    reason: {
      configurable: true,
      get: () => {
        sync();
        return reasonGetter.call(signal) as unknown;
      },
    },
    throwIfAborted: {
      configurable: true,
      value: () => {
        sync();
        AbortSignal.prototype.throwIfAborted.call(signal);
      },
    },
  });
  return callSignal;
}

/** What `AbortController.abort()` gives by default. */
function createAbortReason(): DOMException {
  return new DOMException("This operation was aborted", "AbortError");
}
