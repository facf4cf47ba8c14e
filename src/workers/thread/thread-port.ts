/**
 * The thread's own port to its pool, handed once with the first task the
 * thread runs: the pool's messages for the call this thread runs (its
 * abort's reason, its spread answers) come on it, and reach no other thread.
 *
 * @module
 */
import { receiveMessageOnPort, type MessagePort } from "node:worker_threads";

import type { ThreadMessage } from "../protocol.js";

let port: MessagePort | undefined;
let handle: (message: ThreadMessage) => void = () => {};

/** Sets what the thread does with each message of its port. */
export function onThreadMessage(handler: (message: ThreadMessage) => void): void {
  handle = handler;
}

/** Takes the port the pool sent with this thread's first task. */
export function takeThreadPort(received: MessagePort): void {
  port = received;
  port.on("message", (message: ThreadMessage) => handle(message));
  // Neither an idle thread's life nor a call's leftover-work count may depend on it.
  port.unref();
}

/**
 * Handles the messages already on the port, one at a time, until `isDone()`:
 * a call busy in a loop never lets its thread's event loop dispatch them.
 */
export function receivePendingMessages(isDone: () => boolean): void {
  if (port === undefined) return;
  while (!isDone()) {
    const taken = receiveMessageOnPort(port);
    if (taken === undefined) return;
    handle(taken.message as ThreadMessage);
  }
}
