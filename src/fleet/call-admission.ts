import type { Redis } from "ioredis";

import type { RemoteJobData } from "./fleet-protocol.js";

/**
 * `run-aborted`: submitted after its batch's abort, run with an aborted signal as pi does. `aborted`: it waited in the
 * queue when its batch was aborted. `coordinator-gone`: no one would receive its end.
 */
type Admission = "run" | "run-aborted" | "aborted" | "coordinator-gone";

/** Reads the coordinator's presence (key and channel subscribers: `CoordinatorPresence`) and the abort key in one round trip. */
export async function admitCall(commands: Redis, data: RemoteJobData): Promise<Admission> {
  const checksAbort = data.abortKey !== undefined && data.startsAborted !== true;
  const pipeline = commands.pipeline().exists(data.presenceKey).pubsub("NUMSUB", data.presenceKey);
  if (checksAbort) pipeline.exists(data.abortKey!);
  const results = (await pipeline.exec()) ?? [];
  for (const [error] of results) if (error !== null) throw error;
  const [presence, subscribers, abort] = results.map(([, reply]) => reply);
  if (presence !== 1 || subscriberCount(subscribers) === 0) return "coordinator-gone";
  if (abort === 1) return "aborted";
  return data.startsAborted === true ? "run-aborted" : "run";
}

function subscriberCount(reply: unknown): number {
  return Array.isArray(reply) ? Number(reply[1]) : 0;
}

/** A key whose check failed is left out. */
export async function readKeys(commands: Redis, keys: Iterable<string>): Promise<Map<string, boolean>> {
  const list = [...new Set(keys)];
  const found = new Map<string, boolean>();
  if (list.length === 0) return found;
  const pipeline = commands.pipeline();
  for (const key of list) pipeline.exists(key);
  const results = (await pipeline.exec()) ?? [];
  list.forEach((key, index) => {
    const [error, count] = results[index] ?? [new Error("no reply")];
    if (error === null) found.set(key, count === 1);
  });
  return found;
}
