/**
 * The bound on a response whose client stopped reading, shared by the
 * streams of toolpool's HTTP fronts: the live view's watchers and MCP's
 * responses.
 *
 * @module
 */
import { once } from "node:events";
import type { ServerResponse } from "node:http";

import { systemClock, type Clock } from "../clock.js";

/**
 * Resolves once `response`, which refused a write (`write()` returned
 * false), drains or closes. If it does neither within `stalledMs`, its
 * client has read nothing for that long: the connection is reset, which
 * closes the response (so this resolves) and frees at once what the kernel
 * still held to send it. A plain close would keep those bytes queued, up to
 * megabytes a socket, while the kernel waits on a peer that never reads.
 *
 * @example
 * ```ts
 * if (!response.write(frame)) await whenDrained(response, 30_000);
 * ```
 */
export async function whenDrained(response: ServerResponse, stalledMs: number, clock: Clock = systemClock): Promise<void> {
  if (response.destroyed || !response.writableNeedDrain) return;
  const ac = new AbortController();
  const stalled = clock.setTimeout(() => resetResponse(response), stalledMs);
  try {
    // `drain` never comes to a socket that closes instead, so wait for either.
    await Promise.race([once(response, "drain", { signal: ac.signal }), once(response, "close", { signal: ac.signal })]);
  } catch {
    // Aborted below, once either came.
  } finally {
    clock.clearTimeout(stalled);
    ac.abort();
  }
}

/**
 * Writes to a response whose client may stop reading, and resets its
 * connection once its socket has taken nothing of what was written for
 * `stalledMs`. The clock runs whenever a write waits in the server (the
 * kernel's buffers for the socket are full), however little waits, and
 * restarts each time the socket takes a write: a client that reads slowly
 * keeps its connection, one that reads nothing loses it within `stalledMs`
 * of the first write it leaves waiting. (Waiting only for `write()` to
 * return false would start no clock while less than the high-water mark
 * waits, and a quiet stream writes that little for minutes.)
 *
 * The reset closes the response and frees at once what the kernel held to
 * send it (see {@link whenDrained}).
 *
 * @example
 * ```ts
 * const writer = new StallGuardedWriter(response, 30_000);
 * if (!writer.write(frame)) response.once("drain", writeMore);
 * ```
 */
export class StallGuardedWriter {
  readonly #response: ServerResponse;
  readonly #stalledMs: number;
  readonly #clock: Clock;
  /** Set while a write waits for the socket; at most one. */
  #timer: unknown;
  readonly #onTaken = (): void => {
    this.#stopClock();
    this.#startClockIfWaiting();
  };
  readonly #onStalled = (): void => {
    this.#timer = undefined;
    resetResponse(this.#response);
  };

  /**
   * @param stalledMs Milliseconds the socket may take nothing while a write waits, before the connection is reset.
   * @param clock Times `stalledMs`.
   */
  constructor(response: ServerResponse, stalledMs: number, clock: Clock = systemClock) {
    this.#response = response;
    this.#stalledMs = stalledMs;
    this.#clock = clock;
    response.once("close", () => this.#stopClock());
  }

  /** Writes `text`; returns what `response.write` does (false: wait for `drain` before writing more). */
  write(text: string): boolean {
    const response = this.#response;
    if (response.destroyed || response.writableEnded) return false;
    // The callback comes once the socket has taken this write (or failed it).
    const isBelowMark = response.write(text, this.#onTaken);
    this.#startClockIfWaiting();
    return isBelowMark;
  }

  /** Ends the response; the clock still runs until the socket has taken its last bytes. */
  end(): void {
    const response = this.#response;
    if (response.writableEnded) return;
    response.end(this.#onTaken);
    this.#startClockIfWaiting();
  }

  /** Whether the clock runs: a write waits for the socket. */
  get isWaiting(): boolean {
    return this.#timer !== undefined;
  }

  #startClockIfWaiting(): void {
    const response = this.#response;
    if (this.#timer !== undefined || response.destroyed || response.writableLength === 0) return;
    this.#timer = this.#clock.setTimeout(this.#onStalled, this.#stalledMs);
  }

  #stopClock(): void {
    if (this.#timer === undefined) return;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

/** Closes `response`'s connection with a reset (RST), dropping what is queued for it. */
function resetResponse(response: ServerResponse): void {
  const socket = response.socket;
  if (socket !== null && !socket.destroyed) socket.resetAndDestroy();
  else response.destroy();
}
