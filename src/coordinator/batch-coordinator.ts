import { describeThrown } from "../errors.js";
import type { BatchEvent, EmitFunction } from "../events.js";
import type {
  AfterToolCallHook,
  AgentToolResult,
  BatchOutcome,
  ToolCall,
  ToolExecutionMode,
  ToolResultMessage,
} from "../types.js";
import type { BatchTrace, CallExecution, CallTrace } from "../tracing/batch-trace.js";
import { toCallDurations, type CallDurations } from "../tracing/call-durations.js";
import type { CallTiming, ToolCallPool, WorkerCallOutcome } from "../workers/pool-contract.js";
import type { WorkerTool } from "../workers/worker-tool.js";
import { Mailbox } from "./mailbox.js";
import type { RegisteredTool } from "./tool-registry.js";
import { prepareArguments, prepareToolCall, type Preparation, type PrepareScope } from "./prepare-tool-call.js";
import {
  createErrorToolResult,
  createToolResultMessage,
  shouldTerminateBatch,
  toolResultMessage,
  type FinalizedCall,
} from "./tool-results.js";

/** What every batch needs of its runtime: made once per runtime. */
export interface BatchServices {
  /** The pool a worker tool runs on. */
  poolFor: (tool: WorkerTool) => ToolCallPool;
  /** Aborted when the runtime is closed by force: running inline calls are then no longer awaited. */
  stopSignal: AbortSignal;
  /** Hands an event to the runtime's listeners, with a call's durations on its end event; never throws. */
  publish: (event: BatchEvent, batchId: string, durations?: CallDurations) => void;
  /** The runtime's clock: an inline call's run time. */
  now: () => number;
  /** Whether the runtime has listeners of batch events now. */
  hasListeners: () => boolean;
}

/** Everything one batch needs. */
export interface BatchScope extends PrepareScope {
  batchId: string;
  /** The session its worker calls take turns as (a string key, or a value of the batch's own). */
  session: unknown;
  toolExecution: ToolExecutionMode;
  afterToolCall: AfterToolCallHook | undefined;
  emit: EmitFunction | undefined;
  services: BatchServices;
  /** The batch's spans, when it is traced. */
  trace: BatchTrace | undefined;
}

type PreparedCall = Extract<Preparation, { kind: "prepared" }>;

interface ExecutedCall {
  result: AgentToolResult<unknown>;
  isError: boolean;
  /** When the call waited and ran. */
  timing: CallTiming | undefined;
}

/**
 * The coordinator actor of one batch. Every prepare step, every hook and every
 * event delivery runs as a job of one serial {@link Mailbox}, so hooks of a
 * batch never overlap, not even `afterToolCall` of parallel calls (pi runs
 * those concurrently). Executions run outside the mailbox: inline tools on the
 * main thread, worker tools in the pool, all at once in a parallel batch.
 *
 * The stages and their order are pi's: prepare → execute → finalize → end
 * event → result message; in a parallel batch the end events come in
 * completion order and the messages in the assistant's order.
 */
export class BatchCoordinator {
  readonly #scope: BatchScope;
  /** Made on first use: a batch nobody observes never needs one. */
  #mailbox: Mailbox | undefined;

  /** With no hook and nobody listening, nothing user-visible runs in a job: it needs no mailbox. */
  readonly #hasHooks: boolean;
  /** The span of each prepared call of a traced batch, until it is finalized. */
  readonly #callTraces: Map<PreparedCall, CallTrace> | undefined;

  constructor(scope: BatchScope) {
    this.#scope = scope;
    this.#hasHooks = scope.beforeToolCall !== undefined || scope.afterToolCall !== undefined;
    this.#callTraces = scope.trace === undefined ? undefined : new Map();
  }

  #mail(): Mailbox {
    return (this.#mailbox ??= new Mailbox());
  }

