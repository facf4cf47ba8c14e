/**
 * A Server-Sent Events response, opened lazily on the first event.
 *
 * @module
 */
import { once } from "node:events";

import type { FastifyReply } from "fastify";

import { toJsonText } from "../http/json-text.js";

/**
 * Writes `event: TYPE\ndata: JSON\n\n` frames to one response.
 *
 * The stream opens (Fastify lets go of the reply, status 200 and the SSE
 * headers go out) only with the first frame, so that a batch the runtime
 * rejects before any event is still answered with a proper HTTP error.
 *
 * `send` resolves once the frame is handed to the socket, or once the socket
 * has room again when its buffer is full: the runtime awaits its `emit` like
 * pi awaits its sink, so a slow client slows its own batch down instead of
 * growing the server's memory. It never rejects: once the client is gone,
 * frames are dropped (the batch is being aborted by then).
 */
export class SseStream {
  readonly #reply: FastifyReply;
  #isOpen = false;

  constructor(reply: FastifyReply) {
    this.#reply = reply;
  }

  /** Whether the stream has started (the reply is no longer Fastify's). */
  get isOpen(): boolean {
    return this.#isOpen;
  }

  /** Sends one event. */
  async send(type: string, data: unknown): Promise<void> {
    const response = this.#open();
    if (response.destroyed || response.writableEnded) return;
    if (response.write(`event: ${type}\ndata: ${toJsonText(data)}\n\n`)) return;
    // `drain` never comes to a socket that closes instead, so wait for either.
    const ac = new AbortController();
    await Promise.race([once(response, "drain", { signal: ac.signal }), once(response, "close", { signal: ac.signal })]).catch(() => {});
    ac.abort();
  }

  /** Ends the stream; resolves once the response is finished or the client gone. */
  async end(): Promise<void> {
    const response = this.#open();
    if (response.destroyed || response.writableFinished) return;
    const closed = once(response, "close").catch(() => {});
    response.end();
    await closed;
  }

  #open(): FastifyReply["raw"] {
    const response = this.#reply.raw;
    if (!this.#isOpen) {
      this.#isOpen = true;
      this.#reply.hijack();
      response.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        // Proxies such as nginx buffer responses unless told not to.
        "x-accel-buffering": "no",
      });
    }
    return response;
  }
}
