/**
 * The worker entry, whose default export Piscina calls once per call: it
 * loads each tool module once per thread and always returns a
 * {@link WorkerReply}; a tool's throw becomes pi's error text here, where
 * `instanceof Error` is meaningful.
 *
 * @module
 */
import { parentPort, threadId } from "node:worker_threads";

import { describeThrown, thrownFieldsOf } from "../../errors.js";
import { runWithRemoteParent } from "../../tracing/remote-parent.js";
import { bootTag, loadedTag, type ThreadMessage, type WorkerReply, type WorkerTask, type WorkerToolDefinition } from "../protocol.js";
import { CallContext } from "./call-context.js";
import { CallRun, forgetResourceBaseline, markEnded, resourcesBeforeCall, type ErrorOutcome, type KnownTool, type ToolExecute } from "./call-run.js";
import { takeAbortMessage } from "./call-signal.js";
import { importToolModule } from "./import-tool-module.js";
import { takeSpreadReply } from "./spread-client.js";
import { onThreadMessage, takeThreadPort } from "./thread-port.js";

const modules = new Map<string, Promise<Record<string, unknown>>>();
const tools = new Map<number, KnownTool>();

onThreadMessage((message: ThreadMessage) => {
  if ("abort" in message) takeAbortMessage(message);
  else takeSpreadReply(message);
});

// Node 22+ loads `MessageEvent` (and the fetch stack) on a thread's first port message, delaying its first abort.
void globalThis.MessageEvent;

// Piscina marks its first workers ready before they have loaded anything.
parentPort!.postMessage({ [bootTag]: true, threadId });

export default function runWorkerTask(task: WorkerTask): unknown {
  if (task.port !== undefined) takeThreadPort(task.port);
  // Aborted before it reached this thread: no message was sent.
  if (task.aborted !== undefined) takeAbortMessage(task.aborted);
  let tool = tools.get(task.tool);
  if (task.definition !== undefined && tool === undefined) tools.set(task.tool, (tool = { ...task.definition, execute: undefined }));
  if (tool === undefined) {
    // The pool sends a definition until it has seen this thread answer a call of the tool.
    const message = `Tool number ${task.tool} is unknown to worker thread ${threadId}`;
    markEnded(task.seq);
    return { kind: "fault", code: "TP_ERR_TOOL_LOAD", message, updates: 0 } satisfies WorkerReply;
  }
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
    forgetResourceBaseline();
    return runCall(task, known, loaded);
  });
}

/** An abort's grace counts from here, not from the module's load. */
function postLoaded(seq: number): void {
  parentPort!.postMessage({ [loadedTag]: true, seq });
}

/** A tool that returns without a promise is answered in the same turn, with no promise of the worker's own. */
function runCall(task: WorkerTask, tool: KnownTool, execute: ToolExecute): unknown {
  const call = new CallRun(task, tool, resourcesBeforeCall());
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

/** A tool's throw: pi's text for it, and what else its `Error` had (its `code`…) for a caller of `execute`. */
function errorOutcomeOf(error: unknown): ErrorOutcome {
  const thrown = thrownFieldsOf(error);
  return thrown === undefined ? { kind: "error", message: describeThrown(error) } : { kind: "error", message: describeThrown(error), thrown };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as { then?: unknown }).then === "function";
}

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

function loadModule(url: string): Promise<Record<string, unknown>> {
  let loading = modules.get(url);
  if (loading === undefined) {
    loading = importToolModule(url);
    modules.set(url, loading);
  }
  return loading;
}