  /** Whether anyone (the sink or a runtime listener) receives events now. */
  #hasAudience(): boolean {
    return this.#scope.emit !== undefined || this.#scope.services.hasListeners();
  }

  /** Runs a coordinator job: through the mailbox whenever user code may run in it. */
  #serialize<T>(job: () => T | PromiseLike<T>): Promise<T> {
    if (this.#hasHooks || this.#hasAudience()) return this.#mail().post(job);
    return (async () => job())();
  }

  /** Runs the batch. Rejects only when the event sink throws, as pi's loop does. */
  run(): Promise<BatchOutcome> {
    const { assistantMessage, registry, toolExecution } = this.#scope;
    const toolCalls = assistantMessage.content.filter((block): block is ToolCall => block.type === "toolCall");
    const isSequential =
      toolExecution === "sequential" || toolCalls.some((call) => registry.get(call.name)?.tool.executionMode === "sequential");
    // With no hook and nobody listening, no user code but the tools runs and
    // nothing is observable but the outcome: the lean path gives the same one.
    if (!this.#hasHooks && !this.#hasAudience()) {
      // The commonest batch of all, one call, in as few promise hops as can be.
      if (toolCalls.length === 1) return this.#runOneUnobserved(toolCalls[0]!);
      return this.#runUnobserved(toolCalls, isSequential);
    }
    return isSequential ? this.#runSequential(toolCalls) : this.#runParallel(toolCalls);
  }

  #runOneUnobserved(toolCall: ToolCall): Promise<BatchOutcome> {
    const preparation = this.#prepareUnobserved(toolCall);
    if (preparation.kind === "immediate") return Promise.resolve(outcomeOf([preparation]));
    if (preparation.entry.kind === "worker" && this.#callTraces === undefined) {
      // From the pool's outcome straight to the message: nothing in between
      // could see the executed or finalized call.
      return this.#runOnPool(preparation, ignoreUpdate).then((outcome) => {
        const isError = outcome.kind !== "ok";
        const result = outcome.kind === "ok" ? outcome.result : createErrorToolResult(outcome.message, outcome.code);
        return { messages: [toolResultMessage(toolCall, result, isError)], terminate: result.terminate === true };
      });
    }
    // Not through #executeUnobserved: one promise hop fewer on the commonest path.
    return this.#execute(preparation).then((executed) => {
      this.#endCallTrace(preparation, executed, executed.timing);
      return outcomeOf([{ toolCall, result: executed.result, isError: executed.isError }]);
    });
  }

  /** Stages 2–3 of a prepared call nobody observes: execute, end its span, take the result as final. */
  #executeUnobserved(preparation: PreparedCall): Promise<FinalizedCall> {
    return this.#execute(preparation).then((executed) => {
      this.#endCallTrace(preparation, executed, executed.timing);
      return { toolCall: preparation.toolCall, result: executed.result, isError: executed.isError };
    });
  }

  /** Stage 1 of a batch nobody observes; a traced call's span starts here. */
  #prepareUnobserved(toolCall: ToolCall): Preparation {
    const callTrace = this.#startCallTrace(toolCall);
    const preparation = prepareArguments(this.#scope, toolCall, true);
    if (callTrace !== undefined) this.#keepCallTrace(preparation, callTrace);
    return preparation;
  }

  #startCallTrace(toolCall: ToolCall): CallTrace | undefined {
    return this.#scope.trace?.startCall(toolCall, this.#scope.registry.get(toolCall.name)?.tool.description);
  }

  /** Ends the span of a call that ended in preparation, or keeps it for the prepared call. */
  #keepCallTrace(preparation: Preparation, callTrace: CallTrace): void {
    if (preparation.kind === "immediate") callTrace.end(preparation.result, true, "none");
    else this.#callTraces!.set(preparation, callTrace);
  }

  /** Ends the span of a prepared call with its final result. */
  #endCallTrace(prepared: PreparedCall, final: { result: AgentToolResult<unknown>; isError: boolean }, timing?: CallTiming): void {
    const callTraces = this.#callTraces;
    const callTrace = callTraces?.get(prepared);
    if (callTrace === undefined) return;
    callTraces!.delete(prepared);
    const execution: CallExecution = prepared.entry.kind;
    callTrace.end(final.result, final.isError, execution, timing === undefined ? undefined : toCallDurations(timing));
  }

  /** A batch nobody observes: the stages in pi's order, without events, hooks or mailbox. */
  async #runUnobserved(toolCalls: ToolCall[], isSequential: boolean): Promise<BatchOutcome> {
    let finalizedCalls: FinalizedCall[];
    if (isSequential || toolCalls.length === 1) {
      finalizedCalls = [];
      for (const toolCall of toolCalls) {
        const preparation = this.#prepareUnobserved(toolCall);
        finalizedCalls.push(preparation.kind === "immediate" ? preparation : await this.#executeUnobserved(preparation));
      }
    } else {
      // Every call is prepared before any executes, as in an observed batch.
      const preparations = toolCalls.map((toolCall) => this.#prepareUnobserved(toolCall));
      finalizedCalls = await Promise.all(
        preparations.map((preparation) => (preparation.kind === "immediate" ? preparation : this.#executeUnobserved(preparation))),
      );
    }
    return outcomeOf(finalizedCalls);
  }

  async #runSequential(toolCalls: ToolCall[]): Promise<BatchOutcome> {
    const finalizedCalls: FinalizedCall[] = [];
    const messages: ToolResultMessage[] = [];
    for (const toolCall of toolCalls) {
      const preparation = await this.#serialize(() => this.#startAndPrepare(toolCall));
      const executed = preparation.kind === "immediate" ? preparation : await this.#execute(preparation);
      const [finalized, message] = await this.#serialize(async () => {
        let finalized: FinalizedCall;
        if (preparation.kind === "immediate") finalized = preparation;
        else {
          finalized = await this.#finalize(preparation, executed as ExecutedCall);
          this.#endCallTrace(preparation, finalized, (executed as ExecutedCall).timing);
        }
        await this.#deliverEnd(finalized);
        return [finalized, await this.#deliverMessage(finalized)] as const;
      });
      finalizedCalls.push(finalized);
      messages.push(message);
    }
    return { messages, terminate: shouldTerminateBatch(finalizedCalls) };
  }

  async #runParallel(toolCalls: ToolCall[]): Promise<BatchOutcome> {
    // Stage 1 for every call, in order; an immediate outcome ends at once.
    const entries: (PreparedCall | FinalizedCall)[] = [];
    for (const toolCall of toolCalls) {
      entries.push(
        await this.#serialize(async () => {
          const preparation = await this.#startAndPrepare(toolCall);
          if (preparation.kind === "prepared") return preparation;
          await this.#deliverEnd(preparation);
          return preparation;
        }),
      );
    }
    // Stages 2–4 of every prepared call at once; each ends when it is finalized.
    const finalizedCalls = await Promise.all(
      entries.map((entry) => (isPrepared(entry) ? this.#executeAndFinalize(entry) : entry)),
    );
    // Stage 5 in the assistant's order, once all have finished.
    const messages = await this.#serialize(async () => {
      const messages: ToolResultMessage[] = [];
      for (const finalized of finalizedCalls) messages.push(await this.#deliverMessage(finalized));
      return messages;
    });
    return { messages, terminate: shouldTerminateBatch(finalizedCalls) };
  }

  async #executeAndFinalize(prepared: PreparedCall): Promise<FinalizedCall> {
    const executed = await this.#execute(prepared);
    return this.#serialize(async () => {
      const finalized = await this.#finalize(prepared, executed);
      this.#endCallTrace(prepared, finalized, executed.timing);
      await this.#deliverEnd(finalized);
      return finalized;
    });
  }

  /** Mailbox job: the start event, then stage 1. */
  async #startAndPrepare(toolCall: ToolCall): Promise<Preparation> {
    const callTrace = this.#startCallTrace(toolCall);
    if (this.#hasAudience()) {
      await this.#deliver({
        type: "tool_execution_start",
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        args: toolCall.arguments,
      });
    }
    const preparation = await prepareToolCall(this.#scope, toolCall);
    if (callTrace !== undefined) this.#keepCallTrace(preparation, callTrace);
    return preparation;
  }

  /**
   * Stage 2, outside the mailbox. Partial results are delivered through the
   * mailbox as they come, and all of them are awaited before the stage ends.
   */
  #execute(prepared: PreparedCall): Promise<ExecutedCall> {
    // Partials are delivered only while someone listens; a batch nobody
    // observes gets one shared no-op (tools may call onUpdate regardless).
    const updates = this.#hasAudience() ? new UpdateDeliveries(this, prepared.toolCall) : undefined;
    const onUpdate = updates === undefined ? ignoreUpdate : updates.onUpdate;
    if (prepared.entry.kind !== "worker") return this.#executeInline(prepared, onUpdate, updates);
    // A promise chain, not an async function: this runs for every worker call.
    return this.#runOnPool(prepared, onUpdate).then((outcome) => {
      const executed: ExecutedCall =
        outcome.kind === "ok"
          ? { result: outcome.result, isError: false, timing: outcome.timing }
          : { result: createErrorToolResult(outcome.message, outcome.code), isError: true, timing: outcome.timing };
      return updates?.pending === undefined ? executed : updates.settled().then(() => executed);
    });
  }

  /** Hands a prepared worker call to its pool. */
  #runOnPool(prepared: PreparedCall, onUpdate: (partialResult: AgentToolResult<unknown>) => void): Promise<WorkerCallOutcome> {
    const { toolCall, args } = prepared;
    const tool = (prepared.entry as Extract<RegisteredTool, { kind: "worker" }>).tool;
    return this.#scope.services.poolFor(tool).run({
      tool,
      toolCallId: toolCall.id,
      args,
      signal: this.#scope.signal,
      onUpdate,
      session: this.#scope.session,
      traceparent: this.#callTraces?.get(prepared)?.traceparent,
    });
  }

  /** Posts a partial result's update event as a mailbox job; used by {@link UpdateDeliveries}. */
  postUpdate(toolCall: ToolCall, partialResult: AgentToolResult<unknown>): Promise<void> | undefined {
    if (!this.#hasAudience()) return undefined;
    return this.#mail().post(() =>
      this.#deliver({
        type: "tool_execution_update",
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        args: toolCall.arguments,
        partialResult,
      }),
    );
  }

  async #executeInline(
    prepared: PreparedCall,
    onUpdate: (partialResult: AgentToolResult<unknown>) => void,
    updates: UpdateDeliveries | undefined,
  ): Promise<ExecutedCall> {
    const { toolCall, args } = prepared;
    const tool = (prepared.entry as Extract<RegisteredTool, { kind: "inline" }>).tool;
    const callTrace = this.#callTraces?.get(prepared);
    const { now } = this.#scope.services;
    const startedAt = now();
    const timingUntilNow = (): CallTiming => ({ submittedAt: startedAt, startedAt, endedAt: now() });
    try {
      const run = () => tool.execute(toolCall.id, args, this.#scope.signal, onUpdate);
      const execution = callTrace === undefined ? run() : callTrace.runInContext(run);
      const result = await untilStopped(execution, this.#scope.services.stopSignal);
      if (result === stoppedByForce) {
        execution.catch(() => {}); // settles unobserved now; never an unhandled rejection
        const message = `Tool "${toolCall.name}" was stopped: the runtime was closed by force`;
        return { result: createErrorToolResult(message, "TP_ERR_CLOSED"), isError: true, timing: timingUntilNow() };
      }
      const timing = timingUntilNow();
      if (updates?.pending !== undefined) await updates.settled();
      return { result, isError: false, timing };
    } catch (error) {
      const timing = timingUntilNow();
      if (updates?.pending !== undefined) await updates.settled();
      return { result: createErrorToolResult(describeThrown(error)), isError: true, timing };
    }
  }

  /** Stage 3, a mailbox job: `afterToolCall` overrides field by field; a throw becomes an error result. */
  async #finalize(prepared: PreparedCall, executed: ExecutedCall): Promise<FinalizedCall> {
    let { result, isError } = executed;
    const { afterToolCall, assistantMessage, context, signal } = this.#scope;
    if (afterToolCall !== undefined) {
      try {
        const override = await afterToolCall(
          { assistantMessage, toolCall: prepared.toolCall, args: prepared.args, result, isError, context },
          signal,
        );
        if (override) {
          result = {
            content: override.content ?? result.content,
            details: override.details ?? result.details,
            terminate: override.terminate ?? result.terminate,
          };
          isError = override.isError ?? isError;
        }
      } catch (error) {
        result = createErrorToolResult(describeThrown(error));
        isError = true;
      }
    }
    const finalized: FinalizedCall = { toolCall: prepared.toolCall, result, isError };
    if (executed.timing !== undefined) finalized.timing = executed.timing;
    return finalized;
  }

  /** Stage 4. */
  #deliverEnd(finalized: FinalizedCall): void | Promise<void> {
    if (!this.#hasAudience()) return;
    return this.#deliver(
      {
        type: "tool_execution_end",
        toolCallId: finalized.toolCall.id,
        toolName: finalized.toolCall.name,
        result: finalized.result,
        isError: finalized.isError,
      },
      finalized.timing === undefined ? undefined : toCallDurations(finalized.timing),
    );
  }

  /** Stage 5. */
  async #deliverMessage(finalized: FinalizedCall): Promise<ToolResultMessage> {
    const message = createToolResultMessage(finalized);
    if (this.#hasAudience()) {
      await this.#deliver({ type: "message_start", message });
      await this.#deliver({ type: "message_end", message });
    }
    return message;
  }

  /** Runs only inside mailbox jobs, so deliveries never overlap. */
  #deliver(event: BatchEvent, durations?: CallDurations): void | Promise<void> {
    this.#scope.services.publish(event, this.#scope.batchId, durations);
    return this.#scope.emit?.(event);
  }
}

