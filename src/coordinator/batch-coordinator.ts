/**
 * The coordinator of one batch: pi's five stages for every call, in
 * sequential or parallel mode, through one mailbox.
 *
 * Longer than the house's ~400 lines: the stage sequence is one pipeline
 * that reads best in one place (every stage's job is a method here, each
 * short); what stands alone is in its own module (preparation, the
 * mailbox, update deliveries, results).
 *
 * @module
 */
import { describeThrown, outcomeTexts, type ErrorCode } from "../errors.js";
import type { BatchEvent, EmitFunction, ToolExecutionEndEvent } from "../events.js";
import type { AfterToolCallHook, AgentToolResult, BatchOutcome, ToolCall, ToolExecutionMode, ToolResultMessage } from "../types.js";
import type { BatchTrace, CallExecution, CallTrace } from "../tracing/batch-trace.js";
import { toCallDurations, type CallDurations } from "../tracing/call-durations.js";
import type { CallTiming } from "../contracts/call-timing.js";
import type { ToolCallPool, WorkerCallOutcome } from "../contracts/pool-contract.js";
import type { WorkerTool } from "../contracts/worker-tool.js";
import { CapContext, claimOf, enterCapContext, leaveCapContext, type BatchCaps, type CapWait } from "./call-caps.js";
import { Mailbox } from "./mailbox.js";
import { UpdateDeliveries, type UpdateDeliveryOptions } from "./update-deliveries.js";
import { afterStep, allThen, andThen, eachInOrder, type MaybePromise } from "./maybe-async.js";
import { abortedText, type PiRules } from "./pi-rules.js";
import { prepareToolCall, type Preparation, type PrepareScope } from "./prepare-tool-call.js";
import type { RegisteredTool } from "./tool-registry.js";
import type { ForceStop } from "./force-stop.js";
import { createErrorToolResult, shouldTerminateBatch, snapshotOf, type FinalizedCall } from "./tool-results.js";

/** What every batch needs of its runtime: made once per runtime. */
export interface BatchServices {
  /** The pool a worker tool runs on. */
  poolFor: (tool: WorkerTool) => ToolCallPool;
  /** Stopped when the runtime is closed by force: running inline calls are then no longer awaited. */
  forceStop: ForceStop;
  /** Hands an event to the runtime's listeners, with a call's durations on its end event; never throws. */
  publish: (event: BatchEvent, batchId: string, sessionKey: string | undefined, durations?: CallDurations) => void;
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
  /** The batch's `sessionKey`, for the runtime's listeners (`meta.sessionKey`). */
  sessionKey: string | undefined;
  toolExecution: ToolExecutionMode;
  emit: EmitFunction | undefined;
  services: BatchServices;
  /** The batch's spans, when it is traced. */
  trace: BatchTrace | undefined;
  /** The caps its calls count against; undefined when none can apply. */
  caps: BatchCaps | undefined;
}

type PreparedCall = Extract<Preparation, { kind: "prepared" }>;

/** A prepared call with its execution, handed to the finalize job. */
interface ExecutedStep {
  prepared: PreparedCall;
  executed: ExecutedCall;
}

/** A call of a sequential batch after stage 5. */
interface ConcludedCall {
  finalized: FinalizedCall;
  message: ToolResultMessage;
}

interface ExecutedCall {
  result: AgentToolResult<unknown>;
  isError: boolean;
  /** When the call waited and ran. */
  timing: CallTiming | undefined;
  /** pi 1.6's `durationMs` of the call. */
  durationMs: number | undefined;
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
 * completion order and the messages in the assistant's order. This is the one
 * copy of that sequence: where the batch's pi (0.73.1 or 1.6.0) has a rule of
 * its own, the pipeline asks the batch's {@link PiRules}. A batch nobody
 * observes runs it too, its events delivered to nobody; its steps then run
 * synchronously wherever nothing waits (see `maybe-async.ts`), which keeps
 * it as cheap as a pipeline written for it alone.
 */
export class BatchCoordinator {
  readonly #scope: BatchScope;
  readonly #rules: PiRules;
  /** Made on first use: a batch with no hook and nobody listening never needs one. */
  #mailbox: Mailbox | undefined;

