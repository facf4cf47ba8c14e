/**
 * The thread-crossing protocol between the pool (main thread) and the worker
 * entry. Internal: none of these types is exported from the package.
 *
 * Channels, chosen so that an ordinary call costs no message beyond Piscina's
 * own task and result:
 * - task and result: Piscina's port (one message each way);
 * - partial results, loaded and boot notices, spread requests, worker →
 *   main: `parentPort.postMessage`, which Piscina re-emits as the pool's
 *   `message` event. The result carries how many partials were sent, so the
 *   pool waits for every partial before it settles the call, whatever order
 *   the two ports deliver in;
 * - main → worker, for the call a thread runs (its abort's reason, its
 *   spread answers): a port of the thread's own ({@link ThreadMessage}),
 *   handed to it once, with the first task it runs;
 * - flags a busy thread must see without a turn of its event loop: shared
 *   memory ({@link WorkerBootData}).
 */
import type { MessagePort } from "node:worker_threads";

import type { ThrownErrorFields } from "../errors.js";
import type { SpreadOutcome } from "../types.js";
import { restoreRepeats, type RepeatedString } from "./repeated-strings.js";

/**
 * A call as posted to a worker. The tool is named by its number in the pool;
 * its definition travels with a thread's first calls of it only (until the
 * pool has seen that thread answer one), so that an ordinary call's message
 * carries no module URL or names.
 */
export interface WorkerTask {
  /** The call's sequence number in its pool; keys the abort flag and partials. */
  seq: number;
  /** The tool's number in its pool. */
  tool: number;
  /** The tool's definition, for a thread that may not know the number yet. */
  definition?: WorkerToolDefinition;
  toolCallId: string;
  args: unknown;
  /** W3C `traceparent` of the call's span; present only when the call is traced. */
  traceparent?: string;
  /** The value of the tool's `context` function for this call; present only for tools that have one. */
  context?: unknown;
  /**
   * Present when the call was aborted before it reached its thread: the
   * abort message, which a thread started since was not there to hear.
   */
  aborted?: AbortMessage;
  /** The thread's own port ({@link ThreadMessage}s): only in the first task a thread runs. */
  port?: MessagePort;
}

/** What a worker needs to know of a tool, sent once per thread. */
export interface WorkerToolDefinition {
  moduleUrl: string;
  exportName: string;
  toolName: string;
  /** A result whose strings and buffers add up to more bytes fails with `TP_ERR_RESULT_TOO_LARGE`. */
  maxResultBytes: number;
}

/** Faults the worker entry detects itself, the worker surviving them. */
type WorkerFaultCode = "TP_ERR_TOOL_LOAD" | "TP_ERR_RESULT_NOT_CLONEABLE" | "TP_ERR_RESULT_TOO_LARGE";

/**
 * What the worker entry returns for a task; never thrown, always a value.
 * `updates` counts the partials sent; `retiredThreadId` is set when the task
 * left work behind (timers, open handles) and its worker must not serve again;
 * `runMs` is how long the tool's execute took, timed in the worker.
 */
export type WorkerReply = (
  | { kind: "ok"; result: unknown; repeats?: RepeatedString[] }
  | { kind: "error"; message: string; thrown?: ThrownErrorFields }
  | { kind: "fault"; code: WorkerFaultCode; message: string }
) & { updates: number; retiredThreadId?: number; runMs?: number };

/**
 * The commonest reply as the worker posts it: a result, no partial sent,
 * and the thread serving on, as `[result, runMs]`. A pair crosses threads
 * for ~0.3 µs less than the object (measured through a port with Piscina's
 * own wrapper: 2.30 against 2.63 µs), on the path of every call.
 */
export type OkPair = [result: unknown, runMs: number];

/** The reply a worker posted, as the pool reads it: a result's repeated strings put back in place. */
export function readWorkerReply(posted: WorkerReply | OkPair): WorkerReply {
  if (Array.isArray(posted)) return { kind: "ok", result: posted[0], updates: 0, runMs: posted[1] };
  if (posted.kind === "ok" && posted.repeats !== undefined) {
    restoreRepeats(posted.result, posted.repeats);
    delete posted.repeats;
  }
  return posted;
}

/** A partial result posted by a worker through `parentPort`. */
interface UpdateMessage {
  [updateTag]: true;
  seq: number;
  partial: unknown;
}

/** Marks toolpool's partial-result messages among whatever else arrives on the pool's `message` event. */
export const updateTag = "__toolpoolUpdate";

