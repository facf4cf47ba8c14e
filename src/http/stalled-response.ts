import { once } from "node:events";
import type { ServerResponse } from "node:http";

import { systemClock, type Clock } from "../clock.js";

/** Resolves once `response` drains or closes; past `stalledMs`, resets it: a plain close keeps the kernel's queue for a dead peer. */
export async function whenDrained(response: ServerResponse, stalledMs: number, clock: Clock = systemClock): Promise<void> {
  if (response.destroyed || !response.writableNeedDrain) return;
  const ac = new AbortController();
  const stalled = clock.setTimeout(() => resetResponse(response), stalledMs);
  try {
    // `drain` never comes to a socket that closes instead.
    await Promise.race([once(response, "drain", { signal: ac.signal }), once(response, "close", { signal: ac.signal })]);
  } catch {
  } finally {
    clock.clearTimeout(stalled);
    ac.abort();
  }
}

/**
 * Resets the connection once the socket has taken nothing for `stalledMs`
 * while any write waits: `write()` returning false would start no clock below
 * the high-water mark, where a quiet stream stays for minutes.
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

  /** @param stalledMs Milliseconds the socket may take nothing while a write waits, before the connection is reset. */
  constructor(response: ServerResponse, stalledMs: number, clock: Clock = systemClock) {
    this.#response = response;
    this.#stalledMs = stalledMs;
    this.#clock = clock;
    response.once("close", () => this.#stopClock());
  }

  /** False: wait for `drain` before writing more. */
  write(text: string): boolean {
    const response = this.#response;
    if (response.destroyed || response.writableEnded) return false;
    const isBelowMark = response.write(text, this.#onTaken);
    this.#startClockIfWaiting();
    return isBelowMark;
  }

  /** The clock still runs until the socket has taken the last bytes. */
  end(): void {
    const response = this.#response;
    if (response.writableEnded) return;
    response.end(this.#onTaken);
    this.#startClockIfWaiting();
  }

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

/** A reset (RST) drops what is queued for the connection. */
function resetResponse(response: ServerResponse): void {
  const socket = response.socket;
  if (socket !== null && !socket.destroyed) socket.resetAndDestroy();
  else response.destroy();
}