  /** With no hook and nobody listening, no user code runs in a job: jobs need no mailbox. */
  readonly #hasHooks: boolean;
  /** The span of each prepared call of a traced batch, until it is finalized. */
  readonly #callTraces: Map<PreparedCall, CallTrace> | undefined;

  constructor(scope: BatchScope) {
    this.#scope = scope;
    this.#rules = scope.rules;
    this.#hasHooks = scope.beforeToolCall !== undefined || scope.afterToolCall !== undefined;
    this.#callTraces = scope.trace === undefined ? undefined : new Map();
  }

  /** Whether anyone (the sink or a runtime listener) receives events now; when nobody does, events go nowhere. */
  #hasAudience(): boolean {
    return this.#scope.emit !== undefined || this.#scope.services.hasListeners();
  }

  /**
   * Runs `job(arg)` as a job of the actor: in mailbox order whenever user
   * code (a hook, the sink, a listener) may run in it; else at once, as
   * nothing could tell. Jobs are methods given their argument, not closures:
   * a batch nobody observes then allocates nothing per stage.
   */
  #inTurn<A, T>(job: (this: BatchCoordinator, arg: A) => MaybePromise<T>, arg: A): MaybePromise<T> {
    if (this.#hasHooks || this.#hasAudience()) return (this.#mailbox ??= new Mailbox()).post(() => job.call(this, arg));
    return job.call(this, arg);
  }

