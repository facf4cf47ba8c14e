/**
 * The runtime: the public facade behind `executeToolCalls`, `runToolCall`
 * and `agentTools`, and its life (close, stats, diagnosis). What it is made
 * of lives in `runtime/`: the composition (`compose.ts`), the pools and which
 * one runs a tool (`pool-router.ts`), the `AgentTool` adapter and the event
 * bus; the work a batch does lives in `coordinator/`, `workers/` and `fleet/`.
 *
 * @module
 */
import { EventEmitter } from "eventemitter3";

import type { FleetStats, PoolDiagnosis, PoolStats } from "./contracts/pool-contract.js";
import { BatchCoordinator, type BatchScope, type BatchServices } from "./coordinator/batch-coordinator.js";
import { checkBatchInput } from "./coordinator/batch-input.js";
import { ForceStop } from "./coordinator/force-stop.js";
import type { PiRules } from "./coordinator/pi-rules.js";
import type { RegisteredTool } from "./coordinator/tool-registry.js";
import { createDeferred, type Deferred } from "./deferred.js";
import { describeValue, ToolpoolError } from "./errors.js";
import type { EmitFunction, RuntimeEvents } from "./events.js";
import type { ResolvedRuntimeOptions, RuntimeOptions } from "./options.js";
import { toAgentTool, toCappedInlineTool, type CappedRun } from "./runtime/agent-tool-adapter.js";
import { composeRuntime } from "./runtime/compose.js";
import { batchMeta, EventBus } from "./runtime/event-bus.js";
import { runCapped, type CapWait, type RuntimeCaps } from "./coordinator/call-caps.js";
import { batchCapsOf, hasRuntimeCaps } from "./runtime/runtime-caps.js";
import type { PoolRouter } from "./runtime/pool-router.js";
import { createPoolEventRelay } from "./runtime/pool-event-relay.js";
import type { PoolEventSource } from "./contracts/pool-events.js";
import { BatchTrace } from "./tracing/batch-trace.js";
import { PoolSpanEvents } from "./tracing/pool-span-events.js";
import { isOtelRegistered, loadOtelApi, type OtelApi, type OtelTracer } from "./tracing/otel-api.js";
import type { AgentContext, AgentTool, AgentToolResult, AgentToolUpdateCallback, AssistantMessage, BatchOutcome, ToolCall } from "./types.js";

export type { CapWait };

/** Options of one `executeToolCalls` call. */
export interface ExecuteOptions {
  /** Handed to hooks as `context`, with `tools` filled in. @default { systemPrompt: "", messages: [] } */
  context?: { systemPrompt?: string; messages?: unknown[] };
  /** Aborts the batch: hooks and inline tools get it as in pi; worker tools get a cooperative `ctx.signal`, then termination. */
  signal?: AbortSignal;
  /** Receives every event of the batch, awaited like pi awaits its sink. */
  emit?: EmitFunction;
  /**
   * The agent session the batch belongs to. Worker calls of different
   * sessions take turns on the pool (round-robin, weighted by each tool's
   * `cost`), so one session's long batch does not hold up every other
   * session's next turn; a session's own calls start in their order. A
   * non-empty string of at most 256 characters.
   * @default undefined (the batch is a session of its own)
   */
  sessionKey?: string;
  /**
   * Most calls of this batch executing at once (nested calls its tools make
   * through `runtime.runToolCall` included). A call over it waits for a
   * slot and never fails for it; start events, end events (in completion
   * order) and messages (in the model's order) keep pi's order. An integer >= 1.
   * @default undefined (no cap)
   */
  maxConcurrency?: number;
}

/** Options of {@link Runtime.runToolCall}. */
export interface RunToolCallOptions {
  /** The assistant message the call belongs to, as the hooks see it. @default a message holding only the call */
  assistantMessage?: AssistantMessage;
  /** Handed to hooks as `context`, with `tools` filled in. @default { systemPrompt: "", messages: [] } */
  context?: { systemPrompt?: string; messages?: unknown[] };
  /** Aborts the call, as a batch's signal does. */
  signal?: AbortSignal;
  /** Receives the call's partial results (pi 1.6: only those sent before the tool settled). */
  onUpdate?: AgentToolUpdateCallback;
  /** The session a worker call takes turns as; see {@link ExecuteOptions.sessionKey}. */
  sessionKey?: string;
}

