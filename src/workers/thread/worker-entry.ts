/**
 * The worker entry: Piscina loads this file in every worker thread and calls
 * its default export once per call. It imports each tool module once per
 * thread, runs the tool's execute with `ctx = { toolCallId, signal, onUpdate }`
 * and always returns a {@link WorkerReply} value: a tool's throw is pi's error
 * message computed here, in the realm where `instanceof Error` is meaningful,
 * and a result that could not cross the thread boundary is caught here, where
 * the worker survives it.
 *
 * Longer than the house's ~400 lines: the bundle (scripts/bundle.mjs) makes
 * this file one CommonJS file that every worker thread loads before its
 * first call, and a call's way through the thread (the abort flag and
 * channel, the reused signal, the run, the reply and its checks) shares the
 * thread's state declared here; what stands alone (inspecting a result,
 * moving it, importing a tool module, the spread client) is in its own
 * module beside it.
 */
import { getEventListeners } from "node:events";
import { BroadcastChannel, parentPort, receiveMessageOnPort, threadId, workerData, type MessagePort } from "node:worker_threads";

import { describeThrown, thrownFieldsOf, type ThrownErrorFields } from "../../errors.js";
import { runWithRemoteParent } from "../../tracing/remote-parent.js";
import type { AgentToolResult, SpreadOutcome, WorkerToolContext } from "../../types.js";
import { importToolModule } from "./import-tool-module.js";
import { inspectResult } from "./inspect-result.js";
import { moveToHost } from "./move-to-host.js";
import { dropSpreadsOf, requestSpread } from "./spread-client.js";
import { shareRepeatedStrings } from "../repeated-strings.js";
import {
  bootTag,
  flagSlotMask,
  loadedTag,
  maxUpdatesInFlight,
  updateTag,
  type AbortMessage,
  type OkPair,
  type WorkerBootData,
  type WorkerReply,
  type WorkerTask,
  type WorkerToolDefinition,
} from "../protocol.js";

const boot = workerData as WorkerBootData;
const running = new Map<number, AbortController>();
const modules = new Map<string, Promise<Record<string, unknown>>>();
/** A tool this thread knows, by its number in the pool; `execute` once its module has loaded. */
interface KnownTool extends WorkerToolDefinition {
  execute: ToolExecute | undefined;
}
const tools = new Map<number, KnownTool>();
/** Resources pending at the end of the last call that left none behind. */
let resourceBaseline: number | undefined;

// Fires the `abort` event of a call that is awaiting something. A call in a
// busy loop never reaches its event loop; it sees the shared flag instead,
// and takes its reason from the channel then (see `reasonOf`).
const control = new BroadcastChannel(boot.controlChannel);
control.onmessage = (event) => takeAbortMessage((event as { data?: AbortMessage }).data);
// An idle worker must not be kept alive by the channel.
control.unref();
warmUpChannels();

/**
 * Reasons of aborts this thread heard of before their call took its signal
 * (or of other threads' calls: the channel tells every thread), newest
 * last; bounded, the oldest dropped first.
 */
const heardReasons = new Map<number, unknown>();
const maxHeardReasons = 256;
/** The call this thread runs now (one at a time); undefined between calls. */
let currentSeq: number | undefined;

function takeAbortMessage(message: AbortMessage | undefined): void {
  const seq = message?.abort;
  if (seq === undefined) return;
  const reason = abortReasonOf(message!);
  const controller = running.get(seq);
  if (controller !== undefined) {
    controller.abort(reason);
    return;
  }
  heardReasons.delete(seq);
  heardReasons.set(seq, reason);
  if (heardReasons.size > maxHeardReasons) {
    // The oldest goes, unless it is the reason of the call this thread runs (its signal not taken yet).
    let oldest = heardReasons.keys().next().value!;
    if (oldest === currentSeq) {
      const kept = heardReasons.get(oldest);
      heardReasons.delete(oldest);
      heardReasons.set(oldest, kept);
      oldest = heardReasons.keys().next().value!;
    }
    heardReasons.delete(oldest);
  }
}

