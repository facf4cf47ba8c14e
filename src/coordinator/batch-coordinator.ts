/**
 * The coordinator of one batch, its methods named as pi-agent-core's `agent-loop` module
 * names its stages.
 *
 * @module
 */
import { describeThrown } from "../errors.js";
import type { BatchEvent, ToolExecutionEndEvent } from "../events.js";
import type { AgentToolResult, BatchOutcome, ToolCall, ToolResultMessage } from "../types.js";
import type { CallExecution, CallTrace } from "../tracing/batch-trace.js";
import { toCallDurations, type CallDurations } from "../tracing/call-durations.js";
import type { BatchScope } from "./batch-scope.js";
import { deliveryOptionsOf, executePreparedToolCall } from "./execute-tool-call.js";
import { Mailbox } from "./mailbox.js";
import { abortedText, type PiRules } from "./pi-rules.js";
import { prepareToolCall, type Preparation, type PreparedCall } from "./prepare-tool-call.js";
import { createErrorToolResult, finalizedCallOf, shouldTerminateBatch, type ExecutedCall, type FinalizedCall } from "./tool-results.js";
import { executeUnobservedBatch } from "./unobserved-batch.js";
import { UpdateDeliveries, type UpdateDeliveryOptions } from "./update-deliveries.js";

export type { BatchScope, BatchServices } from "./batch-scope.js";

/**
 * The coordinator actor of one batch: pi's stages and their order, with every
 * stage that runs user code (a hook, the sink) a job of one serial
 * {@link Mailbox}, so a batch's hooks never overlap (pi runs parallel calls'
 * `afterToolCall` at once). Executions run outside it. Where the pis differ,
 * the stages ask the batch's {@link PiRules}.
 */
export class BatchCoordinator {
  readonly #scope: BatchScope;
  readonly #rules: PiRules;
  #mailbox: Mailbox | undefined;

  constructor(scope: BatchScope) {
    this.#scope = scope;
    this.#rules = scope.rules;
  }

  /** pi's `executeToolCalls`. Rejects only when the event sink throws, as pi's loop does. */
  run(): Promise<BatchOutcome> {
    try {
      const { assistantMessage, registry, toolExecution } = this.#scope;
      const toolCalls = assistantMessage.content.filter((block): block is ToolCall => block.type === "toolCall");
      if (toolCalls.length > 0 && this.#rules.unexecutedReason(assistantMessage, toolCalls[0]!) !== undefined) {
        return this.#failToolCallsFromTruncatedMessage(toolCalls);
      }
      const isSequential = toolExecution === "sequential" || toolCalls.some((call) => registry.get(call.name)?.tool.executionMode === "sequential");
      if (!this.#isObserved()) return Promise.resolve(executeUnobservedBatch(this.#scope, toolCalls, isSequential));
      return isSequential ? this.#executeToolCallsSequential(toolCalls) : this.#executeToolCallsParallel(toolCalls);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** pi 1.6's `runToolCall`: prepare, execute, finalize; no event, no message. Never rejects for the call's own failures. */
  async runToolCall(toolCall: ToolCall, onUpdate: (partialResult: AgentToolResult<unknown>) => void): Promise<FinalizedCall> {
    const hasHooks = this.#hasHooks();
    const prepare = () => this.#prepareToolCall(toolCall);
    // pi asks beforeToolCall inside the call: a caller aborting right after finds it asked.
    const preparation = await (hasHooks ? (this.#mailbox ??= new Mailbox()).runNowOrPost(prepare) : prepare());
    if (preparation.kind === "immediate") return preparation;
    const executed = await executePreparedToolCall(this.#scope, preparation, new UpdateDeliveries(onUpdate, deliveryOptionsOf(preparation)));
    const finalize = () => this.#finalizeExecutedToolCall(preparation, executed);
    return hasHooks ? this.#post(finalize) : finalize();
  }

  /** Unobserved batches take the fast path of `unobserved-batch.ts`. */
  #isObserved(): boolean {
    return this.#hasHooks() || this.#scope.trace !== undefined || this.#hasAudience();
  }

  #hasHooks(): boolean {
    return this.#scope.beforeToolCall !== undefined || this.#scope.afterToolCall !== undefined;
  }

  #hasAudience(): boolean {
    return this.#scope.emit !== undefined || this.#scope.services.hasListeners();
  }

  #post<T>(job: () => T | PromiseLike<T>): Promise<T> {
    return (this.#mailbox ??= new Mailbox()).post(job);
  }

  async #executeToolCallsSequential(toolCalls: ToolCall[]): Promise<BatchOutcome> {
    const finalizedCalls: FinalizedCall[] = [];
    const messages: ToolResultMessage[] = [];
    for (const toolCall of toolCalls) {
      const preparation = await this.#post(() => this.#emitStartAndPrepare(toolCall));
      const executed = preparation.kind === "prepared" ? await this.#executeObserved(preparation) : undefined;
      // Stages 3 to 5 as one job: a partial sent meanwhile comes after the call's message.
      const message = await this.#post(async () => {
        const finalized = preparation.kind === "prepared" ? await this.#finalizeExecutedToolCall(preparation, executed!) : preparation;
        finalizedCalls.push(finalized);
        await this.#emitToolExecutionEnd(finalized);
        return this.#emitToolResultMessage(this.#rules.resultMessage(finalized));
      });
      messages.push(message);
    }
    return { messages, terminate: shouldTerminateBatch(finalizedCalls) };
  }

