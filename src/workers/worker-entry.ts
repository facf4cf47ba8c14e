/**
 * The worker entry: Piscina loads this file in every worker thread and calls
 * its default export once per call. It imports each tool module once per
 * thread, runs the tool's execute with `ctx = { toolCallId, signal, onUpdate }`
 * and always returns a {@link WorkerReply} value: a tool's throw is pi's error
 * message computed here, in the realm where `instanceof Error` is meaningful,
 * and a result that could not cross the thread boundary is caught here, where
 * the worker survives it.
 */
import { getEventListeners } from "node:events";
import { BroadcastChannel, parentPort, threadId, workerData } from "node:worker_threads";

import { Piscina } from "piscina";

import { describeThrown } from "../errors.js";
import { runWithRemoteParent } from "../tracing/remote-parent.js";
import type { AgentToolResult, WorkerToolContext } from "../types.js";
import { inspectResult } from "./inspect-result.js";
import { bootTag, flagSlotMask, updateTag, type WorkerBootData, type WorkerReply, type WorkerTask } from "./protocol.js";

const boot = workerData as WorkerBootData;
const running = new Map<number, AbortController>();
const modules = new Map<string, Promise<Record<string, unknown>>>();
/** The tool modules loaded so far, by URL, for a synchronous lookup. */
const loadedTools = new Map<string, Record<string, unknown>>();
/** Resources pending at the end of the last call that left none behind. */
let resourceBaseline: number | undefined;

// Fires the `abort` event of a call that is awaiting something. A call in a
// busy loop never reaches its event loop; it sees the shared flag instead.
const control = new BroadcastChannel(boot.controlChannel);
control.onmessage = (event) => {
  const seq = (event as { data?: { abort?: number } }).data?.abort;
  if (seq !== undefined) running.get(seq)?.abort(createAbortReason());
};
// An idle worker must not be kept alive by the channel.
control.unref();

// Tells the pool this thread has started: Piscina's own readiness is not
// evidence of that for its first workers.
parentPort!.postMessage({ [bootTag]: true, threadId });

const abortedGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")!.get!;
const reasonGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "reason")!.get!;

export default async function runWorkerTask(task: WorkerTask): Promise<unknown> {
  // A tool already loaded is taken without an await: one microtask less a call.
  let execute = loadedTools.get(task.moduleUrl)?.[task.exportName];
  if (typeof execute !== "function") {
    const loaded = await loadExecute(task);
    if (typeof loaded !== "function") return { kind: "fault", code: "TP_ERR_TOOL_LOAD", message: loaded, updates: 0 } satisfies WorkerReply;
    execute = loaded;
    // A module's start-up work is not the call's leftover: count afresh.
    resourceBaseline = undefined;
  }
  // What was pending before the call; anything more afterwards is work the
  // call left behind. Between calls the worker sleeps in Atomics.wait, so the
  // count at the end of the last call still holds.
  const resourcesBefore = (resourceBaseline ??= process.getActiveResourcesInfo().length);
  let updates = 0;
  let unclonedUpdate: string | undefined;
  const onUpdate = (partialResult: AgentToolResult<unknown>): void => {
    try {
      parentPort!.postMessage({ [updateTag]: true, seq: task.seq, partial: partialResult });
      updates += 1;
    } catch (error) {
      // onUpdate never throws into the tool (pi's does not either); the call
      // fails once the tool returns.
      unclonedUpdate ??= describeThrown(error);
    }
  };
  let reply: WorkerReply;
  let runMs = 0;
  let transferables: ArrayBuffer[] = [];
  try {
    const ctx = createContext(task, onUpdate);
    const startedAt = performance.now();
    const outcome = await (task.traceparent === undefined
      ? runTool(execute as ToolExecute, task, ctx)
      : runWithRemoteParent(task.traceparent, () => runTool(execute as ToolExecute, task, ctx)));
    runMs = performance.now() - startedAt;
    if (outcome.kind !== "ok") {
      reply = { ...outcome, updates };
    } else if (unclonedUpdate !== undefined) {
      reply = fault("TP_ERR_RESULT_NOT_CLONEABLE", `Tool "${task.toolName}" sent a partial result that cannot be cloned across threads: ${unclonedUpdate}`, updates);
    } else {
      const inspection = inspectResult(outcome.result, task.maxResultBytes);
      if (inspection.uncloneable !== undefined) {
        reply = fault("TP_ERR_RESULT_NOT_CLONEABLE", `Tool "${task.toolName}" returned a result that cannot be cloned across threads: ${inspection.uncloneable}`, updates);
      } else if (inspection.isTooLarge) {
        reply = fault("TP_ERR_RESULT_TOO_LARGE", `Tool "${task.toolName}" returned ${inspection.bytes} bytes, more than maxResultBytes (${task.maxResultBytes})`, updates);
      } else {
        reply = { kind: "ok", result: outcome.result, updates };
        transferables = inspection.transferables;
      }
    }
  } finally {
    running.delete(task.seq);
  }
  reply.runMs = runMs;
  const resourcesAfter = process.getActiveResourcesInfo().length;
  if (resourcesAfter <= resourcesBefore) resourceBaseline = resourcesAfter;
  else if (await leftoverWorkSettles(resourcesBefore)) resourceBaseline = undefined;
  else {
    // The worker must not serve another call: the leftover work would run, and
    // could throw, during an unrelated call. The flag is set before the reply
    // is posted, so the pool's balancer sees it before it could reuse us.
    Atomics.store(boot.retireFlags, threadId & flagSlotMask, threadId);
    reply.retiredThreadId = threadId;
  }
  if (transferables.length === 0) return reply;
  return Piscina.move({ [Piscina.transferableSymbol]: transferables, [Piscina.valueSymbol]: reply } as never);
}

