/** The runtime's public facade; its parts live in `runtime/`, a batch's work in `coordinator/`, `workers/` and `fleet/`. @module */
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

export interface ExecuteOptions {
  /** Handed to hooks as `context`, with `tools` filled in. @default { systemPrompt: "", messages: [] } */
  context?: { systemPrompt?: string; messages?: unknown[] };
  /** Aborts the batch: hooks and inline tools get it as in pi; worker tools get a cooperative `ctx.signal`, then termination. */
  signal?: AbortSignal;
  /** Receives the batch's events; awaited as pi awaits its sink. */
  emit?: EmitFunction;
  /** Worker calls of different sessions take turns on the pool (at most 256 characters). @default undefined (a session of its own) */
  sessionKey?: string;
  /** Most calls of this batch (nested `runToolCall`s included) executing at once; a call over it waits. @default undefined (no cap) */
  maxConcurrency?: number;
}

export interface RunToolCallOptions {
  /** The assistant message the call belongs to, as the hooks see it. @default a message holding only the call */
  assistantMessage?: AssistantMessage;
  /** Handed to hooks as `context`, with `tools` filled in. @default { systemPrompt: "", messages: [] } */
  context?: { systemPrompt?: string; messages?: unknown[] };
  signal?: AbortSignal;
  /** Receives the call's partial results (pi 1.6: only those sent before the tool settled). */
  onUpdate?: AgentToolUpdateCallback;
  /** See {@link ExecuteOptions.sessionKey}. */
  sessionKey?: string;
}

export interface ToolCallOutcome {
  toolCall: ToolCall;
  result: AgentToolResult<unknown>;
  isError: boolean;
  /** pi 1.6: milliseconds the tool's execution took; absent when it did not run (and with `pi: "0.73"`). */
  durationMs?: number;
}

export interface RuntimeDiagnosis {
  /** The shared pool (`"shared"`), one per named pool (`"pool:NAME"`, see `workerTool({ pool })`) and one per worker tool with resource limits of its own (the tool's name). */
  pools: ({ pool: string } & PoolDiagnosis)[];
}

/** Executes assistant messages' tool calls with pi's semantics; also emits every batch's events, with `meta.batchId`. */
export class Runtime extends EventEmitter<RuntimeEvents> {
  readonly #options: ResolvedRuntimeOptions;
  readonly #rules: PiRules;
  readonly #registry: ReadonlyMap<string, RegisteredTool>;
  readonly #caps: RuntimeCaps;
  /** Until a call ran capped, none can be a capped call's child, and none looks. */
  #hasRunCapped = false;
  readonly #router: PoolRouter;
  /** The pools' call and thread lifecycle events, the fleet's included. */
  readonly poolEvents: PoolEventSource;
  readonly #events = new EventBus(this);
  readonly #forceStop = new ForceStop();
  /** Capped `agentTools()` calls count too: `close()` waits for them. */
  #runningBatches = 0;
  #idle: Deferred<void> | undefined;
  readonly #batchServices: BatchServices = {
    poolFor: (tool) => this.#router.poolFor(tool),
    forceStop: this.#forceStop,
    publish: (event, batchId, sessionKey, durations) => this.#events.publish(event.type, event, batchMeta(batchId, sessionKey, durations)),
    hasListeners: () => this.#events.hasBatchListeners(),
    now: () => this.#options.clock.now(),
  };
  #tracing: { api: OtelApi; tracer: OtelTracer; poolSpans: PoolSpanEvents } | undefined;
  #agentTools: AgentTool[] | undefined;
  #cappedAgentTools: AgentTool[] | undefined;
  #batchCount = 0;
  #closing: Promise<void> | undefined;
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

  get options(): ResolvedRuntimeOptions {
    return this.#options;
  }

  get fleetStats(): FleetStats | undefined {
    return this.#router.fleetStats;
  }

  get isClosed(): boolean {
    return this.#closing !== undefined;
  }

  /** All worker pools added up; `undefined` without worker tools. */
  get poolStats(): PoolStats | undefined {
    return this.#router.poolStats;
  }

  /** Copies of the calls waiting for a cap now (started, not yet handed to a pool), first come first. */
  capWaits(): CapWait[] {
    const waits: CapWait[] = [];
    for (const claim of this.#caps.gate.waitingClaims()) if (claim.wait !== undefined) waits.push({ ...(claim.wait as CapWait) });
    return waits;
  }

  /** Whether a call of that tool handed to its pool now would end with `TP_ERR_QUEUE_FULL`; false for inline or unknown tools and once closed. */
  isQueueFull(toolName: string): boolean {
    const entry = this.#registry.get(toolName);
    if (entry === undefined || entry.kind !== "worker" || this.isClosed) return false;
    return this.#router.poolFor(entry.tool).isQueueFull();
  }

  /** Every pool's inner state, for diagnosing a stall; copies everything, so not for polling. */
  diagnose(): RuntimeDiagnosis {
    return { pools: this.#router.diagnose() };
  }

  /** One end event and one result message per call, whatever happens; rejects only for misuse or when `emit` throws (as pi). */
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

  /** pi 1.6's `runToolCall`, with hooks but no events, so tools calling tools stay under the hooks; rejects only for misuse. */
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

  /** pi `AgentTool`s whose worker tools dispatch to the pool; under caps, each call counts as a batch of its own. */
  agentTools(): AgentTool[] {
    if (!hasRuntimeCaps(this.#caps)) return [...this.#frozenAgentTools()];
    this.#cappedAgentTools ??= [...this.#registry.values()].map((entry) =>
      entry.kind === "inline"
        ? toCappedInlineTool(entry.tool, this.#runCapped)
        : toAgentTool(entry.tool, this.#router.poolFor(entry.tool), this.#runCapped),
    );
    return [...this.#cappedAgentTools];
  }

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

  /** Lets running batches finish, then stops the threads; `force` ends running calls with `TP_ERR_CLOSED` results. Safe to call again. */
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

  /** Loads `@opentelemetry/api` only once a batch finds it registered. */
  #isTracing(): boolean {
    if (this.#tracing === undefined && this.#options.tracing && isOtelRegistered()) {
      const api = loadOtelApi();
      // A proxy tracer: it follows providers registered later too.
      if (api !== undefined) this.#tracing = { api, tracer: api.trace.getTracer(tracerName), poolSpans: new PoolSpanEvents(this.poolEvents) };
    }
    return this.#tracing !== undefined;
  }

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
 * Throws `TP_ERR_INVALID_OPTION` or `TP_ERR_INVALID_TOOL` for bad options or tools.
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

const tracerName = "toolpool";

const emptyContext: AgentContext = Object.freeze({ systemPrompt: "", messages: Object.freeze([]) as unknown as unknown[], tools: [] });
