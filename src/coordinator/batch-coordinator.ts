import { describeThrown } from "../errors.js";
import type { BatchEvent, EmitFunction, ToolExecutionEndEvent } from "../events.js";
import type {
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
import { abortedText, type PiRules } from "./pi-rules.js";
import { prepareToolCall, type Preparation, type PrepareScope } from "./prepare-tool-call.js";
import type { RegisteredTool } from "./tool-registry.js";
import { createErrorToolResult, shouldTerminateBatch, type FinalizedCall } from "./tool-results.js";

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
 * observes runs it too, its events delivered to nobody.
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
   * Runs a job of the actor: in mailbox order whenever user code (a hook, the
   * sink, a listener) may run in it; else at once, as nothing could tell.
   */
  #inTurn<T>(job: () => T | PromiseLike<T>): Promise<T> {
    if (this.#hasHooks || this.#hasAudience()) return (this.#mailbox ??= new Mailbox()).post(job);
    return (async () => job())();
  }

  /** Runs the batch. Rejects only when the event sink throws, as pi's loop does. */
  run(): Promise<BatchOutcome> {
    const { assistantMessage, registry, toolExecution } = this.#scope;
    const toolCalls = assistantMessage.content.filter((block): block is ToolCall => block.type === "toolCall");
    if (toolCalls.length > 0 && this.#rules.unexecutedReason(assistantMessage, toolCalls[0]!) !== undefined) {
      return this.#runUnexecuted(toolCalls);
    }
    const isSequential =
      toolExecution === "sequential" || toolCalls.some((call) => registry.get(call.name)?.tool.executionMode === "sequential");
    return isSequential ? this.#runSequential(toolCalls) : this.#runParallel(toolCalls);
  }

  /**
   * One call through prepare, execute and finalize, with no event and no
   * message (pi 1.6's `runToolCall`); its partial results go to `onUpdate`.
   * Never rejects for the call's own failures.
   */
  async runToolCall(toolCall: ToolCall, onUpdate: (partialResult: AgentToolResult<unknown>) => void): Promise<FinalizedCall> {
    const preparation = await this.#inTurn(() => this.#prepare(toolCall));
    if (!isPrepared(preparation)) return preparation;
    const executed = await this.#execute(preparation, new UpdateDeliveries(onUpdate));
    return this.#inTurn(() => this.#finalize(preparation, executed));
  }

  async #runSequential(toolCalls: ToolCall[]): Promise<BatchOutcome> {
    const finalizedCalls: FinalizedCall[] = [];
    const messages: ToolResultMessage[] = [];
    for (const toolCall of toolCalls) {
      const preparation = await this.#inTurn(() => this.#startAndPrepare(toolCall));
      const executed = isPrepared(preparation) ? await this.#execute(preparation, this.#updatesOf(toolCall)) : undefined;
      const [finalized, message] = await this.#inTurn(async () => {
        const finalized = isPrepared(preparation) ? await this.#finalize(preparation, executed!) : preparation;
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
    const entries: Preparation[] = [];
    for (const toolCall of toolCalls) {
      entries.push(
        await this.#inTurn(async () => {
          const preparation = await this.#startAndPrepare(toolCall);
          if (!isPrepared(preparation)) await this.#deliverEnd(preparation);
          return preparation;
        }),
      );
    }
    // Stages 2–4 of every prepared call at once; each ends when it is finalized.
    const finalizedCalls = await Promise.all(entries.map((entry) => (isPrepared(entry) ? this.#startExecution(entry) : entry)));
    // Stage 5 in the assistant's order, once all have finished.
    const messages = await this.#inTurn(async () => {
      const messages: ToolResultMessage[] = [];
      for (const finalized of finalizedCalls) messages.push(await this.#deliverMessage(finalized));
      return messages;
    });
    return { messages, terminate: shouldTerminateBatch(finalizedCalls) };
  }

  /** A parallel batch's prepared call, once every call was prepared: it runs unless the batch was aborted meanwhile (pi 1.6). */
  #startExecution(prepared: PreparedCall): Promise<FinalizedCall> {
    if (this.#rules.checksAbort && this.#scope.signal?.aborted) {
      const finalized: FinalizedCall = { toolCall: prepared.toolCall, result: createErrorToolResult(abortedText), isError: true };
      return this.#inTurn(async () => {
        this.#endCallTrace(prepared, finalized);
        await this.#deliverEnd(finalized);
        return finalized;
      });
    }
    return this.#execute(prepared, this.#updatesOf(prepared.toolCall)).then((executed) =>
      this.#inTurn(async () => {
        const finalized = await this.#finalize(prepared, executed);
        await this.#deliverEnd(finalized);
        return finalized;
      }),
    );
  }

  /** pi 1.6's truncated response: in order, every call gets its start event, an error end event and its message; none runs. */
  async #runUnexecuted(toolCalls: ToolCall[]): Promise<BatchOutcome> {
    const messages: ToolResultMessage[] = [];
    for (const toolCall of toolCalls) {
      const result = createErrorToolResult(this.#rules.unexecutedReason(this.#scope.assistantMessage, toolCall)!);
      messages.push(
        await this.#inTurn(async () => {
          this.#startCallTrace(toolCall)?.end(result, true, "none");
          await this.#deliverStart(toolCall);
          const finalized: FinalizedCall = { toolCall, result, isError: true };
          await this.#deliverEnd(finalized);
          return this.#deliverMessage(finalized);
        }),
      );
    }
    return { messages, terminate: false };
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
  async #startAndPrepare(toolCall: ToolCall): Promise<Preparation> {
    await this.#deliverStart(toolCall);
    return this.#prepare(toolCall);
  }

  /** Stage 1; a traced call's span starts here and, for an immediate outcome, ends here. */
  #prepare(toolCall: ToolCall): Preparation | Promise<Preparation> {
    const callTrace = this.#startCallTrace(toolCall);
    const preparation = prepareToolCall(this.#scope, toolCall);
    if (callTrace === undefined) return preparation;
    const keep = (preparation: Preparation): Preparation => {
      if (isPrepared(preparation)) this.#callTraces!.set(preparation, callTrace);
      else callTrace.end(preparation.result, true, "none");
      return preparation;
    };
    return preparation instanceof Promise ? preparation.then(keep) : keep(preparation);
  }

  /** A call's update events, while anyone listens; undefined (partials ignored) while nobody does. */
  #updatesOf(toolCall: ToolCall): UpdateDeliveries | undefined {
    if (!this.#hasAudience()) return undefined;
    return new UpdateDeliveries((partialResult) => this.#postUpdate(toolCall, partialResult));
  }

  /**
   * Stage 2, outside the mailbox. Partial results go to `updates` as they
   * come, and every delivery of one sent before the tool settled is awaited
   * before the stage ends; one sent later is still delivered (pi 0.73.1) or
   * dropped (pi 1.6), as the batch's rules say.
   */
  #execute(prepared: PreparedCall, updates: UpdateDeliveries | undefined): Promise<ExecutedCall> {
    if (prepared.entry.kind !== "worker") return this.#executeInline(prepared, updates);
    // A promise chain, not an async function: this runs for every worker call.
    return this.#runOnPool(prepared, updates?.onUpdate ?? ignoreUpdate).then((outcome) => {
      const rules = this.#rules;
      if (rules.dropsLatePartials) updates?.close();
      const { timing } = outcome;
      const durationMs = rules.durationOf(timing === undefined ? 0 : toCallDurations(timing).runMs);
      const executed: ExecutedCall =
        outcome.kind === "ok"
          ? { result: outcome.result, isError: rules.isErrorResult(outcome.result), timing, durationMs }
          : { result: createErrorToolResult(outcome.message, outcome.code), isError: true, timing, durationMs };
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

  /** A partial result's update event, as a mailbox job. */
  #postUpdate(toolCall: ToolCall, partialResult: AgentToolResult<unknown>): Promise<void> | undefined {
    if (!this.#hasAudience()) return undefined;
    return (this.#mailbox ??= new Mailbox()).post(() =>
      this.#deliver({
        type: "tool_execution_update",
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        args: toolCall.arguments,
        partialResult,
      }),
    );
  }

  async #executeInline(prepared: PreparedCall, updates: UpdateDeliveries | undefined): Promise<ExecutedCall> {
    const { toolCall, args } = prepared;
    const tool = (prepared.entry as Extract<RegisteredTool, { kind: "inline" }>).tool;
    const callTrace = this.#callTraces?.get(prepared);
    const { now } = this.#scope.services;
    const rules = this.#rules;
    const startedAt = now();
    // The run ends as the tool settles: before its partials are awaited.
    const ran = (): { timing: CallTiming; durationMs: number | undefined } => {
      const endedAt = now();
      if (rules.dropsLatePartials) updates?.close();
      return { timing: { submittedAt: startedAt, startedAt, endedAt }, durationMs: rules.durationOf(endedAt - startedAt) };
    };
    let executed: ExecutedCall;
    try {
      const run = () => tool.execute(toolCall.id, args, this.#scope.signal, updates?.onUpdate ?? ignoreUpdate);
      const execution = callTrace === undefined ? run() : callTrace.runInContext(run);
      const result = await untilStopped(execution, this.#scope.services.stopSignal);
      if (result === stoppedByForce) {
        execution.catch(() => {}); // settles unobserved now; never an unhandled rejection
        const message = `Tool "${toolCall.name}" was stopped: the runtime was closed by force`;
        return { result: createErrorToolResult(message, "TP_ERR_CLOSED"), isError: true, ...ran() };
      }
      executed = { result, isError: rules.isErrorResult(result), ...ran() };
    } catch (error) {
      executed = { result: createErrorToolResult(describeThrown(error)), isError: true, ...ran() };
    }
    if (updates?.pending !== undefined) await updates.settled();
    return executed;
  }

  /** Stage 3, a mailbox job: `afterToolCall` overrides field by field; a throw becomes an error result. Ends the call's span. */
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
          result = this.#rules.applyOverride(result, override);
          isError = override.isError ?? isError;
        }
      } catch (error) {
        result = createErrorToolResult(describeThrown(error));
        isError = true;
      }
    }
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
  async #deliverMessage(finalized: FinalizedCall): Promise<ToolResultMessage> {
    const message = this.#rules.resultMessage(finalized);
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

/**
 * The partial results of one call: each is handed to `deliver` as it comes
 * (an update event posted to the mailbox, or a caller's own `onUpdate`); the
 * call's execution ends only once every delivery made so far has settled.
 */
class UpdateDeliveries {
  readonly #deliver: (partialResult: AgentToolResult<unknown>) => unknown;
  /** Deliveries made so far; undefined while there are none. */
  pending: Promise<unknown>[] | undefined;
  /** Set once the tool settled, where the batch's rules drop later partials. */
  #isClosed = false;

  constructor(deliver: (partialResult: AgentToolResult<unknown>) => unknown) {
    this.#deliver = deliver;
  }

  readonly onUpdate = (partialResult: AgentToolResult<unknown>): void => {
    if (this.#isClosed) return;
    const delivery = this.#deliver(partialResult);
    if (delivery !== undefined) (this.pending ??= []).push(Promise.resolve(delivery));
  };

  /** Partials sent from now on are dropped. */
  close(): void {
    this.#isClosed = true;
  }

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

function isPrepared(entry: Preparation | FinalizedCall): entry is PreparedCall {
  return "kind" in entry && entry.kind === "prepared";
}
