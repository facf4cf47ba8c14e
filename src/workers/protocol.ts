/**
 * The thread-crossing protocol; internal. Worker → main: `parentPort`.
 * Main → worker: the thread's own port, handed once in its first task's
 * transferList, and shared-memory flags where a busy thread cannot wait for
 * a message.
 */
import type { MessagePort } from "node:worker_threads";

import type { ThrownErrorFields } from "../errors.js";
import type { SpreadOutcome } from "../types.js";
import { restoreRepeats, type RepeatedString } from "./repeated-strings.js";

/** `definition` goes only until the thread has answered a call of that tool. */
export interface WorkerTask {
  seq: number;
  tool: number;
  definition?: WorkerToolDefinition;
  toolCallId: string;
  args: unknown;
  traceparent?: string;
  context?: unknown;
  /** Aborted before it reached its thread: no message was sent. */
  aborted?: AbortMessage;
  /** Only in the first task a thread runs. */
  port?: MessagePort;
}

export interface WorkerToolDefinition {
  moduleUrl: string;
  exportName: string;
  toolName: string;
  maxResultBytes: number;
}

type WorkerFaultCode = "TP_ERR_TOOL_LOAD" | "TP_ERR_RESULT_NOT_CLONEABLE" | "TP_ERR_RESULT_TOO_LARGE";

/** Never thrown; `retiredThreadId`: the task left work behind, so the thread serves no more. */
export type WorkerReply = (
  | { kind: "ok"; result: unknown; repeats?: RepeatedString[] }
  | { kind: "error"; message: string; thrown?: ThrownErrorFields }
  | { kind: "fault"; code: WorkerFaultCode; message: string }
) & { updates: number; retiredThreadId?: number; runMs?: number; undelivered?: true };

/** The commonest reply (a result, no partial, the thread serving on): a pair clones faster. */
export type OkPair = [result: unknown, runMs: number];

export function readWorkerReply(posted: WorkerReply | OkPair): WorkerReply {
  if (Array.isArray(posted)) return { kind: "ok", result: posted[0], updates: 0, runMs: posted[1] };
  if (posted.kind === "ok" && posted.repeats !== undefined) {
    restoreRepeats(posted.result, posted.repeats);
    delete posted.repeats;
  }
  return posted;
}

interface UpdateMessage {
  [updateTag]: true;
  seq: number;
  partial: unknown;
}

export const updateTag = "__toolpoolUpdate";

/** Posted once a thread's entry has loaded: Piscina marks its first workers ready before they load anything. */
interface BootMessage {
  [bootTag]: true;
  threadId: number;
}

export const bootTag = "__toolpoolBoot";

/** The call's module has loaded: an abort's grace counts from here. */
interface LoadedMessage {
  [loadedTag]: true;
  seq: number;
}

export const loadedTag = "__toolpoolLoaded";

/** Aborts call `abort`: its reason cloned, or a `DOMException` by name and message (Node 20 cannot clone one). */
export interface AbortMessage {
  abort: number;
  reason?: unknown;
  domException?: { name: string; message: string };
}

export type ThreadMessage = AbortMessage | SpreadReply;

export interface WorkerBootData {
  /** `[seq & flagSlotMask] === seq` once call `seq` is aborted: `signal.aborted`, polled. */
  abortFlags: Int32Array;
  leftoverGraceMs: number;
  /**
   * Per thread: the worker swaps in `seq` when its tool finishes, the pool
   * `-seq` before it terminates at a deadline; whoever swaps first decides.
   */
  endFlags: Int32Array;
  /** Per call: partials the pool has taken; `onUpdate` holds the next back past {@link maxUpdatesInFlight}. */
  takenUpdates: Int32Array;
  /** `[seq & flagSlotMask] === seq` once part `seq` is asked to yield: `ctx.shouldYield()`. */
  yieldFlags: Int32Array;
  /** `[threadId & flagSlotMask] === threadId` once the thread left work behind: read when Piscina frees it, before its reply. */
  retireFlags: Int32Array;
}

/** Partials in flight (posted, not taken) before the worker keeps only the latest. */
export const maxUpdatesInFlight = 16;

/** A power of two. Keys this far apart share a slot, which only delays a flag read. */
export const flagSlotCount = 65_536;
export const flagSlotMask = flagSlotCount - 1;

export const maxSeq = 0x7fff_ffff;

function hasTag(message: unknown, tag: string): boolean {
  return typeof message === "object" && message !== null && (message as Record<string, unknown>)[tag] === true;
}

export function isUpdateMessage(message: unknown): message is UpdateMessage {
  return hasTag(message, updateTag);
}

export function isBootMessage(message: unknown): message is BootMessage {
  return hasTag(message, bootTag);
}

export function isLoadedMessage(message: unknown): message is LoadedMessage {
  return hasTag(message, loadedTag);
}

/** Answered on the thread's own port. */
export interface SpreadRequest {
  [spreadTag]: true;
  seq: number;
  id: number;
  threadId: number;
  exportName: string;
  inputs: unknown[];
}

export const spreadTag = "__toolpoolSpread";

export interface SpreadReply {
  id: number;
  outcomes?: SpreadOutcome[];
  error?: string;
}

export const maxSpreadInputs = 64;

export function isSpreadRequest(message: unknown): message is SpreadRequest {
  return hasTag(message, spreadTag);
}
