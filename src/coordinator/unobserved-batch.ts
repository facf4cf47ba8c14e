/**
 * The fast path of a batch nobody observes as it starts (no hook, sink,
 * listener or trace): with no user code between the stages there is no order
 * for a mailbox to keep, so the stages of `batch-coordinator.ts` run
 * synchronously and only executions are awaited. A listener subscribing
 * meanwhile gets the events from then on, at once (nothing awaits one).
 *
 * @module
 */
import type { BatchEvent, ToolExecutionEndEvent } from "../events.js";
import type { AgentToolResult, BatchOutcome, ToolCall, ToolResultMessage } from "../types.js";
import { toCallDurations, type CallDurations } from "../tracing/call-durations.js";
import type { BatchScope } from "./batch-scope.js";
import { deliveryOptionsOf, executePreparedToolCall } from "./execute-tool-call.js";
import { abortedText } from "./pi-rules.js";
import { prepareWithoutHook, type PreparedCall } from "./prepare-tool-call.js";
import { createErrorToolResult, finalizedCallOf, shouldTerminateBatch, type ExecutedCall, type FinalizedCall } from "./tool-results.js";
import { UpdateDeliveries } from "./update-deliveries.js";

/** Settles at once where no call executes. */
export function executeUnobservedBatch(scope: BatchScope, toolCalls: ToolCall[], isSequential: boolean): BatchOutcome | Promise<BatchOutcome> {
  return isSequential ? executeSequential(scope, toolCalls) : executeParallel(scope, toolCalls);
}

async function executeSequential(scope: BatchScope, toolCalls: ToolCall[]): Promise<BatchOutcome> {
  const finalizedCalls: FinalizedCall[] = [];
  const messages: ToolResultMessage[] = [];
  for (const toolCall of toolCalls) {
    publishStart(scope, toolCall);
    const preparation = prepareWithoutHook(scope, toolCall);
    // Stage 3 without `afterToolCall`: the executed result is final.
    const finalized = preparation.kind === "immediate" ? preparation : finalizedCallOf(toolCall, await execute(scope, preparation));
    publishEnd(scope, finalized);
    finalizedCalls.push(finalized);
    messages.push(createToolResultMessage(scope, finalized));
  }
  return { messages, terminate: shouldTerminateBatch(finalizedCalls) };
}

function executeParallel(scope: BatchScope, toolCalls: ToolCall[]): BatchOutcome | Promise<BatchOutcome> {
  const preparations = toolCalls.map((toolCall) => {
    publishStart(scope, toolCall);
    const preparation = prepareWithoutHook(scope, toolCall);
    if (preparation.kind === "immediate") publishEnd(scope, preparation);
    return preparation;
  });
  let executing = 0;
  const calls = preparations.map((preparation): FinalizedCall | Promise<FinalizedCall> => {
    if (preparation.kind === "immediate") return preparation;
    // pi 1.6: a call the batch's abort overtook while the others were prepared never runs.
    if (scope.rules.checksAbort && scope.signal?.aborted) {
      const finalized: FinalizedCall = { toolCall: preparation.toolCall, result: createErrorToolResult(abortedText), isError: true };
      publishEnd(scope, finalized);
      return finalized;
    }
    executing += 1;
    return execute(scope, preparation).then((executed) => {
      const finalized = finalizedCallOf(preparation.toolCall, executed);
      publishEnd(scope, finalized);
      return finalized;
    });
  });
  if (executing === 0) return conclude(scope, calls as FinalizedCall[]);
  // The commonest batch, one call: no Promise.all for it.
  if (calls.length === 1) return (calls[0] as Promise<FinalizedCall>).then((finalized) => conclude(scope, [finalized]));
  return Promise.all(calls).then((finalizedCalls) => conclude(scope, finalizedCalls));
}

function conclude(scope: BatchScope, finalizedCalls: FinalizedCall[]): BatchOutcome {
  return { messages: finalizedCalls.map((finalized) => createToolResultMessage(scope, finalized)), terminate: shouldTerminateBatch(finalizedCalls) };
}

function execute(scope: BatchScope, prepared: PreparedCall): Promise<ExecutedCall> {
  if (!scope.services.hasListeners()) return executePreparedToolCall(scope, prepared, undefined);
  const { toolCall } = prepared;
  const deliver = (partialResult: AgentToolResult<unknown>): void =>
    publish(scope, { type: "tool_execution_update", toolCallId: toolCall.id, toolName: toolCall.name, args: toolCall.arguments, partialResult });
  return executePreparedToolCall(scope, prepared, new UpdateDeliveries(deliver, deliveryOptionsOf(prepared)));
}

function createToolResultMessage(scope: BatchScope, finalized: FinalizedCall): ToolResultMessage {
  const message = scope.rules.resultMessage(finalized);
  if (scope.services.hasListeners()) {
    publish(scope, { type: "message_start", message });
    publish(scope, { type: "message_end", message });
  }
  return message;
}

function publishStart(scope: BatchScope, toolCall: ToolCall): void {
  if (!scope.services.hasListeners()) return;
  publish(scope, { type: "tool_execution_start", toolCallId: toolCall.id, toolName: toolCall.name, args: toolCall.arguments });
}

function publishEnd(scope: BatchScope, finalized: FinalizedCall): void {
  if (!scope.services.hasListeners()) return;
  const { toolCall, result, isError, durationMs, timing } = finalized;
  const event: ToolExecutionEndEvent = { type: "tool_execution_end", toolCallId: toolCall.id, toolName: toolCall.name, result, isError };
  if (durationMs !== undefined) event.durationMs = durationMs;
  publish(scope, event, timing === undefined ? undefined : toCallDurations(timing));
}

function publish(scope: BatchScope, event: BatchEvent, durations?: CallDurations): void {
  scope.services.publish(event, scope.batchId, scope.sessionKey, durations);
}
