/**
 * Stage 2, execute (pi's `executePreparedToolCall`), shared by the observed
 * and the unobserved way through a batch: a capped call waits for its slots,
 * an inline tool runs on the main thread, a worker tool in its pool. Never
 * rejects for the call's own failures: they are error results.
 *
 * @module
 */
import { describeThrown, outcomeTexts, type ErrorCode } from "../errors.js";
import type { AgentToolResult } from "../types.js";
import { toCallDurations } from "../tracing/call-durations.js";
import type { WorkerCallOutcome } from "../contracts/pool-contract.js";
import type { BatchScope } from "./batch-scope.js";
import { CapContext, claimOf, enterCapContext, leaveCapContext, type CapWait } from "./call-caps.js";
import type { PreparedCall } from "./prepare-tool-call.js";
import type { RegisteredTool } from "./tool-registry.js";
import { createErrorToolResult, snapshotOf, type ExecutedCall } from "./tool-results.js";
import type { UpdateDeliveries, UpdateDeliveryOptions } from "./update-deliveries.js";

/**
 * Runs a prepared call. Partial results go to `updates` as they come (none
 * are kept without it), and every delivery of one sent before the tool
 * settled is awaited before the stage ends; one sent later is still
 * delivered (pi 0.73.1) or dropped (pi 1.6), as the batch's rules say.
 */
export function executePreparedToolCall(scope: BatchScope, prepared: PreparedCall, updates: UpdateDeliveries | undefined): Promise<ExecutedCall> {
  const caps = scope.caps;
  const claim = caps === undefined ? undefined : claimOf(caps, prepared.toolCall.name);
  if (claim === undefined) return executeHoldingSlots(scope, prepared, updates, undefined);
  // A capped call holds its slots from here (after its hooks, its start
  // event already sent) until the tool settled, before afterToolCall.
  // Waiting here changes no order pi promises: end events come in
  // completion order, messages in the model's order.
  const { gate } = caps!.runtime;
  // An inline call's execute can make nested calls; a worker call's spread parts count against its caps.
  const context = new CapContext(claim, caps!);
  const leave = (executed: ExecutedCall): ExecutedCall => {
    gate.leave(claim);
    return executed;
  };
  const entered = gate.enter(claim);
  if (entered === undefined) return executeHoldingSlots(scope, prepared, updates, context).then(leave);
  const { batchId, sessionKey } = scope;
  const wait: CapWait = { tool: prepared.toolCall.name, toolCallId: prepared.toolCall.id, batchId, since: Date.now() };
  if (sessionKey !== undefined) wait.sessionKey = sessionKey;
  claim.wait = wait;
  return entered.then(() => executeHoldingSlots(scope, prepared, updates, context)).then(leave);
}

/**
 * How a prepared call's partials are handed on: an inline tool's are copied
 * when they must wait (the tool may change the object), and a delivery that
 * throws at once throws into its `onUpdate`, as in pi; a worker's partial is
 * a copy already, and no tool awaits it here.
 */
export function deliveryOptionsOf(prepared: PreparedCall): UpdateDeliveryOptions {
  return prepared.entry.kind === "inline" ? inlineDeliveries : workerDeliveries;
}

const inlineDeliveries: UpdateDeliveryOptions = Object.freeze({ hold: snapshotOf, throwsToSender: true });
const workerDeliveries: UpdateDeliveryOptions = Object.freeze({});

const stoppedByForce = Symbol("stoppedByForce");

const ignoreUpdate = (): void => {};

type Timing = Pick<ExecutedCall, "timing" | "durationMs">;

/** Stage 2 itself, once the call holds its slots (`capContext`, where any cap applies to it). */
function executeHoldingSlots(
  scope: BatchScope,
  prepared: PreparedCall,
  updates: UpdateDeliveries | undefined,
  capContext: CapContext | undefined,
): Promise<ExecutedCall> {
  if (prepared.entry.kind !== "worker") return executeInline(scope, prepared, updates, capContext);
  return runOnPool(scope, prepared, updates?.onUpdate ?? ignoreUpdate, capContext).then((outcome) => {
    const { rules } = scope;
    if (rules.dropsLatePartials) updates?.close();
    const { timing } = outcome;
    // The run time on the call's thread (or node), as the pool timed it.
    const durationMs = rules.reportsDuration ? Math.round(timing === undefined ? 0 : toCallDurations(timing).runMs) : undefined;
    const executed =
      outcome.kind === "ok"
        ? executedOf(scope, outcome.result, { timing, durationMs })
        : executedError(outcome.message, outcome.code, { timing, durationMs });
    return updates?.pending === undefined ? executed : updates.settled().then(() => executed);
  });
}

