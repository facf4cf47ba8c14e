/**
 * The worker entry: Piscina loads this file in every worker thread and calls
 * its default export once per call. It imports each tool module once per
 * thread, runs the tool's execute with `ctx = { toolCallId, signal, onUpdate }`
 * and always returns a {@link WorkerReply} value: a tool's throw is pi's error
 * message computed here, in the realm where `instanceof Error` is meaningful.
 */
import { BroadcastChannel, parentPort, workerData } from "node:worker_threads";

import type { AgentToolResult, WorkerToolContext } from "../types.js";
import { abortSlotMask, updateTag, type WorkerBootData, type WorkerReply, type WorkerTask } from "./protocol.js";

const boot = workerData as WorkerBootData;
const running = new Map<number, AbortController>();
const modules = new Map<string, Promise<Record<string, unknown>>>();

// Fires the `abort` event of a call that is awaiting something. A call in a
// busy loop never reaches its event loop; it sees the shared flag instead.
const control = new BroadcastChannel(boot.controlChannel);
control.onmessage = (event) => {
  const seq = (event as { data?: { abort?: number } }).data?.abort;
  if (seq !== undefined) running.get(seq)?.abort(createAbortReason());
};
// An idle worker must not be kept alive by the channel.
control.unref();

const abortedGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")!.get!;
const reasonGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "reason")!.get!;

export default async function runWorkerTask(task: WorkerTask): Promise<WorkerReply> {
  const controller = new AbortController();
  const signal = createCallSignal(controller, task.seq);
  running.set(task.seq, controller);
  let updates = 0;
  let unclonedUpdate: string | undefined;
  const onUpdate = (partialResult: AgentToolResult<unknown>): void => {
    try {
      parentPort!.postMessage({ [updateTag]: true, seq: task.seq, partial: partialResult });
      updates += 1;
    } catch (error) {
      // onUpdate never throws into the tool (pi's does not either); the call
      // fails once the tool returns.
      unclonedUpdate ??= errorMessage(error);
    }
  };
  try {
    let execute: unknown;
    try {
      execute = (await loadModule(task.moduleUrl))[task.exportName];
    } catch (error) {
      return {
        kind: "fault",
        code: "TP_ERR_TOOL_LOAD",
        message: `Tool "${task.toolName}" could not be loaded from ${task.moduleUrl}: ${errorMessage(error)}`,
        updates,
      };
    }
    if (typeof execute !== "function") {
      return {
        kind: "fault",
        code: "TP_ERR_TOOL_LOAD",
        message: `Tool "${task.toolName}": module ${task.moduleUrl} has no function export "${task.exportName}"`,
        updates,
      };
    }
    const ctx: WorkerToolContext<unknown> = { toolCallId: task.toolCallId, signal, onUpdate };
    let result: unknown;
    try {
      result = await (execute as (args: unknown, ctx: WorkerToolContext<unknown>) => unknown)(task.args, ctx);
    } catch (error) {
      return { kind: "error", message: errorMessage(error), updates };
    }
    if (unclonedUpdate !== undefined) {
      return {
        kind: "fault",
        code: "TP_ERR_RESULT_NOT_CLONEABLE",
        message: `Tool "${task.toolName}" sent a partial result that cannot be cloned across threads: ${unclonedUpdate}`,
        updates,
      };
    }
    return { kind: "ok", result, updates };
  } finally {
    running.delete(task.seq);
  }
}

function loadModule(url: string): Promise<Record<string, unknown>> {
  let loading = modules.get(url);
  if (loading === undefined) {
    loading = import(url) as Promise<Record<string, unknown>>;
    modules.set(url, loading);
  }
  return loading;
}

/**
 * The call's signal: a real AbortSignal whose `aborted`, `reason` and
 * `throwIfAborted` also consult the shared abort flag, so a tool that never
 * yields still observes an abort.
 */
function createCallSignal(controller: AbortController, seq: number): AbortSignal {
  const signal = controller.signal;
  const sync = (): void => {
    if (!abortedGetter.call(signal) && Atomics.load(boot.abortFlags, seq & abortSlotMask) === seq) {
      controller.abort(createAbortReason());
    }
  };
  sync();
  Object.defineProperties(signal, {
    aborted: { configurable: true, get: () => (sync(), abortedGetter.call(signal) as boolean) },
    reason: { configurable: true, get: () => (sync(), reasonGetter.call(signal) as unknown) },
    throwIfAborted: { configurable: true, value: () => (sync(), AbortSignal.prototype.throwIfAborted.call(signal)) },
  });
  return signal;
}

/** The reason of an aborted call's signal: what `AbortController.abort()` gives by default. */
function createAbortReason(): DOMException {
  return new DOMException("This operation was aborted", "AbortError");
}

/** pi's rule for the text of a thrown value. */
function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
