/**
 * The fast path of a batch nobody observes: no hook, no event sink, no
 * listener and no trace as it starts. Without user code between the stages
 * there is no order for a mailbox to keep, so pi's stages run here
 * synchronously wherever nothing waits: only executions are awaited. The
 * stages are those of `batch-coordinator.ts`, which is the copy to read
 * beside pi's loop; the differentials run batches both ways.
 *
 * A listener that subscribes while the batch runs gets its events from then
 * on, published at once, as nothing awaits a listener.
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

/** Runs an unobserved batch: at once when no call executes, else once the executions settle. */
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

/** Every call prepared in order, then every prepared call executed at once, then the messages in the model's order. */
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

/** Stage 2; partials go only to a listener there is as the call starts. */
function execute(scope: BatchScope, prepared: PreparedCall): Promise<ExecutedCall> {
  if (!scope.services.hasListeners()) return executePreparedToolCall(scope, prepared, undefined);
  const { toolCall } = prepared;
  const deliver = (partialResult: AgentToolResult<unknown>): void =>
    publish(scope, { type: "tool_execution_update", toolCallId: toolCall.id, toolName: toolCall.name, args: toolCall.arguments, partialResult });
  return executePreparedToolCall(scope, prepared, new UpdateDeliveries(deliver, deliveryOptionsOf(prepared)));
}

/** Stage 5 (and its events, for a listener there is now). */
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

/** Stage 4, for a listener there is now. */
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