/** Stage 5 of a batch nobody observes: the messages in call order, and the terminate flag. */
function outcomeOf(finalizedCalls: FinalizedCall[]): BatchOutcome {
  return { messages: finalizedCalls.map(createToolResultMessage), terminate: shouldTerminateBatch(finalizedCalls) };
}

/**
 * The update events of one call of an observed batch: each partial result is
 * posted to the mailbox as it comes; the call's execution ends only once all
 * of them are delivered.
 */
class UpdateDeliveries {
  readonly #coordinator: BatchCoordinator;
  readonly #toolCall: ToolCall;
  /** Deliveries posted so far; undefined while there are none. */
  pending: Promise<void>[] | undefined;

  constructor(coordinator: BatchCoordinator, toolCall: ToolCall) {
    this.#coordinator = coordinator;
    this.#toolCall = toolCall;
  }

  readonly onUpdate = (partialResult: AgentToolResult<unknown>): void => {
    const delivery = this.#coordinator.postUpdate(this.#toolCall, partialResult);
    if (delivery !== undefined) (this.pending ??= []).push(delivery);
  };

  settled(): Promise<unknown> {
    return Promise.all(this.pending ?? []);
  }
}

const stoppedByForce = Symbol("stoppedByForce");

const ignoreUpdate = (): void => {};

/**
 * Settles like `execution`, or with {@link stoppedByForce} once `stopSignal`
 * aborts. Not `Promise.race` against a promise of the runtime's lifetime:
 * each race would leave a reaction on it that lives as long as the runtime.
 */
function untilStopped<T>(execution: Promise<T>, stopSignal: AbortSignal): Promise<T | typeof stoppedByForce> {
  if (stopSignal.aborted) return Promise.resolve(stoppedByForce);
  return new Promise((resolve, reject) => {
    const onStop = (): void => resolve(stoppedByForce);
    stopSignal.addEventListener("abort", onStop, { once: true });
    execution.then(
      (value) => {
        stopSignal.removeEventListener("abort", onStop);
        resolve(value);
      },
      (error: unknown) => {
        stopSignal.removeEventListener("abort", onStop);
        reject(error);
      },
    );
  });
}

function isPrepared(entry: PreparedCall | FinalizedCall): entry is PreparedCall {
  return "kind" in entry && entry.kind === "prepared";
}