/**
 * Posted once by a worker when its entry module has loaded, through
 * `parentPort`: the pool's evidence that threads do start (Piscina marks its
 * first workers ready before they have loaded anything).
 */
interface BootMessage {
  [bootTag]: true;
  threadId: number;
}

/** Marks toolpool's boot messages on the pool's `message` event. */
export const bootTag = "__toolpoolBoot";

/**
 * Posted by a worker through `parentPort` when a call that came with its
 * tool's definition (the thread had not answered a call of that tool yet)
 * has its tool's module loaded, or failed to load it, and is about to run:
 * an abort's grace counts from here, not from the module's load.
 */
interface LoadedMessage {
  [loadedTag]: true;
  seq: number;
}

/** Marks toolpool's loaded messages on the pool's `message` event. */
export const loadedTag = "__toolpoolLoaded";

/**
 * The message that aborts call `abort` on the thread that runs it: with the batch signal's reason, cloned (`reason`), or a
 * `DOMException`'s name and message, which Node 20 cannot clone; with
 * neither, the default `AbortError`.
 */
export interface AbortMessage {
  abort: number;
  reason?: unknown;
  domException?: { name: string; message: string };
}

/** What the pool sends on a thread's own port: an abort, or a spread answer. */
export type ThreadMessage = AbortMessage | SpreadReply;

/** Data every worker gets at start-up: the flags a busy thread reads without a turn of its event loop. */
export interface WorkerBootData {
  /** `abortFlags[seq & flagSlotMask] === seq` once call `seq` is aborted: a tool in a busy loop polls `signal.aborted`. */
  abortFlags: Int32Array;
  /** Milliseconds a task's leftover work may take to settle before its worker is retired. */
  leftoverGraceMs: number;
  /**
   * The handshake that keeps a finished call from being reported as timed
   * out, one slot per thread (`threadId & flagSlotMask`; a thread runs one
   * call at a time). The worker swaps in its call's `seq` once the tool has
   * finished, before the reply is posted; the pool swaps in `-seq` before it
   * terminates the thread at a deadline or past an abort's grace. Whoever
   * swaps first decides: a pool that finds `seq` waits for the reply (it is
   * on its way, or behind a busy main thread), and a worker that finds `-seq`
   * knows its reply will not count.
   */
  endFlags: Int32Array;
  /**
   * `takenUpdates[seq & flagSlotMask]`: how many of call `seq`'s partials the
   * pool has taken off the port. A worker with {@link maxUpdatesInFlight}
   * partials not yet taken holds the next ones back, keeping only the latest,
   * so a main thread that falls behind never has more than that many of a
   * call's partials queued.
   */
  takenUpdates: Int32Array;
  /**
   * `yieldFlags[seq & flagSlotMask] === seq` once the pool asks call `seq`, a
   * part of a spread call, to give its thread back (calls of another session
   * wait for one): `ctx.shouldYield()`.
   */
  yieldFlags: Int32Array;
}

/**
 * Partials of one call that may be in flight between its worker and the pool
 * (posted, not yet taken) before the worker coalesces the next ones, latest
 * wins. Large enough that a main thread keeping up never sees it.
 */
export const maxUpdatesInFlight = 16;

/** Slots of the shared flag arrays; a power of two. Keys 65,536 apart share a slot, which only delays a flag read. */
export const flagSlotCount = 65_536;
export const flagSlotMask = flagSlotCount - 1;

/** Sequence numbers wrap within the positive int32 range so they fit the flag array. */
export const maxSeq = 0x7fff_ffff;

/** Whether a message posted on the pool's `message` event carries `tag` (each kind of toolpool message has its own). */
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

/**
 * A call's `ctx.spread` request, worker → main through `parentPort`: run
 * `exportName` of the call's own module once per input on idle threads.
 * Answered once, on the thread's own port, with a {@link SpreadReply}.
 */
export interface SpreadRequest {
  [spreadTag]: true;
  /** The calling call's sequence number. */
  seq: number;
  /** The request's number on its thread. */
  id: number;
  threadId: number;
  exportName: string;
  inputs: unknown[];
}

/** Marks toolpool's spread requests on the pool's `message` event. */
export const spreadTag = "__toolpoolSpread";

/** The answer to a {@link SpreadRequest}: an outcome per input, or why none was run. */
export interface SpreadReply {
  id: number;
  outcomes?: SpreadOutcome[];
  error?: string;
}

/** Most inputs one `ctx.spread` takes. */
export const maxSpreadInputs = 64;

export function isSpreadRequest(message: unknown): message is SpreadRequest {
  return hasTag(message, spreadTag);
}