/** The reason an abort message carries, as the batch's signal had it. */
function abortReasonOf(message: AbortMessage): unknown {
  if (message.domException !== undefined) return new DOMException(message.domException.message, message.domException.name);
  return "reason" in message ? message.reason : createAbortReason();
}

/**
 * The reason of call `seq`'s abort, whose flag is set: from its message,
 * taken off the channel now if it has not been dispatched yet (a tool in a
 * busy loop never lets it be); the default `AbortError` if it is not there.
 */
function reasonOf(seq: number): unknown {
  // Node takes a BroadcastChannel here too (its types say only MessagePort).
  const port = control as unknown as MessagePort;
  // Until this call's message is found: kept as heard, or (its signal taken) already used to abort it.
  const isFound = () => heardReasons.has(seq) || abortedGetter.call(running.get(seq)?.signal ?? neverAborted);
  while (!isFound()) {
    const taken = receiveMessageOnPort(port);
    if (taken === undefined) break;
    takeAbortMessage(taken.message as AbortMessage);
  }
  const reason = heardReasons.has(seq) ? heardReasons.get(seq) : createAbortReason();
  heardReasons.delete(seq);
  return reason;
}

/**
 * Node 22 and later load the `MessageEvent` class (with the fetch stack
 * it comes from, some 80 modules and ~25 ms) only when a thread receives its
 * first channel message, which made a thread's first abort that late. It is
 * loaded here, before the thread takes any call.
 */
function warmUpChannels(): void {
  void globalThis.MessageEvent;
}

// Tells the pool this thread has started: Piscina's own readiness is not
// evidence of that for its first workers.
parentPort!.postMessage({ [bootTag]: true, threadId });

const abortedGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")!.get!;
const neverAborted = new AbortController().signal;
const reasonGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "reason")!.get!;

export default function runWorkerTask(task: WorkerTask): unknown {
  currentSeq = task.seq;
  // Aborted before it got here: this thread may have started after the message.
  if (task.aborted !== undefined) takeAbortMessage(task.aborted);
  let tool = tools.get(task.tool);
  if (task.definition !== undefined && tool === undefined) tools.set(task.tool, (tool = { ...task.definition, execute: undefined }));
  if (tool === undefined) {
    // The pool sends a definition until it has seen this thread answer a call of the tool.
    const message = `Tool number ${task.tool} is unknown to worker thread ${threadId}`;
    markEnded(task.seq);
    return { kind: "fault", code: "TP_ERR_TOOL_LOAD", message, updates: 0 } satisfies WorkerReply;
  }
  // A tool already loaded runs at once; a call whose tool is not loaded yet
  // waits for the import first.
  if (tool.execute !== undefined) {
    if (task.definition !== undefined) postLoaded(task.seq);
    return runCall(task, tool, tool.execute);
  }
  const known = tool;
  return loadExecute(known).then((loaded) => {
    postLoaded(task.seq);
    if (typeof loaded !== "function") {
      markEnded(task.seq);
      return { kind: "fault", code: "TP_ERR_TOOL_LOAD", message: loaded, updates: 0 } satisfies WorkerReply;
    }
    known.execute = loaded;
    // A module's start-up work is not the call's leftover: count afresh.
    resourceBaseline = undefined;
    return runCall(task, known, loaded);
  });
}

/**
 * Tells the pool that call `seq`, which came with its tool's definition, is
 * past its module's load: an abort's grace counts from now (the pool waits
 * for this message from a thread that has not answered a call of the tool).
 */
function postLoaded(seq: number): void {
  parentPort!.postMessage({ [loadedTag]: true, seq });
}

/**
 * Runs one call of a loaded tool. A tool that returns without a promise is
 * answered in the same turn, with no promise of the worker's own; a promise
 * is awaited, as pi awaits `execute`.
 */
