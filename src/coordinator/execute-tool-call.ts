/**
 * Stage 2, pi's `executePreparedToolCall`, for both ways through a batch.
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
 * Runs a prepared call, once it holds its caps' slots; never rejects for its
 * own failures. Deliveries of partials sent before the tool settled are
 * awaited; later ones go out or are dropped as the batch's pi does.
 */
export function executePreparedToolCall(scope: BatchScope, prepared: PreparedCall, updates: UpdateDeliveries | undefined): Promise<ExecutedCall> {
  const caps = scope.caps;
  const claim = caps === undefined ? undefined : claimOf(caps, prepared.toolCall.name);
  if (claim === undefined) return executeHoldingSlots(scope, prepared, updates, undefined);
  // Waiting here, after the hooks and the start event, changes no order pi promises.
  const { gate } = caps!.runtime;
  // An inline call's execute can make nested calls; a worker call's spread parts count against its caps.
  const context = new CapContext(claim, caps!);
  const leave = (executed: ExecutedCall): ExecutedCall => {
    gate.leave(claim);
    return executed;
  };
  // A failed update delivery rejects the execution (as pi's does): the slots go back all the same.
  const leaveOnError = (error: unknown): never => {
    gate.leave(claim);
    throw error;
  };
  const run = () => executeHoldingSlots(scope, prepared, updates, context).then(leave, leaveOnError);
  const entered = gate.enter(claim);
  if (entered === undefined) return run();
  const { batchId, sessionKey } = scope;
  const wait: CapWait = { tool: prepared.toolCall.name, toolCallId: prepared.toolCall.id, batchId, since: Date.now() };
  if (sessionKey !== undefined) wait.sessionKey = sessionKey;
  claim.wait = wait;
  return entered.then(run);
}

/** An inline tool may change a partial it sent, and its `onUpdate` takes a sink's throw as pi's does; a worker's partial is a copy. */
export function deliveryOptionsOf(prepared: PreparedCall): UpdateDeliveryOptions {
  return prepared.entry.kind === "inline" ? inlineDeliveries : workerDeliveries;
}

const inlineDeliveries: UpdateDeliveryOptions = Object.freeze({ hold: snapshotOf, throwsToSender: true });
const workerDeliveries: UpdateDeliveryOptions = Object.freeze({});

const stoppedByForce = Symbol("stoppedByForce");

const ignoreUpdate = (): void => {};

type Timing = Pick<ExecutedCall, "timing" | "durationMs">;

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
  // Awaited as pi awaits it, partials closed in pi's very turn: a late partial goes out or not as in pi.
  const settled = (async (): Promise<{ result: unknown; isError: boolean } | { error: unknown }> => {
    let hasReturned = false;
    try {
      const result: unknown = await (callTrace === undefined ? run() : callTrace.runInContext(run));
      ended();
      hasReturned = true;
      return { result, isError: rules.isErrorResult(result) };
    } catch (error) {
      // pi 1.6's catch awaits the partials again: one turn, which orders a sibling settling alongside.
      if (hasReturned) await Promise.allSettled(updates?.pending ?? []);
      else ended();
      return { error };
    }
  })();
  const outcome = await forceStop.race(settled, stoppedByForce);
  if (outcome === stoppedByForce) {
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

function inlineTiming(scope: BatchScope, startedAt: number, endedAt: number): Timing {
  return {
    timing: { submittedAt: startedAt, startedAt, endedAt },
    durationMs: scope.rules.reportsDuration ? Math.round(endedAt - startedAt) : undefined,
  };
}

/** A worker's returned value as pi 1.6 takes it (see `PiRules.isErrorResult`). */
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
