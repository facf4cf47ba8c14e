import { deserialize, serialize } from "node:v8";

import type { RedisOptions } from "ioredis";

import type { PiVersion } from "../options.js";
import type { WorkerCallOutcome } from "../contracts/pool-contract.js";
import { restoreRepeats, shareRepeatedStrings, type RepeatedString } from "../workers/repeated-strings.js";
import { fleetProtocolVersion } from "./toolset.js";

/** BullMQ stores `data` as JSON, so the arguments travel as base64 of `v8.serialize`, the structured clone of a local call. */
export interface RemoteJobData {
  /** Protocol version: a node answers another with `TP_ERR_TOOL_MISMATCH`. */
  v: number;
  tool: string;
  /** The coordinator's fingerprint of the tool; a node answers another with `TP_ERR_TOOL_MISMATCH`. */
  fingerprint: string;
  args: string;
  toolCallId: string;
  /** Partials, then the end envelope. */
  replyTo: string;
  /** Set once the batch is aborted: a node that fetches the call then does not start it. */
  abortKey?: string;
  /** Submitted after its batch's abort: pi runs such a call with an aborted signal, so the node does too. */
  startsAborted?: true;
  /** Only when the coordinator listens to pool events, so an unobserved call costs no extra Redis command. */
  reportsStart?: true;
  /** A node starts no call whose coordinator's key is gone, and stops a running one. */
  presenceKey: string;
}

export type ReplyEntry =
  | { jobId: string; kind: "start"; node: string }
  | { jobId: string; kind: "update"; partial: unknown }
  | { jobId: string; kind: "end"; outcome: WorkerCallOutcome; executionMs: number };

export class FleetKeys {
  readonly prefix: string;

  constructor(prefix: string) {
    this.prefix = prefix;
  }

  /** Only nodes serving identical tools listen to a toolset's queue. */
  static queueName(toolsetHash: string): string {
    return `tp-${toolsetHash.slice(0, 16)}`;
  }

  /** Every node's id, live or not. */
  get nodes(): string {
    return `${this.prefix}:fleet:nodes`;
  }

  /** A JSON {@link NodeRecord} that expires unless renewed. */
  node(nodeId: string): string {
    return `${this.prefix}:fleet:node:${nodeId}`;
  }

  reply(coordinatorId: string): string {
    return `${this.prefix}:fleet:reply:${coordinatorId}`;
  }

  /** Present while a group of a coordinator's calls (those of one batch signal) is aborted. */
  abort(coordinatorId: string, group: number): string {
    return `${this.prefix}:fleet:abort:${coordinatorId}:${group}`;
  }

  /** Renewed while the coordinator lives (see `CoordinatorPresence`). */
  presence(coordinatorId: string): string {
    return `${this.prefix}:fleet:coordinator:${coordinatorId}`;
  }

  /** Every node hears of aborts here: a message is an abort key (a batch aborted) or a presence key (its coordinator left). */
  get cancelChannel(): string {
    return `${this.prefix}:fleet:cancel`;
  }
}

export interface NodeRecord {
  name: string;
  toolsetHash: string;
  /** Part of `toolsetHash`; absent in a record of a node that predates the choice. */
  pi?: PiVersion;
  tools: string[];
  threads: number;
  pid: number;
  startedAt: number;
}

/** Field names of a reply stream entry: job id, kind (`s`, `u` or `e`), data. */
const updateKind = Buffer.from("u");
const startKind = Buffer.from("s");

/** Only when its job data has `reportsStart`. */
export function encodeStart(jobId: string, node: string): [string, string, string, string, string, Buffer] {
  return ["j", jobId, "k", "s", "d", serialize({ node })];
}

export function encodeUpdate(jobId: string, partial: unknown): [string, string, string, string, string, Buffer] {
  return ["j", jobId, "k", "u", "d", serialize(partial)];
}

/** A long string the result holds at several places is written once (`repeats`), as a worker's reply crosses threads. */
export function encodeEnd(jobId: string, outcome: WorkerCallOutcome, executionMs: number): [string, string, string, string, string, Buffer] {
  const shared = outcome.kind === "ok" ? shareRepeatedStrings(outcome.result) : undefined;
  const envelope =
    shared === undefined ? { outcome, executionMs } : { outcome: { ...outcome, result: shared.result }, executionMs, repeats: shared.repeats };
  return ["j", jobId, "k", "e", "d", serialize(envelope)];
}

/** XREAD's buffers; undefined for a malformed entry. */
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

export function encodeJobData(fields: Omit<RemoteJobData, "v" | "args"> & { args: unknown }): RemoteJobData {
  return { ...fields, v: fleetProtocolVersion, args: serialize(fields.args).toString("base64") };
}

export function decodeJobArgs(data: RemoteJobData): unknown {
  return deserialize(Buffer.from(data.args, "base64"));
}

/** For `redis://[user:password@]host[:port][/db]` or `rediss://`. */
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

/** Backs off to a second at most: a restarted Redis is found again soon. */
export function reconnectDelay(attempt: number): number {
  return Math.min(100 * attempt, 1_000);
}
