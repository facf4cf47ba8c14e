import type { Redis } from "ioredis";

import { decodeReply, type ReplyEntry } from "./fleet-protocol.js";

/** Entries consumed between two trims of the stream. */
const trimEvery = 256;

/**
 * Reads a coordinator's reply stream until `isDone`, handing each entry to
 * `onEntry` in stream order: a node writes a call's partials and then its end
 * on one connection, so they arrive in that order, after the partials.
 * XREAD blocks on its own connection; after a lost connection it resumes from
 * the last id it read (ioredis resends it). Consumed entries are trimmed now
 * and then; the stream also expires 10 minutes after the last end a node
 * wrote, so a coordinator that died leaves nothing behind.
 */
export async function readReplyStream(options: {
  reader: Redis;
  key: string;
  onEntry: (entry: ReplyEntry) => void;
  trim: (lastId: string) => void;
  /** No more entries are wanted. */
  isDone: () => boolean;
  /** The reader is being disconnected: a failed read ends the loop. */
  isStopped: () => boolean;
}): Promise<void> {
  let lastId = "0-0";
  let sinceTrim = 0;
  while (!options.isDone()) {
    let reply: [Buffer, [Buffer, Buffer[]][]][] | null;
    try {
      reply = (await options.reader.xreadBuffer("COUNT", 1_000, "BLOCK", 0, "STREAMS", options.key, lastId)) as typeof reply;
    } catch {
      if (options.isStopped()) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
      continue;
    }
    for (const [, entries] of reply ?? []) {
      for (const [id, fields] of entries) {
        lastId = id.toString();
        sinceTrim += 1;
        const entry = decodeReply(fields);
        if (entry !== undefined) options.onEntry(entry);
      }
    }
    if (sinceTrim >= trimEvery) {
      sinceTrim = 0;
      options.trim(lastId);
    }
  }
}
