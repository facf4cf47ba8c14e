import { deserialize, serialize } from "node:v8";

import type { RedisOptions } from "ioredis";

import type { PiVersion } from "../options.js";
import type { WorkerCallOutcome } from "../contracts/pool-contract.js";
import { restoreRepeats, shareRepeatedStrings, type RepeatedString } from "../workers/repeated-strings.js";
import { fleetProtocolVersion } from "./toolset.js";

/**
 * What a remote call's BullMQ job carries. BullMQ stores `data` as JSON, so
 * the arguments travel as base64 of `v8.serialize`: the same structured clone
 * as a local call's `postMessage`.
 */
export interface RemoteJobData {
  /** Protocol version: a node answers another with `TP_ERR_TOOL_MISMATCH`. */
  v: number;
  tool: string;
  /** The coordinator's fingerprint of the tool; a node answers another with `TP_ERR_TOOL_MISMATCH`. */
  fingerprint: string;
  /** base64 of `v8.serialize(validatedArgs)`. */
  args: string;
  toolCallId: string;
  /** The coordinator's reply stream: partials, then the end envelope. */
  replyTo: string;
  /**
   * Set once the call's batch is aborted; absent for a call with no abort
   * signal. A node that fetches the call with the key set does not start it
   * (it waited in the queue when the batch was aborted).
   */
  abortKey?: string;
  /**
   * The call was submitted after its batch was aborted: pi runs such a call
   * with an aborted signal, so the node starts it aborted (its tool decides
   * what that gives) instead of refusing it.
   */
  startsAborted?: true;
  /**
   * The coordinator listens to its pool's events: the node writes a start
   * entry when it starts the call. Absent otherwise, so an unobserved call
   * costs no more Redis commands (and a coordinator that does not ask never
   * reads an entry it would not know).
   */
  reportsStart?: true;
  /** The coordinator's presence key: a node starts no call whose coordinator's key is gone, and stops a running one. */
  presenceKey: string;
}

/** What a node sends back for a call, on the coordinator's reply stream. */
export type ReplyEntry =
  | { jobId: string; kind: "start"; node: string }
  | { jobId: string; kind: "update"; partial: unknown }
  | { jobId: string; kind: "end"; outcome: WorkerCallOutcome; executionMs: number };

/** Where a fleet's keys live in Redis, under one prefix. */
export class FleetKeys {
  readonly prefix: string;

  constructor(prefix: string) {
    this.prefix = prefix;
  }

  /** The BullMQ queue (under `prefix`) of one toolset: only nodes serving identical tools listen to it. */
  static queueName(toolsetHash: string): string {
    return `tp-${toolsetHash.slice(0, 16)}`;
  }

  /** The set of every node's id, live or not. */
  get nodes(): string {
    return `${this.prefix}:fleet:nodes`;
  }

  /** One node's registration, a JSON {@link NodeRecord} that expires unless renewed. */
  node(nodeId: string): string {
    return `${this.prefix}:fleet:node:${nodeId}`;
  }

  /** A coordinator's reply stream. */
  reply(coordinatorId: string): string {
    return `${this.prefix}:fleet:reply:${coordinatorId}`;
  }

  /** Present while a group of a coordinator's calls (those of one batch signal) is aborted. */
  abort(coordinatorId: string, group: number): string {
    return `${this.prefix}:fleet:abort:${coordinatorId}:${group}`;
  }

  /** A coordinator's presence key, renewed while it lives (see `CoordinatorPresence`). */
  presence(coordinatorId: string): string {
    return `${this.prefix}:fleet:coordinator:${coordinatorId}`;
  }

  /**
   * The pub/sub channel on which every node hears of aborts: a message is an
   * abort key (a batch aborted) or a presence key (its coordinator left).
   */
  get cancelChannel(): string {
    return `${this.prefix}:fleet:cancel`;
  }
}

/** A node's registration, renewed while it serves. */
export interface NodeRecord {
  name: string;
  toolsetHash: string;
  /** The pi of the coordinators it serves (part of `toolsetHash`); absent in a record of a node that predates the choice. */
  pi?: PiVersion;
  tools: string[];
  threads: number;
  pid: number;
  startedAt: number;
}