  /** Runs the batch. Rejects only when the event sink throws, as pi's loop does. */
  run(): Promise<BatchOutcome> {
    try {
      const { assistantMessage, registry, toolExecution } = this.#scope;
      const toolCalls = assistantMessage.content.filter((block): block is ToolCall => block.type === "toolCall");
      if (toolCalls.length > 0 && this.#rules.unexecutedReason(assistantMessage, toolCalls[0]!) !== undefined) {
        return Promise.resolve(this.#runUnexecuted(toolCalls));
      }
      const isSequential = toolExecution === "sequential" || toolCalls.some((call) => registry.get(call.name)?.tool.executionMode === "sequential");
      return Promise.resolve(isSequential ? this.#runSequential(toolCalls) : this.#runParallel(toolCalls));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * One call through prepare, execute and finalize, with no event and no
   * message (pi 1.6's `runToolCall`); its partial results go to `onUpdate`.
   * Never rejects for the call's own failures.
   */
  async runToolCall(toolCall: ToolCall, onUpdate: (partialResult: AgentToolResult<unknown>) => void): Promise<FinalizedCall> {
    const preparation = await this.#inTurn(this.#prepare, toolCall);
    if (!isPrepared(preparation)) return preparation;
    return this.#execute(preparation, new UpdateDeliveries(onUpdate, deliveryOptionsOf(preparation)), (executed) =>
      this.#inTurn(this.#finalizeJob, { prepared: preparation, executed }),
    );
  }

  /** Each call through every stage before the next one starts. */
  #runSequential(toolCalls: ToolCall[]): MaybePromise<BatchOutcome> {
    return andThen(eachInOrder(toolCalls, this, this.#runInSequence), (calls) => ({
      messages: calls.map((call) => call.message),
      terminate: shouldTerminateBatch(calls.map((call) => call.finalized)),
    }));
  }

  #runInSequence(toolCall: ToolCall): MaybePromise<ConcludedCall> {
    return andThen(this.#inTurn(this.#startAndPrepare, toolCall), (preparation) => {
      if (!isPrepared(preparation)) return this.#inTurn(this.#conclude, preparation as FinalizedCall);
      return this.#execute(preparation, this.#updatesOf(preparation), (executed) =>
        this.#inTurn(this.#finalizeAndConclude, { prepared: preparation, executed }),
      );
    });
  }

  #finalizeAndConclude(executed: ExecutedStep): MaybePromise<ConcludedCall> {
    return andThen(this.#finalizeJob(executed), (finalized) => this.#conclude(finalized));
  }

  /** Stages 4–5 of a call of a sequential batch, as one job. */
  #conclude(finalized: FinalizedCall): MaybePromise<ConcludedCall> {
    return andThen(afterStep(this.#deliverEnd(finalized), finalized), (finalized) =>
      andThen(this.#deliverMessage(finalized), (message) => ({ finalized, message })),
    );
  }

  /**
   * Stage 1 for every call, in order (an immediate outcome ends at once);
   * then stages 2–4 of every prepared call at once, each ending when it is
   * finalized; then stage 5 in the assistant's order.
   */
  #runParallel(toolCalls: ToolCall[]): MaybePromise<BatchOutcome> {
    return andThen(eachInOrder(toolCalls, this, this.#prepareInParallel), (entries) => {
      const steps: MaybePromise<FinalizedCall>[] = [];
      for (const entry of entries) steps.push(isPrepared(entry) ? this.#startExecution(entry) : (entry as FinalizedCall));
      return allThen(steps, (finalizedCalls) =>
        andThen(this.#inTurn(this.#deliverMessages, finalizedCalls), (messages) => ({
          messages,
          terminate: shouldTerminateBatch(finalizedCalls),
        })),
      );
    });
  }

  #prepareInParallel(toolCall: ToolCall): MaybePromise<Preparation> {
    return this.#inTurn(this.#startAndPrepareInParallel, toolCall);
  }

  /** Mailbox job of a parallel batch: stage 1, and the end event of an immediate outcome. */
  #startAndPrepareInParallel(toolCall: ToolCall): MaybePromise<Preparation> {
    return andThen(this.#startAndPrepare(toolCall), (preparation) =>
      isPrepared(preparation) ? preparation : afterStep(this.#deliverEnd(preparation as FinalizedCall), preparation),
    );
  }

  #deliverMessages(finalizedCalls: FinalizedCall[]): MaybePromise<ToolResultMessage[]> {
    return eachInOrder(finalizedCalls, this, this.#deliverMessage);
  }

  /** A parallel batch's prepared call, once every call was prepared: it runs unless the batch was aborted meanwhile (pi 1.6). */
  #startExecution(prepared: PreparedCall): MaybePromise<FinalizedCall> {
    if (this.#rules.checksAbort && this.#scope.signal?.aborted) {
      const finalized: FinalizedCall = { toolCall: prepared.toolCall, result: createErrorToolResult(abortedText), isError: true };
      this.#endCallTrace(prepared, finalized);
      return this.#inTurn(this.#end, finalized);
    }
    return this.#execute(prepared, this.#updatesOf(prepared), (executed) => this.#inTurn(this.#finalizeAndEnd, { prepared, executed }));
  }

  #finalizeAndEnd(executed: ExecutedStep): MaybePromise<FinalizedCall> {
    return andThen(this.#finalizeJob(executed), (finalized) => this.#end(finalized));
  }

  /** Stage 4 as a job: the end event; the finalized call. */
  #end(finalized: FinalizedCall): MaybePromise<FinalizedCall> {
    return afterStep(this.#deliverEnd(finalized), finalized);
  }

  /** pi 1.6's truncated response: in order, every call gets its start event, an error end event and its message; none runs. */
  #runUnexecuted(toolCalls: ToolCall[]): MaybePromise<BatchOutcome> {
    return andThen(eachInOrder(toolCalls, this, this.#failUnexecuted), (messages) => ({ messages, terminate: false }));
  }

  #failUnexecuted(toolCall: ToolCall): MaybePromise<ToolResultMessage> {
    return this.#inTurn(this.#failUnexecutedJob, toolCall);
  }

  #failUnexecutedJob(toolCall: ToolCall): MaybePromise<ToolResultMessage> {
    const result = createErrorToolResult(this.#rules.unexecutedReason(this.#scope.assistantMessage, toolCall)!);
    this.#startCallTrace(toolCall)?.end(result, true, "none");
    const finalized: FinalizedCall = { toolCall, result, isError: true };
    return andThen(afterStep(this.#deliverStart(toolCall), finalized), (finalized) =>
      andThen(this.#end(finalized), (finalized) => this.#deliverMessage(finalized)),
    );
  }

  #startCallTrace(toolCall: ToolCall): CallTrace | undefined {
    return this.#scope.trace?.startCall(toolCall, this.#scope.registry.get(toolCall.name)?.tool.description);
  }

  /** Ends the span of a prepared call with its final result. */
  #endCallTrace(prepared: PreparedCall, final: FinalizedCall): void {
    const callTraces = this.#callTraces;
    const callTrace = callTraces?.get(prepared);
    if (callTrace === undefined) return;
    callTraces!.delete(prepared);
    const execution: CallExecution = prepared.entry.kind;
    callTrace.end(final.result, final.isError, execution, final.timing === undefined ? undefined : toCallDurations(final.timing));
  }

  /** Mailbox job: the start event, then stage 1. */
  #startAndPrepare(toolCall: ToolCall): MaybePromise<Preparation> {
    const started = this.#deliverStart(toolCall);
    return started === undefined ? this.#prepare(toolCall) : Promise.resolve(started).then(() => this.#prepare(toolCall));
  }

  /** Stage 1; a traced call's span starts here and, for an immediate outcome, ends here. */
  #prepare(toolCall: ToolCall): MaybePromise<Preparation> {
    const callTrace = this.#startCallTrace(toolCall);
    const preparation = prepareToolCall(this.#scope, toolCall);
    if (callTrace === undefined) return preparation;
    return andThen(preparation, (settled) => {
      if (isPrepared(settled)) this.#callTraces!.set(settled, callTrace);
      else callTrace.end(settled.result, true, "none");
      return settled;
    });
  }

  /** A call's update events, while anyone listens; undefined (partials ignored) while nobody does. */
  #updatesOf(prepared: PreparedCall): UpdateDeliveries | undefined {
    if (!this.#hasAudience()) return undefined;
    const { toolCall } = prepared;
    const options = deliveryOptionsOf(prepared);
    return new UpdateDeliveries((partialResult) => this.#postUpdate(toolCall, partialResult, options.hold), options);
  }

  /**
   * Stage 2, outside the mailbox. Partial results go to `updates` as they
   * come, and every delivery of one sent before the tool settled is awaited
   * before the stage ends; one sent later is still delivered (pi 0.73.1) or
   * dropped (pi 1.6), as the batch's rules say. `next` takes the executed
   * call on: the stages after it, in the same promise hop.
   */
  #execute<T>(prepared: PreparedCall, updates: UpdateDeliveries | undefined, next: (executed: ExecutedCall) => MaybePromise<T>): Promise<T> {
    const caps = this.#scope.caps;
    const claim = caps === undefined ? undefined : claimOf(caps, prepared.toolCall.name);
    if (claim === undefined) return this.#executeNow(prepared, updates, undefined, next);
    // A capped call holds its slots while it executes: from here (after its
    // hooks, its start event already sent) until the tool settled, before
    // afterToolCall. Waiting here changes no order pi promises: end events
    // come in completion order, messages in the model's order.
    const { gate } = caps!.runtime;
    // An inline call's execute can make nested calls; a worker call's spread parts count against its caps.
    const context = new CapContext(claim, caps!);
    const leaveThen = (executed: ExecutedCall): MaybePromise<T> => {
      gate.leave(claim);
      return next(executed);
    };
    const entered = gate.enter(claim);
    if (entered === undefined) return this.#executeNow(prepared, updates, context, leaveThen);
    const { batchId, sessionKey } = this.#scope;
    const wait: CapWait = { tool: prepared.toolCall.name, toolCallId: prepared.toolCall.id, batchId, since: Date.now() };
    if (sessionKey !== undefined) wait.sessionKey = sessionKey;
    claim.wait = wait;
    return entered.then(() => this.#executeNow(prepared, updates, context, leaveThen));
  }

  /** Stage 2 itself, once the call holds its slots (`capContext`, where any cap applies to it). */
  #executeNow<T>(
    prepared: PreparedCall,
    updates: UpdateDeliveries | undefined,
    capContext: CapContext | undefined,
    next: (executed: ExecutedCall) => MaybePromise<T>,
  ): Promise<T> {
    if (prepared.entry.kind !== "worker") return this.#executeInline(prepared, updates, capContext).then(next);
    return this.#runOnPool(prepared, updates?.onUpdate ?? ignoreUpdate, capContext).then((outcome) => {
      const rules = this.#rules;
      if (rules.dropsLatePartials) updates?.close();
      const { timing } = outcome;
      // The run time on the call's thread (or node), as the pool timed it.
      const durationMs = rules.reportsDuration ? Math.round(timing === undefined ? 0 : toCallDurations(timing).runMs) : undefined;
      const executed: ExecutedCall =
        outcome.kind === "ok"
          ? this.#executedOf(outcome.result, { timing, durationMs })
          : this.#executedError(outcome.message, outcome.code, { timing, durationMs });
      return updates?.pending === undefined ? next(executed) : updates.settled().then(() => next(executed));
    });
  }

  /** Hands a prepared worker call to its pool. */
  #runOnPool(
    prepared: PreparedCall,
    onUpdate: (partialResult: AgentToolResult<unknown>) => void,
    capContext: CapContext | undefined,
  ): Promise<WorkerCallOutcome> {
    const { toolCall, args } = prepared;
    const tool = (prepared.entry as Extract<RegisteredTool, { kind: "worker" }>).tool;
    return this.#scope.services.poolFor(tool).run({
      partCaps: capContext,
      tool,
      toolCallId: toolCall.id,
      args,
      signal: this.#scope.signal,
      onUpdate,
      session: this.#scope.session,
      sessionKey: this.#scope.sessionKey,
      batchId: this.#scope.batchId,
      traceparent: this.#callTraces?.get(prepared)?.traceparent,
    });
  }

  /**
   * A partial result's update event, as a mailbox job. pi emits it inside
   * the tool's `onUpdate`; so does toolpool whenever the mailbox is idle. A
   * partial that must wait behind other jobs is delivered as it was sent
   * (`hold`: a copy taken now, where the tool may change the object meanwhile).
   */
  #postUpdate(toolCall: ToolCall, partialResult: AgentToolResult<unknown>, hold: UpdateDeliveryOptions["hold"]): Promise<unknown> | undefined {
    if (!this.#hasAudience()) return undefined;
    const mailbox = (this.#mailbox ??= new Mailbox());
    const sent = mailbox.size === 0 || hold === undefined ? partialResult : hold(partialResult);
    return mailbox.runOrPost(() =>
      this.#deliver({
        type: "tool_execution_update",
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        args: toolCall.arguments,
        partialResult: sent,
      }),
    );
  }

  async #executeInline(prepared: PreparedCall, updates: UpdateDeliveries | undefined, capContext: CapContext | undefined): Promise<ExecutedCall> {
    const { toolCall, args } = prepared;
    const tool = (prepared.entry as Extract<RegisteredTool, { kind: "inline" }>).tool;
    const callTrace = this.#callTraces?.get(prepared);
    const { now, forceStop } = this.#scope.services;
    const rules = this.#rules;
    const signal = this.#scope.signal;
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
      return this.#executedError(outcomeTexts.stoppedByForce(toolCall.name), "TP_ERR_CLOSED", this.#inlineTiming(startedAt, now()));
    }
    const executed: ExecutedCall =
      "error" in outcome
        ? this.#executedError(describeThrown(outcome.error), undefined, this.#inlineTiming(startedAt, endedAt))
        : { result: outcome.result as AgentToolResult<unknown>, isError: outcome.isError, ...this.#inlineTiming(startedAt, endedAt) };
    if (updates?.pending !== undefined) await updates.settled();
    return executed;
  }

  /** An inline call's timing, and its `durationMs` where the batch's pi reports one. */
  #inlineTiming(startedAt: number, endedAt: number): Pick<ExecutedCall, "timing" | "durationMs"> {
    return {
      timing: { submittedAt: startedAt, startedAt, endedAt },
      durationMs: this.#rules.reportsDuration ? Math.round(endedAt - startedAt) : undefined,
    };
  }

  /**
   * A value a worker tool returned, as pi 1.6 takes it: an error result when
   * it says `isError: true`, or when reading that fails (no result at all:
   * `null`, `undefined`), whichever pi (see `PiRules.isErrorResult`).
   */
  #executedOf(result: unknown, timing: Pick<ExecutedCall, "timing" | "durationMs">): ExecutedCall {
    try {
      return { result: result as AgentToolResult<unknown>, isError: this.#rules.isErrorResult(result), ...timing };
    } catch (error) {
      return this.#executedError(describeThrown(error), undefined, timing);
    }
  }

  #executedError(message: string, code: ErrorCode | undefined, timing: Pick<ExecutedCall, "timing" | "durationMs">): ExecutedCall {
    return { result: createErrorToolResult(message, code), isError: true, ...timing };
  }

  /** Stage 3, a mailbox job: `afterToolCall` overrides field by field; a throw becomes an error result. Ends the call's span. */
  #finalizeJob({ prepared, executed }: ExecutedStep): MaybePromise<FinalizedCall> {
    const { afterToolCall } = this.#scope;
    if (afterToolCall === undefined) return this.#finalized(prepared, executed, executed.result, executed.isError);
    return this.#askAfterToolCall(afterToolCall, prepared, executed);
  }

  async #askAfterToolCall(afterToolCall: AfterToolCallHook, prepared: PreparedCall, executed: ExecutedCall): Promise<FinalizedCall> {
    let { result, isError } = executed;
    const { assistantMessage, context, signal } = this.#scope;
    try {
      const override = await afterToolCall({ assistantMessage, toolCall: prepared.toolCall, args: prepared.args, result, isError, context }, signal);
      if (override) {
        result = this.#rules.applyOverride(result, override);
        isError = override.isError ?? isError;
      }
    } catch (error) {
      result = createErrorToolResult(describeThrown(error));
      isError = true;
    }
    return this.#finalized(prepared, executed, result, isError);
  }

  #finalized(prepared: PreparedCall, executed: ExecutedCall, result: AgentToolResult<unknown>, isError: boolean): FinalizedCall {
    const finalized: FinalizedCall = { toolCall: prepared.toolCall, result, isError };
    if (executed.timing !== undefined) finalized.timing = executed.timing;
    if (executed.durationMs !== undefined) finalized.durationMs = executed.durationMs;
    this.#endCallTrace(prepared, finalized);
    return finalized;
  }

  #deliverStart(toolCall: ToolCall): void | Promise<void> {
    if (!this.#hasAudience()) return;
    return this.#deliver({ type: "tool_execution_start", toolCallId: toolCall.id, toolName: toolCall.name, args: toolCall.arguments });
  }

  /** Stage 4. */
  #deliverEnd(finalized: FinalizedCall): void | Promise<void> {
    if (!this.#hasAudience()) return;
    const event: ToolExecutionEndEvent = {
      type: "tool_execution_end",
      toolCallId: finalized.toolCall.id,
      toolName: finalized.toolCall.name,
      result: finalized.result,
      isError: finalized.isError,
    };
    if (finalized.durationMs !== undefined) event.durationMs = finalized.durationMs;
    return this.#deliver(event, finalized.timing === undefined ? undefined : toCallDurations(finalized.timing));
  }

  /** Stage 5. */
  #deliverMessage(finalized: FinalizedCall): MaybePromise<ToolResultMessage> {
    const message = this.#rules.resultMessage(finalized);
    if (!this.#hasAudience()) return message;
    return andThen(afterStep(this.#deliver({ type: "message_start", message }), message), (message) =>
      afterStep(this.#deliver({ type: "message_end", message }), message),
    );
  }

  /** Runs only inside mailbox jobs, so deliveries never overlap. */
  #deliver(event: BatchEvent, durations?: CallDurations): void | Promise<void> {
    this.#scope.services.publish(event, this.#scope.batchId, this.#scope.sessionKey, durations);
    return this.#scope.emit?.(event);
  }
}

const stoppedByForce = Symbol("stoppedByForce");

const ignoreUpdate = (): void => {};

/**
 * How a prepared call's partials are handed on: an inline tool's are copied
 * when they must wait (the tool may change the object), and a delivery that
 * throws at once throws into its `onUpdate`, as in pi; a worker's partial is
 * a copy already, and no tool awaits it here.
 */
function deliveryOptionsOf(prepared: PreparedCall): UpdateDeliveryOptions {
  return prepared.entry.kind === "inline" ? inlineDeliveries : workerDeliveries;
}

const inlineDeliveries: UpdateDeliveryOptions = Object.freeze({ hold: snapshotOf, throwsToSender: true });
const workerDeliveries: UpdateDeliveryOptions = Object.freeze({});

function isPrepared(entry: Preparation | FinalizedCall): entry is PreparedCall {
  return "kind" in entry && entry.kind === "prepared";
}
