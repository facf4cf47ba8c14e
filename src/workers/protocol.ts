/**
 * The thread-crossing protocol between the pool (main thread) and the worker
 * entry; internal. An ordinary call costs Piscina's task and result messages
 * only. Worker → main: `parentPort` (Piscina's `message` event) for partials,
 * notices and spread requests. Main → worker: the thread's own port, handed
 * with its first task, for the call it runs; and shared-memory flags where a
 * busy thread cannot wait for a message.
 */
import type { MessagePort } from "node:worker_threads";

import type { ThrownErrorFields } from "../errors.js";
import type { SpreadOutcome } from "../types.js";
import { restoreRepeats, type RepeatedString } from "./repeated-strings.js";

/** A call as posted to a worker; its tool's definition goes only until the thread has answered a call of it. */
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
  /** The thread's own port: only in the first task a thread runs. */
  port?: MessagePort;
}

export interface WorkerToolDefinition {
  moduleUrl: string;
  exportName: string;
  toolName: string;
  maxResultBytes: number;
}

type WorkerFaultCode = "TP_ERR_TOOL_LOAD" | "TP_ERR_RESULT_NOT_CLONEABLE" | "TP_ERR_RESULT_TOO_LARGE";

/** What the worker entry returns for a task, never throws; `retiredThreadId`: the task left work behind, the thread serves no more. */
export type WorkerReply = (
  | { kind: "ok"; result: unknown; repeats?: RepeatedString[] }
  | { kind: "error"; message: string; thrown?: ThrownErrorFields }
  | { kind: "fault"; code: WorkerFaultCode; message: string }
) & { updates: number; retiredThreadId?: number; runMs?: number };

/** The commonest reply (a result, no partial, the thread serving on): a pair clones faster than the object. */
export type OkPair = [result: unknown, runMs: number];

/** A result's repeated strings put back in place. */
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

/** A call that came with its tool's definition is past the module's load: an abort's grace counts from here. */
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

/** What every worker starts with: flags a thread reads while busy, or decides by an atomic swap. */
export interface WorkerBootData {
  /** `[seq & flagSlotMask] === seq` once call `seq` is aborted: `signal.aborted`, polled. */
  abortFlags: Int32Array;
  leftoverGraceMs: number;
  /**
   * Per thread: the worker swaps in `seq` when its tool finishes, the pool
   * `-seq` before it terminates at a deadline; whoever swaps first decides
   * whether a finished call is reported overrun.
   */
  endFlags: Int32Array;
  /** Per call: partials the pool has taken; `onUpdate` holds the next back past {@link maxUpdatesInFlight}. */
  takenUpdates: Int32Array;
  /** `[seq & flagSlotMask] === seq` once spread part `seq` is asked to give its thread back: `ctx.shouldYield()`. */
  yieldFlags: Int32Array;
}

/** Partials in flight (posted, not taken) before the worker keeps only the latest. */
export const maxUpdatesInFlight = 16;

/** Slots of the shared flag arrays; a power of two. Keys 65,536 apart share a slot, which only delays a flag read. */
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

/** `ctx.spread`: run `exportName` of the call's module once per input; answered on the thread's port. */
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
