/**
 * The thread's own port, handed with its first task: the pool's messages
 * for the call this thread runs, and no other thread's.
 *
 * @module
 */
import { receiveMessageOnPort, type MessagePort } from "node:worker_threads";

import type { ThreadMessage } from "../protocol.js";

let port: MessagePort | undefined;
let handle: (message: ThreadMessage) => void = () => {};

export function onThreadMessage(handler: (message: ThreadMessage) => void): void {
  handle = handler;
}

export function takeThreadPort(received: MessagePort): void {
  port = received;
  port.on("message", (message: ThreadMessage) => handle(message));
  // Neither an idle thread's life nor a call's leftover-work count may depend on it.
  port.unref();
}

/** Handles the messages already on the port until `isDone()`: a busy loop never lets them be dispatched. */
export function receivePendingMessages(isDone: () => boolean): void {
  if (port === undefined) return;
  while (!isDone()) {
    const taken = receiveMessageOnPort(port);
    if (taken === undefined) return;
    handle(taken.message as ThreadMessage);
  }
}