type ToolExecute = (args: unknown, ctx: WorkerToolContext<unknown>) => unknown;

/** The tool's execute function, or why it cannot be had. A failed import is cached: every call fails alike, at once. */
async function loadExecute(task: WorkerTask): Promise<ToolExecute | string> {
  let execute: unknown;
  try {
    execute = (await loadModule(task.moduleUrl))[task.exportName];
  } catch (error) {
    return `Tool "${task.toolName}" could not be loaded from ${task.moduleUrl}: ${describeThrown(error)}`;
  }
  if (typeof execute !== "function") {
    return `Tool "${task.toolName}": module ${task.moduleUrl} has no function export "${task.exportName}"`;
  }
  return execute as ToolExecute;
}

async function runTool(
  execute: ToolExecute,
  task: WorkerTask,
  ctx: WorkerToolContext<unknown>,
): Promise<{ kind: "ok"; result: unknown } | { kind: "error"; message: string }> {
  try {
    return { kind: "ok", result: await execute(task.args, ctx) };
  } catch (error) {
    return { kind: "error", message: describeThrown(error) };
  }
}

function fault(code: "TP_ERR_RESULT_NOT_CLONEABLE" | "TP_ERR_RESULT_TOO_LARGE", message: string, updates: number): WorkerReply {
  return { kind: "fault", code, message, updates };
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
    loading = (import(url) as Promise<Record<string, unknown>>).then((module) => {
      loadedTools.set(url, module);
      return module;
    });
    modules.set(url, loading);
  }
  return loading;
}

/**
 * The tool's `ctx`. Its signal is taken on first use: most calls never look.
 * An abort that came before is not missed: the shared flag still says so.
 */
function createContext(task: WorkerTask, onUpdate: WorkerToolContext<unknown>["onUpdate"]): WorkerToolContext<unknown> {
  let signal: AbortSignal | undefined;
  const ctx: WorkerToolContext<unknown> = {
    toolCallId: task.toolCallId,
    onUpdate,
    get signal() {
      signal ??= takeCallSignal(task.seq);
      return signal;
    },
  };
  if (task.traceparent !== undefined) ctx.traceparent = task.traceparent;
  return ctx;
}

/** A call's abort signal, with the call it currently belongs to. */
interface CallSignal {
  readonly controller: AbortController;
  readonly signal: AbortSignal;
  /** Reads the shared flag of `seq`; aborts the signal if it is set. */
  readonly sync: () => void;
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
  if (Atomics.load(boot.abortFlags, seq & flagSlotMask) === seq) setImmediate(callSignal.sync);
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
        controller.abort(createAbortReason());
      }
    },
  };
  const { sync } = callSignal;
  Object.defineProperties(signal, {
    aborted: { configurable: true, get: () => (sync(), abortedGetter.call(signal) as boolean) },
    reason: { configurable: true, get: () => (sync(), reasonGetter.call(signal) as unknown) },
    throwIfAborted: { configurable: true, value: () => (sync(), AbortSignal.prototype.throwIfAborted.call(signal)) },
  });
  return callSignal;
}

/** The reason of an aborted call's signal: what `AbortController.abort()` gives by default. */
function createAbortReason(): DOMException {
  return new DOMException("This operation was aborted", "AbortError");
}