function runCall(task: WorkerTask, tool: KnownTool, execute: ToolExecute): unknown {
  // What was pending before the call; anything more afterwards is work the
  // call left behind. Between calls the worker sleeps in Atomics.wait, so the
  // count at the end of the last call still holds.
  const call = new CallRun(task, tool, (resourceBaseline ??= process.getActiveResourcesInfo().length));
  let value: unknown;
  let isPending: boolean;
  try {
    const ctx = new CallContext(task, call);
    value = task.traceparent === undefined ? execute(task.args, ctx) : runWithRemoteParent(task.traceparent, () => execute(task.args, ctx));
    isPending = isThenable(value);
  } catch (error) {
    return call.finish(errorOutcomeOf(error));
  }
  if (!isPending) return call.finish({ kind: "ok", result: value });
  return Promise.resolve(value).then(
    (result) => call.finish({ kind: "ok", result }),
    (error: unknown) => call.finish(errorOutcomeOf(error)),
  );
}

type ErrorOutcome = { kind: "error"; message: string; thrown?: ThrownErrorFields };

/** A tool's throw: pi's text for it, and what else its `Error` had (its `code`…) for a caller of `execute`. */
function errorOutcomeOf(error: unknown): ErrorOutcome {
  const thrown = thrownFieldsOf(error);
  return thrown === undefined ? { kind: "error", message: describeThrown(error) } : { kind: "error", message: describeThrown(error), thrown };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as { then?: unknown }).then === "function";
}

/** One call on this thread: its partial results, run time and the reply built from its outcome. */
class CallRun {
  readonly #task: WorkerTask;
  readonly #tool: KnownTool;
  readonly #resourcesBefore: number;
  readonly #startedAt = performance.now();
  #updates = 0;
  #unclonedUpdate: string | undefined;
  /** The latest partial held back while the pool has too many of this call's to take; see {@link maxUpdatesInFlight}. */
  #heldUpdate: AgentToolResult<unknown> | undefined;
  #isHoldingUpdate = false;
  #heldUpdateTimer: NodeJS.Timeout | undefined;
  /** Set once the outcome is in: the call's `ctx` no longer acts. */
  isFinished = false;

  constructor(task: WorkerTask, tool: KnownTool, resourcesBefore: number) {
    this.#task = task;
    this.#tool = tool;
    this.#resourcesBefore = resourcesBefore;
  }

  /**
   * The call's `ctx.onUpdate`: a function of its own, since tools may call it
   * detached. A partial sent once the tool has settled is dropped here, at
   * its source: it would cross on another port than the reply and could reach
   * the coordinator before it, and pi (1.6) emits no partial a tool sends
   * after its execute settled.
   */
  readonly onUpdate = (partialResult: AgentToolResult<unknown>): void => {
    if (this.isFinished) return;
    // The pool's count of this call's partials starts at zero (the slot may
    // hold another call's): set before the first partial can reach the pool.
    if (this.#updates === 0 && !this.#isHoldingUpdate) Atomics.store(boot.takenUpdates, this.#task.seq & flagSlotMask, 0);
    if (this.#isHoldingUpdate || this.#isPoolBehind()) {
      // Latest wins: a partial is a snapshot of progress, and the pool is
      // behind; only the newest is worth its memory.
      this.#heldUpdate = partialResult;
      this.#isHoldingUpdate = true;
      this.#heldUpdateTimer ??= setTimeout(() => this.#postHeldUpdate(), heldUpdatePollMs);
      return;
    }
    this.#post(partialResult);
  };

  #isPoolBehind(): boolean {
    return this.#updates - Atomics.load(boot.takenUpdates, this.#task.seq & flagSlotMask) >= maxUpdatesInFlight;
  }

  /** A method, not a field: the closure a timer needs is made only by a call that holds a partial back. */
  #postHeldUpdate(): void {
    this.#heldUpdateTimer = undefined;
    if (!this.#isHoldingUpdate || this.isFinished) return;
    if (this.#isPoolBehind()) {
      this.#heldUpdateTimer = setTimeout(() => this.#postHeldUpdate(), heldUpdatePollMs);
      return;
    }
    this.#postHeld();
  }

