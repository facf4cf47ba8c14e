/** A Server-Sent Events response, opened lazily on the first event. */
import { once } from "node:events";

import type { FastifyReply } from "fastify";

import { toJsonText } from "../http/json-text.js";

/**
 * Opens (status 200, SSE headers) only with the first frame, so a batch rejected before any event still gets a proper
 * HTTP error. `send` resolves once the socket takes the frame: the runtime awaits `emit` as pi awaits its sink, so a
 * slow client slows its own batch instead of growing the server's memory. It never rejects; frames to a gone client are dropped.
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
