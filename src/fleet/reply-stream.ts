import type { Redis } from "ioredis";

import { decodeReply, type ReplyEntry } from "./fleet-protocol.js";

const trimEvery = 256;
const readCount = 1_000;

type StreamReply = [Buffer, [Buffer, Buffer[]][]][] | null;

/**
 * A coordinator's reply stream, in order: a node writes a call's partials, then its end, on one connection. Two readers
 * share one position, so nothing is handed over twice or out of order: {@link run} blocks on its own connection, and
 * {@link catchUp} does not, so a coordinator about to give up on a call lets an end already written win. Consumed
 * entries are trimmed; the stream also expires (`fleet-node.ts`), so a dead coordinator leaves nothing behind.
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

  /** `XREAD BLOCK` until `isDone`; a failed read ends the loop once `isStopped`. */
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

  /** Rejects if Redis does not answer. */
  async catchUp(commands: Redis): Promise<void> {
    for (;;) {
      const reply = (await commands.xreadBuffer("COUNT", readCount, "STREAMS", this.#key, this.#lastId)) as StreamReply;
      if (this.#deliver(reply) < readCount) return;
    }
  }

  /** Returns how many entries the reply held. */
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

function isAfter(a: string, b: string): boolean {
  const [aMs, aSeq] = a.split("-").map(Number) as [number, number];
  const [bMs, bSeq] = b.split("-").map(Number) as [number, number];
  return aMs > bMs || (aMs === bMs && aSeq > bSeq);
}
