import type { Redis } from "ioredis";

import type { RemoteJobData } from "./fleet-protocol.js";

/**
 * What a node does with a call it fetched: run it; run it with an aborted
 * signal (submitted after its batch's abort, as pi runs such a call); or
 * not start it, because it waited in the queue when its batch was aborted,
 * or because its coordinator is gone (no one would receive its end).
 */
export type Admission = "run" | "run-aborted" | "aborted" | "coordinator-gone";

/** Reads the call's coordinator presence key and its batch's abort key (one round trip). */
export async function admitCall(commands: Redis, data: RemoteJobData): Promise<Admission> {
  const checksAbort = data.abortKey !== undefined && data.startsAborted !== true;
  const pipeline = commands.pipeline().exists(data.presenceKey);
  if (checksAbort) pipeline.exists(data.abortKey!);
  const results = (await pipeline.exec()) ?? [];
  const [presence, abort] = results.map(([error, count]) => {
    if (error !== null) throw error;
    return count === 1;
  });
  if (presence !== true) return "coordinator-gone";
  if (abort === true) return "aborted";
  return data.startsAborted === true ? "run-aborted" : "run";
}

/** Of `keys`, those that no longer exist in Redis (one round trip). */
export async function findMissingKeys(commands: Redis, keys: Iterable<string>): Promise<Set<string>> {
  const list = [...new Set(keys)];
  if (list.length === 0) return new Set();
  const pipeline = commands.pipeline();
  for (const key of list) pipeline.exists(key);
  const results = (await pipeline.exec()) ?? [];
  return new Set(list.filter((_, index) => results[index]?.[0] === null && results[index]?.[1] === 0));
}
