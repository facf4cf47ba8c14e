/** One watcher of `GET /v1/pool/events`: what waits to be written to it, within a fixed bound. */
import type { ServerResponse } from "node:http";

import type { Clock } from "../../clock.js";
import { toJsonText } from "../../http/json-text.js";
import type { PoolCallRecord } from "./pool-event-frames.js";
import { StallGuardedWriter } from "../../http/stalled-response.js";

/** Most ended calls held for one watcher between two flushes. */
export const maxPendingCalls = 256;

/** Written at once rather than on the next tick, so a watcher that keeps up sees every call however many end in one turn. */
const earlyFlushCalls = 64;

/** What {@link PoolEventClient.state} reports, for diagnosis and tests. */
export interface PoolEventClientState {
  pendingCalls: number;
  droppedCalls: number;
  droppedTotal: number;
  hasSnapshot: boolean;
  bufferedBytes: number;
  /** The response's high-water mark: a write that leaves more buffered blocks the next ones. */
  highWaterMark: number;
  largestFlushBytes: number;
  isBlocked: boolean;
  /** Whether the stall clock runs: something written waits for the socket to take it. */
  isWaiting: boolean;
}

/**
 * Writes frames to one watcher, coalescing while it lags: at most {@link maxPendingCalls} ended calls (the oldest are
 * dropped and counted) and the latest snapshot. Past the socket's high-water mark nothing more is written until it
 * drains, so a stalled reader costs one flush plus what this holds; one that takes nothing for `stalledMs` is reset
 * (`StallGuardedWriter`), giving back its place and the kernel's bytes.
 */
export class PoolEventClient {
  readonly #response: ServerResponse;
  readonly #writer: StallGuardedWriter;
  #pending: PoolCallRecord[] = [];
  #dropped = 0;
  #droppedTotal = 0;
  #snapshotText: string | undefined;
  #isBlocked = false;
  #largestFlushBytes = 0;
  readonly #onDrain = (): void => {
    this.#isBlocked = false;
    this.flush();
  };

  /** @param stalledMs How long the socket may take nothing of what waits before its connection is reset. */
  constructor(response: ServerResponse, stalledMs: number, clock: Clock) {
    this.#response = response;
    this.#writer = new StallGuardedWriter(response, stalledMs, clock);
  }

  pushCall(record: PoolCallRecord): void {
    if (this.#pending.length >= maxPendingCalls) {
      this.#pending.shift();
      this.#dropped += 1;
      this.#droppedTotal += 1;
    }
    this.#pending.push(record);
    if (this.#pending.length >= earlyFlushCalls && !this.#isBlocked) this.flush();
  }

  /** Replaces the snapshot waiting to be written (its frame's text, shared by every watcher). */
  offerSnapshot(frameText: string): void {
    this.#snapshotText = frameText;
  }

  /** Writes what waits, unless the socket has not drained since the last write. */
  flush(): void {
    const response = this.#response;
    if (this.#isBlocked || response.destroyed || response.writableEnded) return;
    let text = "";
    if (this.#pending.length > 0 || this.#dropped > 0) {
      text += `event: calls\ndata: ${toJsonText({ type: "calls", calls: this.#pending, dropped: this.#dropped })}\n\n`;
      this.#pending = [];
      this.#dropped = 0;
    }
    if (this.#snapshotText !== undefined) {
      text += this.#snapshotText;
      this.#snapshotText = undefined;
    }
    if (text === "") return;
    this.#largestFlushBytes = Math.max(this.#largestFlushBytes, Buffer.byteLength(text));
    if (!this.#writer.write(text)) {
      this.#isBlocked = true;
      // A response that closes instead never drains; the hub lets go of it on `close`.
      response.once("drain", this.#onDrain);
    }
  }

  writeFrame(type: string, data: unknown): void {
    this.#writer.write(`event: ${type}\ndata: ${toJsonText(data)}\n\n`);
  }

  /** Ends the stream (a stalled one is still reset once its bound is up). */
  end(): void {
    this.#writer.end();
  }

  get state(): PoolEventClientState {
    return {
      pendingCalls: this.#pending.length,
      droppedCalls: this.#dropped,
      droppedTotal: this.#droppedTotal,
      hasSnapshot: this.#snapshotText !== undefined,
      bufferedBytes: this.#response.writableLength,
      highWaterMark: this.#response.writableHighWaterMark,
      largestFlushBytes: this.#largestFlushBytes,
      isBlocked: this.#isBlocked,
      isWaiting: this.#writer.isWaiting,
    };
  }
}