function runOnPool(
  scope: BatchScope,
  prepared: PreparedCall,
  onUpdate: (partialResult: AgentToolResult<unknown>) => void,
  capContext: CapContext | undefined,
): Promise<WorkerCallOutcome> {
  const { toolCall, args } = prepared;
  const tool = (prepared.entry as Extract<RegisteredTool, { kind: "worker" }>).tool;
  return scope.services.poolFor(tool).run({
    partCaps: capContext,
    tool,
    toolCallId: toolCall.id,
    args,
    signal: scope.signal,
    onUpdate,
    session: scope.session,
    sessionKey: scope.sessionKey,
    batchId: scope.batchId,
    traceparent: prepared.callTrace?.traceparent,
  });
}

async function executeInline(
  scope: BatchScope,
  prepared: PreparedCall,
  updates: UpdateDeliveries | undefined,
  capContext: CapContext | undefined,
): Promise<ExecutedCall> {
  const { toolCall, args, callTrace } = prepared;
  const tool = (prepared.entry as Extract<RegisteredTool, { kind: "inline" }>).tool;
  const { now, forceStop } = scope.services;
  const { rules, signal } = scope;
  const onUpdate = updates?.onUpdate ?? ignoreUpdate;
  const execute = () => tool.execute(toolCall.id, args, signal, onUpdate);
  // A capped call's nested calls (`runtime.runToolCall` from inside) find it as their parent.
  let isInCapContext = false;
  const run =
    capContext === undefined
      ? execute
      : () => {
          isInCapContext = true;
          return enterCapContext(capContext, execute);
        };
  const startedAt = now();
  let endedAt = startedAt;
  // The run ends as the tool settles, before its partials are awaited.
  const ended = (): void => {
    endedAt = now();
    if (isInCapContext) leaveCapContext();
    if (rules.dropsLatePartials) updates?.close();
  };
  // pi's own step: whatever execute returns is awaited as pi awaits it (a
  // plain value too), and the partials close in the very turn pi closes
  // them, so a partial sent a microtask or two after the tool settled is
  // emitted or dropped exactly as pi does. Never rejects.
  const settled = (async (): Promise<{ result: unknown; isError: boolean } | { error: unknown }> => {
    let hasReturned = false;
    try {
      const result: unknown = await (callTrace === undefined ? run() : callTrace.runInContext(run));
      ended();
      hasReturned = true;
      return { result, isError: rules.isErrorResult(result) };
    } catch (error) {
      // pi 1.6 reads `isError` once the partials are awaited; a read that
      // throws (no result at all, a throwing getter) lands in its catch,
      // which awaits them once more: one turn later, which decides whether
      // a sibling settling alongside ends first.
      if (hasReturned) await Promise.allSettled(updates?.pending ?? []);
      else ended();
      return { error };
    }
  })();
  const outcome = await forceStop.race(settled, stoppedByForce);
  if (outcome === stoppedByForce) {
    // Not awaited any longer, nor are its partials: nothing it sends from now on is emitted.
    updates?.close();
    return executedError(outcomeTexts.stoppedByForce(toolCall.name), "TP_ERR_CLOSED", inlineTiming(scope, startedAt, now()));
  }
  const executed: ExecutedCall =
    "error" in outcome
      ? executedError(describeThrown(outcome.error), undefined, inlineTiming(scope, startedAt, endedAt))
      : { result: outcome.result as AgentToolResult<unknown>, isError: outcome.isError, ...inlineTiming(scope, startedAt, endedAt) };
  if (updates?.pending !== undefined) await updates.settled();
  return executed;
}

/** An inline call's timing, and its `durationMs` where the batch's pi reports one. */
function inlineTiming(scope: BatchScope, startedAt: number, endedAt: number): Timing {
  return {
    timing: { submittedAt: startedAt, startedAt, endedAt },
    durationMs: scope.rules.reportsDuration ? Math.round(endedAt - startedAt) : undefined,
  };
}

/**
 * A value a worker tool returned, as pi 1.6 takes it: an error result when
 * it says `isError: true`, or when reading that fails (no result at all:
 * `null`, `undefined`), whichever pi (see `PiRules.isErrorResult`).
 */
function executedOf(scope: BatchScope, result: unknown, timing: Timing): ExecutedCall {
  try {
    return { result: result as AgentToolResult<unknown>, isError: scope.rules.isErrorResult(result), ...timing };
  } catch (error) {
    return executedError(describeThrown(error), undefined, timing);
  }
}

function executedError(message: string, code: ErrorCode | undefined, timing: Timing): ExecutedCall {
  return { result: createErrorToolResult(message, code), isError: true, ...timing };
}
