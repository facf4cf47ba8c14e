/**
 * A call's `ctx.signal`: fired by the abort message on the thread's port;
 * its `aborted`, `reason` and `throwIfAborted` also read the shared flag, so
 * a tool busy in a loop still sees the abort.
 *
 * @module
 */
import { getEventListeners } from "node:events";

import { flagSlotMask, type AbortMessage } from "../protocol.js";
import { boot } from "./boot-data.js";
import { receivePendingMessages } from "./thread-port.js";

const running = new Map<number, AbortController>();

/** An abort heard before its call took its signal: only this thread's call is aborted on its port, so one suffices. */
let heard: { seq: number; reason: unknown } | undefined;

export function takeAbortMessage(message: AbortMessage): void {
  const reason = abortReasonOf(message);
  const controller = running.get(message.abort);
  if (controller !== undefined) controller.abort(reason);
  else heard = { seq: message.abort, reason };
}

export function endCallSignal(seq: number): void {
  running.delete(seq);
  if (heard?.seq === seq) heard = undefined;
}

function abortReasonOf(message: AbortMessage): unknown {
  if (message.domException !== undefined) return new DOMException(message.domException.message, message.domException.name);
  return "reason" in message ? message.reason : createAbortReason();
}

/** Call `seq`'s flag is set: its message is taken off the port now if a busy loop kept it undispatched. */
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

interface CallSignal {
  readonly controller: AbortController;
  readonly signal: AbortSignal;
  readonly sync: () => void;
  readonly abortHeard: () => void;
  seq: number;
}

/** Reused while nothing of the last call can tell (never aborted, no listener left): a new one costs every call. */
let spareSignal: CallSignal | undefined;

export function takeCallSignal(seq: number): AbortSignal {
  const spare = spareSignal;
  const callSignal = spare !== undefined && isUntouched(spare.signal) ? spare : createCallSignal();
  spareSignal = callSignal;
  callSignal.seq = seq;
  running.set(seq, callSignal.controller);
  // Fired on the next turn, as the message would have: a tool that takes the signal, then listens, hears it.
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

function createAbortReason(): DOMException {
  return new DOMException("This operation was aborted", "AbortError");
}