  #postHeld(): void {
    const partial = this.#heldUpdate!;
    this.#heldUpdate = undefined;
    this.#isHoldingUpdate = false;
    this.#post(partial);
  }

  #post(partialResult: AgentToolResult<unknown>): void {
    try {
      parentPort!.postMessage({ [updateTag]: true, seq: this.#task.seq, partial: partialResult });
      this.#updates += 1;
    } catch (error) {
      // onUpdate never throws into the tool (pi's does not either); the call
      // fails once the tool returns.
      this.#unclonedUpdate ??= describeThrown(error);
    }
  }

  /** The reply for the tool's outcome; a promise only when the call left work behind that needs a grace period. */
  finish(outcome: { kind: "ok"; result: unknown } | ErrorOutcome): unknown {
    const runMs = performance.now() - this.#startedAt;
    const task = this.#task;
    const { toolName, maxResultBytes } = this.#tool;
    if (this.#heldUpdateTimer !== undefined) clearTimeout(this.#heldUpdateTimer);
    // The newest progress is sent before the result, as the tool sent it before returning.
    if (this.#isHoldingUpdate) this.#postHeld();
    this.isFinished = true;
    markEnded(task.seq);
    running.delete(task.seq);
    dropSpreadsOf(task.seq);
    const updates = this.#updates;
    let reply: WorkerReply;
    let transferables: ArrayBuffer[] = [];
    if (outcome.kind !== "ok") {
      reply = { ...outcome, updates, runMs };
    } else if (this.#unclonedUpdate !== undefined) {
      reply = fault(
        "TP_ERR_RESULT_NOT_CLONEABLE",
        `Tool "${toolName}" sent a partial result that cannot be cloned across threads: ${this.#unclonedUpdate}`,
        updates,
        runMs,
      );
    } else {
      const inspection = inspectResult(outcome.result, maxResultBytes);
      if (inspection.uncloneable !== undefined) {
        reply = fault(
          "TP_ERR_RESULT_NOT_CLONEABLE",
          `Tool "${toolName}" returned a result that cannot be cloned across threads: ${inspection.uncloneable}`,
          updates,
          runMs,
        );
      } else if (inspection.isTooLarge) {
        reply = fault(
          "TP_ERR_RESULT_TOO_LARGE",
          `Tool "${toolName}" returned ${inspection.bytes} bytes, more than maxResultBytes (${maxResultBytes})`,
          updates,
          runMs,
        );
      } else {
        reply = { kind: "ok", result: outcome.result, updates, runMs };
        transferables = inspection.transferables;
        const shared = inspection.longStrings > 1 ? shareRepeatedStrings(outcome.result) : undefined;
        if (shared !== undefined) reply = { ...reply, result: shared.result, repeats: shared.repeats };
      }
    }
    const resourcesAfter = process.getActiveResourcesInfo().length;
    if (resourcesAfter <= this.#resourcesBefore) {
      resourceBaseline = resourcesAfter;
      if (reply.kind === "ok" && updates === 0 && reply.repeats === undefined) {
        return withTransferables([reply.result, runMs] satisfies OkPair, transferables);
      }
      return withTransferables(reply, transferables);
    }
    return leftoverWorkSettles(this.#resourcesBefore).then((settled) => {
      if (settled) resourceBaseline = undefined;
      else {
        // The worker must not serve another call: the leftover work would run, and
        // could throw, during an unrelated call. The flag is set before the reply
        // is posted, so the pool's balancer sees it before it could reuse us.
        Atomics.store(boot.retireFlags, threadId & flagSlotMask, threadId);
        reply.retiredThreadId = threadId;
      }
      return withTransferables(reply, transferables);
    });
  }
}

/** The reply as Piscina posts it: large buffers are moved, not copied. */
function withTransferables(reply: WorkerReply | OkPair, transferables: ArrayBuffer[]): unknown {
  if (transferables.length === 0) return reply;
  return moveToHost(reply, transferables);
}

type ToolExecute = (args: unknown, ctx: WorkerToolContext<unknown>) => unknown;

/** The tool's execute function, or why it cannot be had. A failed import is cached: every call fails alike, at once. */
async function loadExecute(tool: WorkerToolDefinition): Promise<ToolExecute | string> {
  let execute: unknown;
  try {
    execute = (await loadModule(tool.moduleUrl))[tool.exportName];
  } catch (error) {
    // ES module syntax in a file Node loads as CommonJS (a .cjs file, or .js under "type": "commonjs").
    const isCommonJsLoad =
      error instanceof SyntaxError && /Unexpected token 'export'|Cannot use import statement outside a module/.test(error.message);
    return `Tool "${tool.toolName}" could not be loaded from ${tool.moduleUrl}: ${describeThrown(error)}${isCommonJsLoad ? ` (worker modules are ES modules: name the file .mjs, or set "type": "module" in the package.json that governs it)` : ""}`;
  }
  if (typeof execute !== "function") {
    return `Tool "${tool.toolName}": module ${tool.moduleUrl} has no function export "${tool.exportName}"`;
  }
  return execute as ToolExecute;
}

/**
 * Tells the pool the tool has finished and its reply follows, before it is
 * posted: a deadline that fires now (or fired behind a busy main thread)
 * waits for the reply instead of reporting a finished call as timed out. If
 * the pool swapped first, this thread is being terminated; nothing to do.
 */
function markEnded(seq: number): void {
  if (currentSeq === seq) currentSeq = undefined;
  Atomics.exchange(boot.endFlags, threadId & flagSlotMask, seq);
}

/** How often a held-back partial checks whether the pool has caught up. */
const heldUpdatePollMs = 5;

function fault(code: "TP_ERR_RESULT_NOT_CLONEABLE" | "TP_ERR_RESULT_TOO_LARGE", message: string, updates: number, runMs: number): WorkerReply {
  return { kind: "fault", code, message, updates, runMs };
}

/**
 * Gives a call's leftover work (un-awaited timers, I/O) `leftoverGraceMs` to
 * finish, so that fire-and-forget work does not cost a worker each time. An
 * uncaught error meanwhile crashes the worker while the call is still in
 * flight, so it is charged to the call it belongs to.
 */
async function leftoverWorkSettles(resourcesBefore: number): Promise<boolean> {
  const deadline = performance.now() + boot.leftoverGraceMs;
  while (performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    // The timer that woke us is gone by now, so the counts compare directly.
    if (process.getActiveResourcesInfo().length <= resourcesBefore) return true;
  }
  return false;
}

function loadModule(url: string): Promise<Record<string, unknown>> {
  let loading = modules.get(url);
  if (loading === undefined) {
    loading = importToolModule(url);
    modules.set(url, loading);
  }
  return loading;
}

/**
 * The tool's `ctx`. Its signal is taken on first use, by a getter on the
 * prototype (none is made per call): most calls never look. An abort that
 * came before is not missed: the shared flag still says so.
 */
class CallContext implements WorkerToolContext<unknown> {
  readonly toolCallId: string;
  readonly onUpdate: WorkerToolContext<unknown>["onUpdate"];
  declare readonly traceparent?: string;
  declare readonly context?: unknown;
  readonly #seq: number;
  readonly #run: CallRun;
  #signal: AbortSignal | undefined;

  constructor(task: WorkerTask, run: CallRun) {
    this.toolCallId = task.toolCallId;
    this.onUpdate = run.onUpdate;
    this.#seq = task.seq;
    this.#run = run;
    if (task.traceparent !== undefined) (this as { traceparent?: string }).traceparent = task.traceparent;
    if (task.context !== undefined) (this as { context?: unknown }).context = task.context;
  }

  get signal(): AbortSignal {
    return (this.#signal ??= takeCallSignal(this.#seq));
  }

  /** Whether the pool asks this call (a spread call's part) to give its thread back; one read of shared memory. */
  shouldYield(): boolean {
    return Atomics.load(boot.yieldFlags, this.#seq & flagSlotMask) === this.#seq;
  }

  /** Runs parts of the call on idle threads. The request is posted at once: parts start while the call goes on. */
  spread<TOutput = unknown>(exportName: string, inputs: readonly unknown[]): Promise<SpreadOutcome<TOutput>[]> {
    // A ctx kept past its call would ask for a call the pool no longer runs.
    if (this.#run.isFinished) return Promise.reject(new Error("ctx.spread: the call has ended"));
    return requestSpread(boot.controlChannel, this.#seq, exportName, inputs) as Promise<SpreadOutcome<TOutput>[]>;
  }
}

/** A call's abort signal, with the call it currently belongs to. */
interface CallSignal {
  readonly controller: AbortController;
  readonly signal: AbortSignal;
  /** Reads the shared flag of `seq`; aborts the signal if it is set. */
  readonly sync: () => void;
  /** Aborts the signal (unless it is already) if the flag or a message this thread heard says its call is aborted. */
  readonly abortHeard: () => void;
  seq: number;
}

/**
 * The last call's signal, for the next call to reuse. An AbortController and
 * its accessors cost microseconds a call, and every built-in tool looks at its
 * signal. Reuse is safe only while nothing of the last call can tell: the
 * signal was never aborted and no listener is left on it.
 */
let spareSignal: CallSignal | undefined;

function takeCallSignal(seq: number): AbortSignal {
  const spare = spareSignal;
  const callSignal = spare !== undefined && isUntouched(spare.signal) ? spare : createCallSignal();
  spareSignal = callSignal;
  callSignal.seq = seq;
  running.set(seq, callSignal.controller);
  // Taken after an abort whose message this thread has already seen (or never
  // will): fire the event on the next turn, as that message would have, so a
  // tool that takes the signal and then listens still hears it.
  // (The message can come a moment before the flag is set: either tells.)
  if (Atomics.load(boot.abortFlags, seq & flagSlotMask) === seq || heardReasons.has(seq)) setImmediate(callSignal.abortHeard);
  return callSignal.signal;
}

function isUntouched(signal: AbortSignal): boolean {
  return !abortedGetter.call(signal) && signal.onabort === null && getEventListeners(signal, "abort").length === 0;
}

/**
 * A real AbortSignal whose `aborted`, `reason` and `throwIfAborted` also
 * consult the shared abort flag of the call it belongs to, so a tool that
 * never yields still observes an abort.
 */
function createCallSignal(): CallSignal {
  const controller = new AbortController();
  const signal = controller.signal;
  const callSignal: CallSignal = {
    controller,
    signal,
    seq: 0,
    sync: () => {
      if (!abortedGetter.call(signal) && Atomics.load(boot.abortFlags, callSignal.seq & flagSlotMask) === callSignal.seq) {
        controller.abort(reasonOf(callSignal.seq));
      }
    },
    abortHeard: () => {
      // Checked again for the seq the signal has now: a signal reused by a later call must not abort it.
      const { seq } = callSignal;
      if (!abortedGetter.call(signal) && (Atomics.load(boot.abortFlags, seq & flagSlotMask) === seq || heardReasons.has(seq)))
        controller.abort(reasonOf(seq));
    },
  };
  const { sync } = callSignal;
  Object.defineProperties(signal, {
    aborted: {
      configurable: true,
      get: () => {
        sync();
        return abortedGetter.call(signal) as boolean;
      },
    },
    reason: {
      configurable: true,
      get: () => {
        sync();
        return reasonGetter.call(signal) as unknown;
      },
    },
    throwIfAborted: {
      configurable: true,
      value: () => {
        sync();
        AbortSignal.prototype.throwIfAborted.call(signal);
      },
    },
  });
  return callSignal;
}

/** The reason of an aborted call's signal: what `AbortController.abort()` gives by default. */
function createAbortReason(): DOMException {
  return new DOMException("This operation was aborted", "AbortError");
}
