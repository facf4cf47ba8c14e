/**
 * One watcher of `GET /v1/pool/events`: what is waiting to be written to it,
 * within a fixed bound.
 *
 * @module
 */
import type { ServerResponse } from "node:http";

import type { Clock } from "../../clock.js";
import { toJsonText } from "../../http/json-text.js";
import type { PoolCallRecord } from "./pool-event-frames.js";
import { StallGuardedWriter } from "../../http/stalled-response.js";

/** Most ended calls held for one watcher between two flushes. */
export const maxPendingCalls = 256;

/**
 * Ended calls that are written at once rather than on the next tick: a
 * watcher that keeps up sees every call, however many end in one turn of
 * the event loop; calls are dropped only while its socket is full.
 */
const earlyFlushCalls = 64;

/** What {@link PoolEventClient.state} reports, for diagnosis and tests. */
export interface PoolEventClientState {
  /** Ended calls waiting to be written. */
  pendingCalls: number;
  /** Calls dropped since the last `calls` frame went out. */
  droppedCalls: number;
  /** Calls dropped since the watcher connected. */
  droppedTotal: number;
  /** Whether a snapshot waits to be written. */
  hasSnapshot: boolean;
  /** Bytes the response holds that the socket has not taken yet. */
  bufferedBytes: number;
  /** The response's high-water mark: a write that leaves more buffered blocks the next ones (16 KiB on Node 20, 64 KiB from Node 22). */
  highWaterMark: number;
  /** The largest text one flush wrote. */
  largestFlushBytes: number;
  /** Whether writing waits for the socket to drain. */
  isBlocked: boolean;
  /** Whether the stall clock runs: something written waits for the socket to take it. */
  isWaiting: boolean;
}

/**
 * Writes frames to one watcher, coalescing while it does not keep up: it
 * holds at most {@link maxPendingCalls} ended calls (the oldest are dropped
 * and counted in the next `calls` frame) and only the latest snapshot. It
 * writes on the hub's tick, and at once when 64 calls wait. Once
 * a write finds the socket's buffer past its high-water mark, nothing more
 * is written until it drains: a stalled reader costs the server at most
 * one flush in the socket's buffer plus what this object holds. A watcher
 * whose socket takes nothing of what waits for it, however little, for
 * `stalledMs` is reset (see `StallGuardedWriter`), so that it gives its
 * place back, and the kernel the bytes it queued for it.
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

  /**
   * @param stalledMs Milliseconds the socket may take nothing of what
   * waits for it (its client reading nothing) before its connection is reset.
   * @param clock Times `stalledMs`.
   */
  constructor(response: ServerResponse, stalledMs: number, clock: Clock) {
    this.#response = response;
    this.#writer = new StallGuardedWriter(response, stalledMs, clock);
  }

  /** Queues an ended call; past the bound, the oldest one queued is dropped. */
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

  /** Writes one frame at once (the stream's first). */
  writeFrame(type: string, data: unknown): void {
    this.#writer.write(`event: ${type}\ndata: ${toJsonText(data)}\n\n`);
  }

  /** Ends the stream (a stalled one is still reset once its bound is up). */
  end(): void {
    this.#writer.end();
  }

  /** What the watcher holds now. */
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