/** Field names of a reply stream entry: job id, kind (`s`, `u` or `e`), data. */
const updateKind = Buffer.from("u");
const startKind = Buffer.from("s");

/** The fields of a call's start entry (only when its job data has `reportsStart`), ready for XADD. */
export function encodeStart(jobId: string, node: string): [string, string, string, string, string, Buffer] {
  return ["j", jobId, "k", "s", "d", serialize({ node })];
}

/** The fields of a reply stream entry, ready for XADD. */
export function encodeUpdate(jobId: string, partial: unknown): [string, string, string, string, string, Buffer] {
  return ["j", jobId, "k", "u", "d", serialize(partial)];
}

/**
 * The fields of the end envelope of a call, ready for XADD. A long string
 * the result holds at several places is written once (`repeats`, see
 * `workers/repeated-strings.ts`), as a worker's reply crosses threads.
 */
export function encodeEnd(jobId: string, outcome: WorkerCallOutcome, executionMs: number): [string, string, string, string, string, Buffer] {
  const shared = outcome.kind === "ok" ? shareRepeatedStrings(outcome.result) : undefined;
  const envelope =
    shared === undefined ? { outcome, executionMs } : { outcome: { ...outcome, result: shared.result }, executionMs, repeats: shared.repeats };
  return ["j", jobId, "k", "e", "d", serialize(envelope)];
}

/** Reads one reply stream entry's fields (as XREAD returns them, buffers); undefined for a malformed one. */
export function decodeReply(fields: Buffer[]): ReplyEntry | undefined {
  let jobId: string | undefined;
  let kind: Buffer | undefined;
  let data: Buffer | undefined;
  for (let index = 0; index + 1 < fields.length; index += 2) {
    const name = fields[index]!.toString();
    if (name === "j") jobId = fields[index + 1]!.toString();
    else if (name === "k") kind = fields[index + 1];
    else if (name === "d") data = fields[index + 1];
  }
  if (jobId === undefined || kind === undefined || data === undefined) return undefined;
  try {
    if (kind.equals(updateKind)) return { jobId, kind: "update", partial: deserialize(data) };
    if (kind.equals(startKind)) return { jobId, kind: "start", node: String((deserialize(data) as { node: unknown }).node) };
    const { outcome, executionMs, repeats } = deserialize(data) as { outcome: WorkerCallOutcome; executionMs: number; repeats?: RepeatedString[] };
    if (repeats !== undefined && outcome.kind === "ok") restoreRepeats(outcome.result, repeats);
    return { jobId, kind: "end", outcome, executionMs };
  } catch {
    return undefined;
  }
}

/** The job data of a call. */
export function encodeJobData(fields: Omit<RemoteJobData, "v" | "args"> & { args: unknown }): RemoteJobData {
  return { ...fields, v: fleetProtocolVersion, args: serialize(fields.args).toString("base64") };
}

/** A job's arguments, as the coordinator validated them. */
export function decodeJobArgs(data: RemoteJobData): unknown {
  return deserialize(Buffer.from(data.args, "base64"));
}

/** ioredis options for a `redis://[user:password@]host[:port][/db]` (or `rediss://`) URL. */
export function redisOptionsFromUrl(url: string): RedisOptions {
  const parsed = new URL(url);
  const db = parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : 0;
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, "") || "127.0.0.1",
    port: parsed.port === "" ? 6379 : Number(parsed.port),
    ...(Number.isInteger(db) && db > 0 ? { db } : {}),
    ...(parsed.username === "" ? {} : { username: decodeURIComponent(parsed.username) }),
    ...(parsed.password === "" ? {} : { password: decodeURIComponent(parsed.password) }),
    ...(parsed.protocol === "rediss:" ? { tls: {} } : {}),
  };
}

/** Reconnects every 100 ms at first, backing off to 1 s: a restarted Redis is found again soon. */
export function reconnectDelay(attempt: number): number {
  return Math.min(100 * attempt, 1_000);
}
