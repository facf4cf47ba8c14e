import type { Redis } from "ioredis";

import { decodeReply, type ReplyEntry } from "./fleet-protocol.js";

/** Entries consumed between two trims of the stream. */
const trimEvery = 256;
/** Entries asked for per read. */
const readCount = 1_000;

type StreamReply = [Buffer, [Buffer, Buffer[]][]][] | null;

/**
 * A coordinator's reply stream, read in stream order: a node writes a call's
 * partials and then its end on one connection, so they arrive in that order.
 *
 * Two readers share one position, so no entry is handed over twice or out of
 * order: {@link run}, which blocks on a connection of its own (after a lost
 * connection it resumes from the last id it read), and {@link catchUp}, a
 * read that does not block, on the command connection. A coordinator about
 * to give up on a call (a deadline, a lost node) catches up first: an end a
 * node already wrote wins over the coordinator's own verdict, even while the
 * blocking reader has not received it yet.
 *
 * Consumed entries are trimmed now and then; the stream also expires 10
 * minutes after the last entry a node wrote, so a coordinator that died
 * leaves nothing behind.
 */
export class ReplyStream {
  readonly #key: string;
  readonly #onEntry: (entry: ReplyEntry) => void;
  readonly #trim: (lastId: string) => void;
  #lastId = "0-0";
  #sinceTrim = 0;

  constructor(options: { key: string; onEntry: (entry: ReplyEntry) => void; trim: (lastId: string) => void }) {
    this.#key = options.key;
    this.#onEntry = options.onEntry;
    this.#trim = options.trim;
  }

  /** Reads with `XREAD BLOCK` on `reader` until `isDone`; a failed read ends the loop once `isStopped`. */
  async run(reader: Redis, options: { isDone: () => boolean; isStopped: () => boolean }): Promise<void> {
    while (!options.isDone()) {
      let reply: StreamReply;
      try {
        reply = (await reader.xreadBuffer("COUNT", readCount, "BLOCK", 0, "STREAMS", this.#key, this.#lastId)) as StreamReply;
      } catch {
        if (options.isStopped()) return;
        await new Promise((resolve) => setTimeout(resolve, 50));
        continue;
      }
      this.#deliver(reply);
    }
  }

  /** Reads, without blocking, every entry written since the last one handed over. Rejects if Redis does not answer. */
  async catchUp(commands: Redis): Promise<void> {
    for (;;) {
      const reply = (await commands.xreadBuffer("COUNT", readCount, "STREAMS", this.#key, this.#lastId)) as StreamReply;
      if (this.#deliver(reply) < readCount) return;
    }
  }

  /** Hands over the entries past the shared position, in order; returns how many the reply held. */
  #deliver(reply: StreamReply): number {
    let count = 0;
    for (const [, entries] of reply ?? []) {
      for (const [rawId, fields] of entries) {
        count += 1;
        const id = rawId.toString();
        // The other reader may have handed it over already.
        if (!isAfter(id, this.#lastId)) continue;
        this.#lastId = id;
        this.#sinceTrim += 1;
        const entry = decodeReply(fields);
        if (entry !== undefined) this.#onEntry(entry);
      }
    }
    if (this.#sinceTrim >= trimEvery) {
      this.#sinceTrim = 0;
      this.#trim(this.#lastId);
    }
    return count;
  }
}

/** Whether stream id `a` (`<ms>-<seq>`) comes after `b`. */
function isAfter(a: string, b: string): boolean {
  const [aMs, aSeq] = a.split("-").map(Number) as [number, number];
  const [bMs, bSeq] = b.split("-").map(Number) as [number, number];
  return aMs > bMs || (aMs === bMs && aSeq > bSeq);
}