  async #executeToolCallsParallel(toolCalls: ToolCall[]): Promise<BatchOutcome> {
    const preparations: Preparation[] = [];
    for (const toolCall of toolCalls) {
      const preparation = await this.#post(async () => {
        const preparation = await this.#emitStartAndPrepare(toolCall);
        if (preparation.kind === "immediate") await this.#emitToolExecutionEnd(preparation);
        return preparation;
      });
      preparations.push(preparation);
    }
    const finalizedCalls = await Promise.all(
      preparations.map((preparation) => (preparation.kind === "prepared" ? this.#executeInParallel(preparation) : preparation)),
    );
    const messages = await this.#post(async () => {
      const messages: ToolResultMessage[] = [];
      for (const finalized of finalizedCalls) messages.push(await this.#emitToolResultMessage(this.#rules.resultMessage(finalized)));
      return messages;
    });
    return { messages, terminate: shouldTerminateBatch(finalizedCalls) };
  }

  async #executeInParallel(prepared: PreparedCall): Promise<FinalizedCall> {
    if (this.#rules.checksAbort && this.#scope.signal?.aborted) {
      const finalized: FinalizedCall = { toolCall: prepared.toolCall, result: createErrorToolResult(abortedText), isError: true };
      this.#endCallTrace(prepared, finalized);
      await this.#post(() => this.#emitToolExecutionEnd(finalized));
      return finalized;
    }
    const executed = await this.#executeObserved(prepared);
    return this.#post(async () => {
      const finalized = await this.#finalizeExecutedToolCall(prepared, executed);
      await this.#emitToolExecutionEnd(finalized);
      return finalized;
    });
  }

  async #failToolCallsFromTruncatedMessage(toolCalls: ToolCall[]): Promise<BatchOutcome> {
    const messages: ToolResultMessage[] = [];
    for (const toolCall of toolCalls) {
      const message = await this.#post(async () => {
        const result = createErrorToolResult(this.#rules.unexecutedReason(this.#scope.assistantMessage, toolCall)!);
        this.#startCallTrace(toolCall)?.end(result, true, "none");
        const finalized: FinalizedCall = { toolCall, result, isError: true };
        await this.#emitToolExecutionStart(toolCall);
        await this.#emitToolExecutionEnd(finalized);
        return this.#emitToolResultMessage(this.#rules.resultMessage(finalized));
      });
      messages.push(message);
    }
    return { messages, terminate: false };
  }

  async #emitStartAndPrepare(toolCall: ToolCall): Promise<Preparation> {
    await this.#emitToolExecutionStart(toolCall);
    return this.#prepareToolCall(toolCall);
  }

  async #prepareToolCall(toolCall: ToolCall): Promise<Preparation> {
    const callTrace = this.#startCallTrace(toolCall);
    const preparation = await prepareToolCall(this.#scope, toolCall);
    if (callTrace === undefined) return preparation;
    if (preparation.kind === "prepared") preparation.callTrace = callTrace;
    else callTrace.end(preparation.result, true, "none");
    return preparation;
  }

  /** Partials are ignored while nobody listens. */
  #executeObserved(prepared: PreparedCall): Promise<ExecutedCall> {
    if (!this.#hasAudience()) return executePreparedToolCall(this.#scope, prepared, undefined);
    const { toolCall } = prepared;
    const options = deliveryOptionsOf(prepared);
    const updates = new UpdateDeliveries((partialResult) => this.#emitToolExecutionUpdate(toolCall, partialResult, options.hold), options);
    return executePreparedToolCall(this.#scope, prepared, updates);
  }

  async #finalizeExecutedToolCall(prepared: PreparedCall, executed: ExecutedCall): Promise<FinalizedCall> {
    let { result, isError } = executed;
    const { afterToolCall, assistantMessage, context, signal } = this.#scope;
    if (afterToolCall !== undefined) {
      try {
        const override = await afterToolCall(
          { assistantMessage, toolCall: prepared.toolCall, args: prepared.args, result, isError, context },
          signal,
        );
        if (override) {
          result = this.#rules.applyOverride(result, override);
          isError = override.isError ?? isError;
        }
      } catch (error) {
        result = createErrorToolResult(describeThrown(error));
        isError = true;
      }
    }
    const finalized = finalizedCallOf(prepared.toolCall, executed, result, isError);
    this.#endCallTrace(prepared, finalized);
    return finalized;
  }

  #startCallTrace(toolCall: ToolCall): CallTrace | undefined {
    return this.#scope.trace?.startCall(toolCall, this.#scope.registry.get(toolCall.name)?.tool.description);
  }

  #endCallTrace({ callTrace, entry }: PreparedCall, final: FinalizedCall): void {
    if (callTrace === undefined) return;
    const execution: CallExecution = entry.kind;
    callTrace.end(final.result, final.isError, execution, final.timing === undefined ? undefined : toCallDurations(final.timing));
  }

  #emitToolExecutionStart(toolCall: ToolCall): void | Promise<void> {
    if (!this.#hasAudience()) return;
    return this.#emit({ type: "tool_execution_start", toolCallId: toolCall.id, toolName: toolCall.name, args: toolCall.arguments });
  }

  /** pi emits it inside `onUpdate`: so do we while the mailbox is idle; one that must wait goes out as it was sent (`hold`). */
  #emitToolExecutionUpdate(
    toolCall: ToolCall,
    partialResult: AgentToolResult<unknown>,
    hold: UpdateDeliveryOptions["hold"],
  ): Promise<unknown> | undefined {
    if (!this.#hasAudience()) return undefined;
    const mailbox = (this.#mailbox ??= new Mailbox());
    const sent = mailbox.size === 0 || hold === undefined ? partialResult : hold(partialResult);
    return mailbox.runOrPost(() =>
      this.#emit({ type: "tool_execution_update", toolCallId: toolCall.id, toolName: toolCall.name, args: toolCall.arguments, partialResult: sent }),
    );
  }

  #emitToolExecutionEnd(finalized: FinalizedCall): void | Promise<void> {
    if (!this.#hasAudience()) return;
    const { toolCall, result, isError, durationMs, timing } = finalized;
    const event: ToolExecutionEndEvent = { type: "tool_execution_end", toolCallId: toolCall.id, toolName: toolCall.name, result, isError };
    if (durationMs !== undefined) event.durationMs = durationMs;
    return this.#emit(event, timing === undefined ? undefined : toCallDurations(timing));
  }

  async #emitToolResultMessage(message: ToolResultMessage): Promise<ToolResultMessage> {
    if (!this.#hasAudience()) return message;
    await this.#emit({ type: "message_start", message });
    await this.#emit({ type: "message_end", message });
    return message;
  }

  /** Runs only inside mailbox jobs, so deliveries never overlap. */
  #emit(event: BatchEvent, durations?: CallDurations): void | Promise<void> {
    this.#scope.services.publish(event, this.#scope.batchId, this.#scope.sessionKey, durations);
    return this.#scope.emit?.(event);
  }
}