/** What {@link Runtime.runToolCall} resolves with: the call's final result, as pi 1.6's `runToolCall` gives it. */
export interface ToolCallOutcome {
  toolCall: ToolCall;
  result: AgentToolResult<unknown>;
  isError: boolean;
  /** pi 1.6: milliseconds the tool's execution took; absent when it did not run (and with `pi: "0.73"`). */
  durationMs?: number;
}

/** What {@link Runtime.diagnose} returns. */
export interface RuntimeDiagnosis {
  /** The shared pool (`"shared"`), one per named pool (`"pool:NAME"`, see `workerTool({ pool })`) and one per worker tool with resource limits of its own (the tool's name). */
  pools: ({ pool: string } & PoolDiagnosis)[];
}

/**
 * A tool runtime: executes the tool calls of assistant messages with pi's
 * semantics, running worker tools on a Piscina pool. Create it with
 * {@link createRuntime}; close it when done.
 *
 * It is also an event emitter of every batch's events, with `meta.batchId`.
 */
export class Runtime extends EventEmitter<RuntimeEvents> {
  readonly #options: ResolvedRuntimeOptions;
  /** The rules of the runtime's pi, where 0.73.1 and 1.6.0 differ. */
  readonly #rules: PiRules;
  readonly #registry: ReadonlyMap<string, RegisteredTool>;
  readonly #caps: RuntimeCaps;
  /** Whether a call ever ran capped: until one did, no call can be a capped call's child, and none looks. */
  #hasRunCapped = false;
  /** The pools, and which one runs each worker tool. */
  readonly #router: PoolRouter;
  /**
   * The pools' lifecycle events, the fleet's included: calls `queued`,
   * `started`, `ended`, each with its batch and session
   * (`runtime.poolEvents.on(listener)`), and local threads `ready`, `exited`
   * (`onThread`, with `threads()` for the threads there are).
   */
  readonly poolEvents: PoolEventSource;
  /** The runtime's own listeners, as batches and pools publish to them. */
  readonly #events = new EventBus(this);
  /** Stopped by `close({ force: true })`: inline calls still running are then no longer awaited. */
  readonly #forceStop = new ForceStop();
  /** Batches under way (capped `agentTools()` calls too), and what `close()` waits on until there are none. */
  #runningBatches = 0;
  #idle: Deferred<void> | undefined;
  /** What every batch needs of the runtime; made once, not per batch. */
  readonly #batchServices: BatchServices = {
    poolFor: (tool) => this.#router.poolFor(tool),
    forceStop: this.#forceStop,
    publish: (event, batchId, sessionKey, durations) => this.#events.publish(event.type, event, batchMeta(batchId, sessionKey, durations)),
    hasListeners: () => this.#events.hasBatchListeners(),
    now: () => this.#options.clock.now(),
  };
  /**
   * `@opentelemetry/api` and toolpool's tracer, once a batch found tracing on,
   * the API installed and a tracer provider or context manager registered.
   */
  #tracing: { api: OtelApi; tracer: OtelTracer; poolSpans: PoolSpanEvents } | undefined;
  #agentTools: AgentTool[] | undefined;
  /** What {@link agentTools} gives where the runtime has caps: the tools, their calls counted against them. */
  #cappedAgentTools: AgentTool[] | undefined;
  #batchCount = 0;
  #closing: Promise<void> | undefined;
  /** What the tools' sets opened for this runtime, released once it has closed. */
  readonly #releases: (() => Promise<void>)[];

  constructor(options?: RuntimeOptions) {
    super();
    const parts = composeRuntime(options, {
      onPoolError: (error) => this.#events.publish("pool_error", error),
      onFleetCall: (record) => this.#events.publish("fleet_call", record),
    });
    this.#options = parts.options;
    this.#rules = parts.rules;
    this.#registry = parts.registry;
    this.#router = parts.router;
    this.#caps = parts.caps;
    this.#releases = parts.releases;
    this.poolEvents = createPoolEventRelay(parts.router.eventPools);
  }

  /** The validated options, defaults applied; frozen. */
  get options(): ResolvedRuntimeOptions {
    return this.#options;
  }

  /** The fleet as this runtime sees it; `undefined` without the `fleet` option. */
  get fleetStats(): FleetStats | undefined {
    return this.#router.fleetStats;
  }

  /** Whether `close()` has been called. */
  get isClosed(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * The state of the worker pools (the shared one and any a tool with its own
   * resource limits has), added up; `undefined` when the runtime has no worker tools.
   */
  get poolStats(): PoolStats | undefined {
    return this.#router.poolStats;
  }

  /**
   * The calls waiting for a cap now (`maxConcurrency` of a tool or a batch,
   * `maxConcurrencyPerSession`), first come first: their start event is out,
   * their tool has not started, and no pool has seen them. Empty in a
   * runtime without caps. For a live view or a metric; each call is a copy.
   *
   * @example
   * ```ts
   * for (const wait of runtime.capWaits()) console.log(wait.tool, wait.toolCallId, Date.now() - wait.since);
   * ```
   */
  capWaits(): CapWait[] {
    const waits: CapWait[] = [];
    for (const claim of this.#caps.gate.waitingClaims()) if (claim.wait !== undefined) waits.push({ ...(claim.wait as CapWait) });
    return waits;
  }

  /**
   * Whether a call of the tool named `toolName`, handed to its pool now,
   * would end at once with `TP_ERR_QUEUE_FULL`. Its pool decides, by the
   * rule it applies to every call: the shared pool, the pool of a tool with
   * resource limits of its own, or the fleet. `false` for an inline tool, a
   * name the runtime does not know, and once the runtime is closed (its
   * calls then end with `TP_ERR_CLOSED`).
   *
   * @example
   * ```ts
   * // Refuse work up front, as `toolpool serve` answers 429.
   * if (names.some((name) => runtime.isQueueFull(name))) return retryLater();
   * ```
   */
  isQueueFull(toolName: string): boolean {
    const entry = this.#registry.get(toolName);
    if (entry === undefined || entry.kind !== "worker" || this.isClosed) return false;
    return this.#router.poolFor(entry.tool).isQueueFull();
  }

  /**
   * The inner state of every worker pool, for diagnosing a stall: its Piscina
   * instances and threads, and each call not yet settled (waiting or running,
   * and where). Not for polling on a hot path: it copies everything.
   */
  diagnose(): RuntimeDiagnosis {
    return { pools: this.#router.diagnose() };
  }

  /**
   * Executes the tool calls of one assistant message: one end event and one
   * result message per call, whatever happens to it. Rejects only for misuse
   * (`TP_ERR_CLOSED`, `TP_ERR_INVALID_BATCH`) or when `emit` throws (as pi).
   *
   * @example
   * ```ts
   * const { messages, terminate } = await runtime.executeToolCalls(assistantMessage, {
   *   emit: (event) => console.log(event.type),
   * });
   * ```
   */
  executeToolCalls(assistantMessage: AssistantMessage, options: ExecuteOptions = {}): Promise<BatchOutcome> {
    if (this.#closing !== undefined) {
      return Promise.reject(new ToolpoolError("TP_ERR_CLOSED", "executeToolCalls was called after close()"));
    }
    let coordinator: BatchCoordinator;
    let trace: BatchTrace | undefined;
    const batchId = `b${++this.#batchCount}`;
    try {
      checkBatchInput(assistantMessage, options);
      if (this.#isTracing()) trace = this.#startBatchTrace(batchId, assistantMessage, options);
      coordinator = new BatchCoordinator(this.#batchScope(batchId, assistantMessage, options, trace));
      if (this.#events.hasListeners("batch_start")) {
        const toolCallCount = assistantMessage.content.filter((block) => block.type === "toolCall").length;
        this.#events.publish("batch_start", { type: "batch_start", toolCallCount }, batchMeta(batchId, options.sessionKey));
      }
    } catch (error) {
      trace?.end({ kind: "error", error });
      return Promise.reject(error);
    }
    this.#runningBatches += 1;
    return coordinator.run().then(
      (outcome) => {
        trace?.end({ kind: "ok", value: outcome });
        this.#onBatchSettled();
        if (this.#events.hasListeners("batch_end"))
          this.#events.publish("batch_end", { type: "batch_end", ...outcome }, batchMeta(batchId, options.sessionKey));
        return outcome;
      },
      (error: unknown) => {
        trace?.end({ kind: "error", error });
        this.#onBatchSettled();
        throw error;
      },
    );
  }

  /**
   * Runs one tool call through prepare (validation, `beforeToolCall`),
   * execute and `afterToolCall`, with the runtime's tools, hooks and pi's
   * rules, and emits no event and adds no message: pi 1.6's `runToolCall`.
   * Tools that call other tools use it, so that the hooks (permission checks,
   * say) apply to those calls too. Resolves with the call's final result;
   * never rejects for the call's own failures (unknown tool, invalid
   * arguments, a block, a throw, a fault of its worker are `isError`
   * results). Rejects with `TP_ERR_CLOSED` after `close()` and
   * `TP_ERR_INVALID_BATCH` for a malformed call or options.
   *
   * @example
   * ```ts
   * const { result, isError } = await runtime.runToolCall({ type: "toolCall", id: "c1", name: "grep", arguments: { pattern: "TODO" } });
   * ```
   */
  runToolCall(toolCall: ToolCall, options: RunToolCallOptions = {}): Promise<ToolCallOutcome> {
    if (this.#closing !== undefined) {
      return Promise.reject(new ToolpoolError("TP_ERR_CLOSED", "runToolCall was called after close()"));
    }
    const batchId = `b${++this.#batchCount}`;
    try {
      const ownMessage: AssistantMessage = { role: "assistant", content: [toolCall] };
      checkBatchInput(ownMessage, options);
      const { assistantMessage = ownMessage, onUpdate, context, signal, sessionKey } = options;
      if (assistantMessage !== ownMessage) checkBatchInput(assistantMessage, {});
      if (onUpdate !== undefined && typeof onUpdate !== "function") {
        throw new ToolpoolError("TP_ERR_INVALID_BATCH", `Expected \`onUpdate\` to be a function, got ${describeValue(onUpdate)}`);
      }
      // No sink: the call emits no event (runToolCall never delivers any).
      const coordinator = new BatchCoordinator(this.#batchScope(batchId, assistantMessage, { context, signal, sessionKey }, undefined));
      this.#runningBatches += 1;
      return coordinator.runToolCall(toolCall, onUpdate ?? ignoreUpdate).then(
        ({ toolCall, result, isError, durationMs }) => {
          this.#onBatchSettled();
          return durationMs === undefined ? { toolCall, result, isError } : { toolCall, result, isError, durationMs };
        },
        (error: unknown) => {
          this.#onBatchSettled();
          throw error;
        },
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Everything a batch (or one call of `runToolCall`) needs of the runtime. */
  #batchScope(batchId: string, assistantMessage: AssistantMessage, options: ExecuteOptions, trace: BatchTrace | undefined): BatchScope {
    const { beforeToolCall, afterToolCall } = this.#options;
    // Without a key the batch is a session of its own: a value no other batch holds.
    const { caps, session } = batchCapsOf(this.#caps, this.#hasRunCapped, options.maxConcurrency, options.sessionKey, () => Symbol(batchId));
    if (caps !== undefined) this.#hasRunCapped = true;
    return {
      batchId,
      registry: this.#registry,
      assistantMessage,
      // Only hooks see the context: no batch without one pays for it.
      context:
        beforeToolCall === undefined && afterToolCall === undefined
          ? emptyContext
          : { systemPrompt: "", messages: [], ...options.context, tools: this.#frozenAgentTools() },
      beforeToolCall,
      afterToolCall,
      signal: options.signal,
      session,
      sessionKey: options.sessionKey,
      toolExecution: this.#options.toolExecution,
      emit: options.emit,
      services: this.#batchServices,
      trace,
      rules: this.#rules,
      caps,
    };
  }

  /**
   * pi `AgentTool`s for every tool of this runtime, so that a pi `Agent` can
   * use the pool directly: inline tools as they are, worker tools as tools
   * whose execute dispatches to the pool (a failure throws, with `code` set for
   * toolpool's faults). Where the runtime has caps (`maxConcurrency`,
   * `maxConcurrencyPerSession`), their calls count against them as a
   * batch's calls do, each call a batch and a session of its own (its
   * parent's, when a capped call's execute makes it); inline tools then
   * come back behind a proxy whose execute waits for its slots.
   */
  agentTools(): AgentTool[] {
    if (!hasRuntimeCaps(this.#caps)) return [...this.#frozenAgentTools()];
    // Their calls count against the caps, as a batch's do.
    this.#cappedAgentTools ??= [...this.#registry.values()].map((entry) =>
      entry.kind === "inline"
        ? toCappedInlineTool(entry.tool, this.#runCapped)
        : toAgentTool(entry.tool, this.#router.poolFor(entry.tool), this.#runCapped),
    );
    return [...this.#cappedAgentTools];
  }

  /**
   * Runs one call made through {@link agentTools} under the runtime's caps:
   * a batch of its own, a session of its own, or its parent's where a capped
   * call's execute made it.
   */
  readonly #runCapped: CappedRun = (toolName, toolCallId, run) => {
    const { caps } = batchCapsOf(this.#caps, this.#hasRunCapped, undefined, undefined, () => Symbol(toolCallId));
    if (caps !== undefined) this.#hasRunCapped = true;
    // close() waits for it as for a batch (a call waiting for a cap must not find its pool closed); a close by force, no longer.
    this.#runningBatches += 1;
    let outcome: ReturnType<typeof run> | Promise<ReturnType<typeof run>>;
    try {
      outcome = runCapped(caps, toolName, toolCallId, run, this.#forceStop);
    } catch (error) {
      this.#onBatchSettled();
      throw error;
    }
    this.#forceStop.whenSettled(outcome, () => this.#onBatchSettled());
    return outcome;
  };

  /** One frozen list for every batch's `context.tools`: a hook cannot change another batch's tools. */
  #frozenAgentTools(): AgentTool[] {
    this.#agentTools ??= Object.freeze(
      [...this.#registry.values()].map((entry) => (entry.kind === "inline" ? entry.tool : toAgentTool(entry.tool, this.#router.poolFor(entry.tool)))),
    ) as AgentTool[];
    return this.#agentTools;
  }

  /**
   * Stops accepting batches (`executeToolCalls` then rejects with
   * `TP_ERR_CLOSED`), lets the running ones finish, then stops every worker
   * thread. With `force: true`, every call still executing ends at once with a
   * `TP_ERR_CLOSED` error result (worker threads are terminated; an inline
   * tool's promise is no longer awaited), and its batch goes on to deliver
   * its end events and messages. Safe to call again, also to force a close
   * already under way.
   */
  close(options: { force?: boolean } = {}): Promise<void> {
    if (options.force) this.#forceStop.stop();
    const { pools } = this.#router;
    const closing = (async () => {
      if (options.force) await Promise.all(pools.map((pool) => pool.close({ force: true })));
      if (this.#runningBatches > 0) await (this.#idle ??= createDeferred()).promise;
      await Promise.all(pools.map((pool) => pool.close()));
      await Promise.all(this.#releases.splice(0).map((release) => release()));
    })();
    this.#closing ??= closing;
    return options.force ? closing : this.#closing;
  }

  /**
   * Whether this batch gets a span: tracing on and `@opentelemetry/api`
   * registered with. The API is loaded by the first batch that finds it so,
   * not before: an application that never sets OpenTelemetry up never loads it.
   */
  #isTracing(): boolean {
    if (this.#tracing === undefined && this.#options.tracing && isOtelRegistered()) {
      const api = loadOtelApi();
      // The global provider's tracer: a proxy that follows the provider
      // registered at any time, so one taken now serves later ones too.
      if (api !== undefined) this.#tracing = { api, tracer: api.trace.getTracer(tracerName), poolSpans: new PoolSpanEvents(this.poolEvents) };
    }
    return this.#tracing !== undefined;
  }

  /** The batch's span under the caller's active context, or `undefined` when it is not recorded. */
  #startBatchTrace(batchId: string, assistantMessage: AssistantMessage, options: ExecuteOptions): BatchTrace | undefined {
    const { api, tracer, poolSpans } = this.#tracing!;
    return BatchTrace.start(
      api,
      tracer,
      () => ({
        batchId,
        toolCallCount: assistantMessage.content.filter((block) => block.type === "toolCall").length,
        toolExecution: this.#options.toolExecution,
        sessionKey: options.sessionKey,
      }),
      poolSpans,
    );
  }

  #onBatchSettled(): void {
    this.#runningBatches -= 1;
    if (this.#runningBatches === 0) this.#idle?.resolve();
  }
}

/**
 * Creates a tool runtime. Throws `TP_ERR_INVALID_OPTION` or
 * `TP_ERR_INVALID_TOOL` for bad options or tools.
 *
 * @example
 * ```ts
 * import { createRuntime, workerTool } from "toolpool";
 *
 * const runtime = createRuntime({
 *   tools: [workerTool({ name: "hash", description: "…", parameters, module: new URL("./hash.js", import.meta.url) })],
 * });
 * const { messages } = await runtime.executeToolCalls(assistantMessage);
 * await runtime.close();
 * ```
 */
export function createRuntime(options?: RuntimeOptions): Runtime {
  return new Runtime(options);
}

const ignoreUpdate = (): void => {};

/** The instrumentation scope of toolpool's spans. */
const tracerName = "toolpool";

/** The context of batches that have no hook to hand it to. */
const emptyContext: AgentContext = Object.freeze({ systemPrompt: "", messages: Object.freeze([]) as unknown as unknown[], tools: [] });
