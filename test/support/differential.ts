import {
  createRuntime,
  workerTool,
  type AfterToolCallContext,
  type AfterToolCallResult,
  type AgentTool,
  type AgentToolResult,
  type AssistantMessage,
  type BatchEvent,
  type BatchOutcome,
  type BeforeToolCallContext,
  type BeforeToolCallResult,
  type ExecuteOptions,
  type PiVersion,
  type Runtime,
  type RuntimeOptions,
  type ToolDefinition,
} from "toolpool";

import * as scripted from "../fixtures/tools/scripted.mjs";
import { deferred, type GateController } from "./gates.js";
import { runPiBatch } from "./pi-oracle.js";

const scriptedModule = new URL("../fixtures/tools/scripted.mjs", import.meta.url);

/** Where toolpool runs the scripted tools: on the main thread or in the pool. pi always runs them in process. */
export type Flavor = "inline" | "worker";
export type Mode = "parallel" | "sequential";

export interface ScenarioCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  /** pi 1.6: the model's arguments could not be parsed. */
  argumentsError?: string;
}

/** One batch and the hooks around it, run identically through pi and toolpool. */
export interface Scenario {
  calls: ScenarioCall[];
  beforeToolCall?: (context: BeforeToolCallContext) => BeforeToolCallResult | undefined;
  afterToolCall?: (context: AfterToolCallContext) => AfterToolCallResult | undefined;
  /** In a parallel batch, the order in which gated calls are let finish. @default call order */
  releaseOrder?: string[];
  /** Abort the batch right after this (gated) call has ended. */
  abortAfter?: string;
  /** Abort the batch inside `beforeToolCall` of this call, before the scenario's own hook answers. */
  abortInBeforeToolCall?: string;
  /** Abort the batch inside `afterToolCall` of this call, before the scenario's own hook answers. */
  abortInAfterToolCall?: string;
  /** Abort the batch inside the event sink, as it receives the first event of this type for this call. */
  abortOnEvent?: { type: BatchEvent["type"]; toolCallId: string };
  /** What every abort of the scenario aborts with (`controller.abort(reason)`). @default none: pi's AbortError */
  abortReason?: unknown;
  /** The assistant message's `stopReason` (pi 1.6 fails every call of a `"length"` message). @default "toolUse" */
  stopReason?: string;
}

/**
 * A toolpool runtime kept across scenarios (starting worker threads for each
 * batch would cost most of a run): its hooks call whatever the running
 * scenario put in `hooks`, so each batch has its own.
 */
export interface SharedRuntime {
  runtime: Runtime;
  /** The pool's most threads: this many worker calls can wait at their gates at once. */
  maxThreads: number;
  hooks: {
    beforeToolCall?: ((context: BeforeToolCallContext) => Promise<BeforeToolCallResult | undefined>) | undefined;
    afterToolCall?: ((context: AfterToolCallContext) => Promise<AfterToolCallResult | undefined>) | undefined;
  };
}

/** A runtime of the scripted tools for many scenarios of one flavor and mode, with both hooks routed to the scenario. */
export function createSharedRuntime(
  flavor: Flavor,
  mode: Mode,
  maxThreads = 4,
  pi: PiVersion = "0.73",
  /** Added to the runtime's options (caps, say). */
  extraOptions: Partial<RuntimeOptions> = {},
): SharedRuntime {
  const hooks: SharedRuntime["hooks"] = {};
  const runtime = createRuntime({
    pi,
    tools: scriptedTools(flavor),
    toolExecution: mode,
    beforeToolCall: async (context) => hooks.beforeToolCall?.(context),
    afterToolCall: async (context) => hooks.afterToolCall?.(context),
    pool: { maxThreads, minThreads: 1 },
    ...extraOptions,
  });
  return { runtime, hooks, maxThreads };
}

/** Everything observable of one run, normalized for comparison. */
export interface Trace {
  events: unknown[];
  messages: unknown[];
  terminate: boolean;
  hooks: unknown[];
}

const systemPrompt = "You are a test.";
const history = [{ role: "user", content: "go", timestamp: 1 }];

function scriptedTool(flavor: Flavor, name: string, extra: Partial<AgentTool> = {}): ToolDefinition {
  const isLegacy = name === "legacy";
  const parameters = isLegacy ? scripted.legacyParameters : scripted.workParameters;
  const run = isLegacy ? scripted.executeLegacy : scripted.execute;
  const prepareArguments = isLegacy ? scripted.prepareLegacyArguments : undefined;
  if (flavor === "worker") {
    return workerTool({
      name,
      description: `scripted ${name}`,
      parameters,
      module: scriptedModule,
      exportName: isLegacy ? "executeLegacy" : "execute",
      ...(prepareArguments ? { prepareArguments } : {}),
      ...(extra.executionMode ? { executionMode: extra.executionMode } : {}),
    });
  }
  return {
    name,
    label: name,
    description: `scripted ${name}`,
    parameters,
    ...(prepareArguments ? { prepareArguments } : {}),
    ...extra,
    // A `sync` call's execute returns a plain value, as JavaScript tools may: it goes to pi and toolpool as it is.
    execute: ((toolCallId: string, args: unknown, signal?: AbortSignal, onUpdate?: (partial: AgentToolResult<unknown>) => void) =>
      run(args as Record<string, unknown>, { toolCallId, signal: signal as AbortSignal, onUpdate: onUpdate ?? (() => {}) })) as AgentTool["execute"],
  };
}

/**
 * Caps that a batch of `callCount` calls never reaches: each scripted tool's,
 * the session's (runtime options) and the batch's (`batch`). A run with them
 * must be pi's run, event for event.
 */
export function capsNeverReached(callCount: number): { runtime: Partial<RuntimeOptions>; batch: Pick<ExecuteOptions, "maxConcurrency"> } {
  const cap = Math.max(1, callCount);
  return {
    runtime: { maxConcurrency: { work: cap, legacy: cap, serial: cap }, maxConcurrencyPerSession: cap },
    batch: { maxConcurrency: cap },
  };
}

/** The scripted tools: `work` (gates, failures, updates), `legacy` (prepareArguments), `serial` (sequential). */
export function scriptedTools(flavor: Flavor): ToolDefinition[] {
  return [scriptedTool(flavor, "work"), scriptedTool(flavor, "legacy"), scriptedTool(flavor, "serial", { executionMode: "sequential" })];
}

export function assistantMessageOf(calls: ScenarioCall[], stopReason = "toolUse"): AssistantMessage {
  return {
    role: "assistant",
    content: [{ type: "text", text: "calling tools" }, ...calls.map((call) => ({ type: "toolCall" as const, ...call }))],
    stopReason,
    timestamp: 2,
  };
}

/**
 * Runs a scenario through pi (`executor: "pi"`) or toolpool, driving the gates
 * so that completion order is the same in both, and records the trace.
 */
export async function runScenario(
  scenario: Scenario,
  executor: "pi" | "toolpool",
  flavor: Flavor,
  mode: Mode,
  gates: GateController,
  /**
   * With false, toolpool runs the batch with no hook and no event sink (its
   * lean path); only its messages and terminate flag are then comparable.
   */
  isObserved = true,
  /** Run toolpool's side on this runtime (observed, with its hooks routed to the scenario's) instead of a new one. */
  shared?: SharedRuntime,
  /**
   * Added to toolpool's runtime options: a `fleet` runs the worker tools on
   * nodes; `pi` picks the pi whose rules toolpool follows and whose loop is
   * the oracle.
   */
  extraOptions: Partial<RuntimeOptions> = {},
  /** Added to toolpool's `executeToolCalls` options (a batch's `maxConcurrency`). */
  batchOptions: Pick<ExecuteOptions, "maxConcurrency"> = {},
): Promise<Trace> {
  const pi = extraOptions.pi ?? shared?.runtime.options.pi ?? "0.73";
  gates.reset();
  // Every call of a scripted tool waits at a gate named after it, so the test
  // alone decides the completion order, whatever the threads do. Gate names
  // are unique to the run (a late message of an earlier run must not open a
  // gate of this one); the prefix is stripped from the trace.
  const prefix = `${runPrefix}${++runCount}:`;
  const calls = scenario.calls.map((call) => (call.name === "nope" ? call : { ...call, arguments: { ...call.arguments, gate: prefix + call.id } }));
  const assistantMessage = assistantMessageOf(calls, scenario.stopReason);
  const events: BatchEvent[] = [];
  const hooks: unknown[] = [];
  const ended = new Map(calls.map((call) => [call.id, deferred()]));
  const controller = new AbortController();
  let abortIndex = { events: Infinity, hooks: Infinity };
  const abort = () => {
    if ("abortReason" in scenario) controller.abort(scenario.abortReason);
    else controller.abort();
  };
  /**
   * An abort from a hook or the sink while calls may be running: the calls it
   * stops end in a race between threads from here on (see `sortTail`).
   */
  const abortHere = () => {
    if (controller.signal.aborted) return;
    abortIndex = { events: events.length, hooks: hooks.length };
    abort();
  };

  // A call's partials travel to the coordinator apart from its gate's
  // "waiting" message (from a worker, on another channel): before a gate
  // opens, the partials of every waiting call are awaited, so that another
  // call's end cannot overtake them in one run and not in the other.
  const updates = new Map(calls.map((call) => [call.id, { seen: 0, expected: expectedUpdates(call, pi), delivered: deferred() }]));
  for (const count of updates.values()) if (count.expected === 0) count.delivered.resolve();
  const emit = async (event: BatchEvent): Promise<void> => {
    events.push(structuredCloneJson(event));
    const { abortOnEvent } = scenario;
    if (abortOnEvent !== undefined && event.type === abortOnEvent.type && "toolCallId" in event && event.toolCallId === abortOnEvent.toolCallId) {
      abortHere();
    }
    if (event.type === "tool_execution_update") {
      const count = updates.get(event.toolCallId);
      if (count !== undefined && ++count.seen === count.expected) count.delivered.resolve();
    }
    if (event.type === "tool_execution_end") ended.get(event.toolCallId)?.resolve();
  };
  const beforeToolCall = scenario.beforeToolCall
    ? async (context: BeforeToolCallContext) => {
        hooks.push({ hook: "before", ...snapshotHookContext(context, assistantMessage) });
        if (scenario.abortInBeforeToolCall === context.toolCall.id) abort();
        return scenario.beforeToolCall!(context);
      }
    : undefined;
  const afterToolCall = scenario.afterToolCall
    ? async (context: AfterToolCallContext) => {
        hooks.push({
          hook: "after",
          ...snapshotHookContext(context, assistantMessage),
          result: structuredCloneJson(context.result),
          isError: context.isError,
        });
        if (scenario.abortInAfterToolCall === context.toolCall.id) abortHere();
        return scenario.afterToolCall!(context);
      }
    : undefined;

  const isSequential = mode === "sequential" || calls.some((call) => call.name === "serial");
  const gated = calls.filter((call) => typeof call.arguments.gate === "string").map((call) => call.id);
  const preferred = scenario.releaseOrder ?? [];
  const order = isSequential ? gated : [...preferred, ...gated.filter((id) => !preferred.includes(id))];
  // Resolves true once the call waits at its gate, false if it ended without waiting (not found, invalid, blocked).
  const settles = (id: string) => Promise.race([gates.whenWaiting(prefix + id).then(() => true), ended.get(id)!.promise.then(() => false)]);
  // Inline tools send their late partial once the test says (see fixtures/tools/scripted.mjs).
  const lateUpdaters = new Set(
    executor === "pi" || flavor === "inline" ? calls.filter((call) => typeof call.arguments.lateUpdate === "string").map((call) => call.id) : [],
  );
  const batchDone = deferred();
  const driveUnobserved = async () => {
    // Nothing tells when a call ends: open each gate as soon as its call
    // waits; the messages come in call order whatever the completion order.
    const done = batchDone.promise;
    await Promise.all(order.map((id) => Promise.race([gates.whenWaiting(prefix + id).then(() => gates.open(prefix + id)), done])));
  };
  const drive = (async () => {
    if (!isObserved) return driveUnobserved();
    // Only when every gated call can be waiting at once (a worker call
    // beyond the pool's threads starts only once a gate opens).
    const capacity = executor === "toolpool" && flavor === "worker" ? (shared?.maxThreads ?? scenarioThreads) : Infinity;
    if (!isSequential && order.length <= capacity) {
      const isWaiting = await Promise.all(order.map(settles));
      await Promise.all(order.filter((_, index) => isWaiting[index]).map((id) => updates.get(id)!.delivered.promise));
    }
    for (const [index, id] of order.entries()) {
      if (!(await settles(id))) continue;
      // Aborted from a hook or the sink: every call at its gate is being stopped by its signal;
      // opening a gate now would race that abort to a worker thread (pi's inline call already lost it).
      if (controller.signal.aborted) return;
      gates.open(prefix + id);
      await ended.get(id)!.promise;
      if (lateUpdaters.has(id)) {
        // Its late partial is sent now, while the batch still runs.
        gates.open(`${prefix + id}:late`);
        await gates.whenWaiting(`${prefix + id}:late-sent`);
      }
      if (scenario.abortAfter === id) {
        // In a parallel batch every other call is running by now: abort once
        // all of them wait, so that each one is stopped at its gate.
        if (!isSequential) await Promise.all(order.slice(index + 1).map(settles));
        abortIndex = { events: events.length, hooks: hooks.length };
        abort();
        return;
      }
    }
  })();

  let outcome: BatchOutcome;
  if (executor === "pi") {
    outcome = await runPiBatch({
      tools: scriptedTools("inline") as AgentTool[],
      assistantMessage,
      toolExecution: mode,
      beforeToolCall: beforeToolCall as never,
      afterToolCall: afterToolCall as never,
      signal: controller.signal,
      systemPrompt,
      history,
      emit,
      pi,
    });
  } else if (shared !== undefined) {
    shared.hooks.beforeToolCall = beforeToolCall;
    shared.hooks.afterToolCall = afterToolCall;
    try {
      outcome = await shared.runtime.executeToolCalls(assistantMessage, {
        context: { systemPrompt, messages: [...history, assistantMessage] },
        signal: controller.signal,
        emit,
        ...batchOptions,
      });
    } finally {
      shared.hooks.beforeToolCall = undefined;
      shared.hooks.afterToolCall = undefined;
      batchDone.resolve();
    }
  } else {
    const runtime = createRuntime({
      tools: scriptedTools(flavor),
      toolExecution: mode,
      pi,
      ...(beforeToolCall && isObserved ? { beforeToolCall } : {}),
      ...(afterToolCall && isObserved ? { afterToolCall } : {}),
      pool: { maxThreads: scenarioThreads, minThreads: 1 },
      ...extraOptions,
    });
    try {
      outcome = await runtime.executeToolCalls(assistantMessage, {
        context: { systemPrompt, messages: [...history, assistantMessage] },
        signal: controller.signal,
        ...(isObserved ? { emit } : {}),
        ...batchOptions,
      });
    } finally {
      batchDone.resolve();
      await runtime.close();
    }
  }
  batchDone.resolve();
  await drive;
  return {
    // After an abort, the calls it stops end in a race between threads: their
    // relative order is not part of the contract.
    // (With worker tools, a stopped call's partials race with the others' ends too.)
    events: sortTail(events.map(normalize), abortIndex.events, (event) => {
      const { type } = event as BatchEvent;
      return type === "tool_execution_end" || (flavor === "worker" && type === "tool_execution_update");
    }),
    messages: outcome.messages.map(normalize),
    terminate: outcome.terminate,
    hooks: sortTail(hooks.map(normalize), abortIndex.hooks, () => true),
  };
}

/** The partials a scripted `work` call streams before its gate (pi 1.6 coerces a single text to a list of one). */
function expectedUpdates(call: ScenarioCall, pi: PiVersion): number {
  const streamed = call.arguments.updates;
  if (Array.isArray(streamed)) return streamed.length;
  return pi === "1.6" && typeof streamed === "string" ? 1 : 0;
}

function snapshotHookContext(context: BeforeToolCallContext, assistantMessage: AssistantMessage) {
  return {
    toolCall: structuredCloneJson(context.toolCall),
    args: structuredCloneJson(context.args),
    isSameAssistantMessage: context.assistantMessage === assistantMessage,
    systemPrompt: context.context.systemPrompt,
    messages: structuredCloneJson(context.context.messages.filter(isNotLoopDeclaration)).map(withoutThinkingLevel),
    tools: (context.context.tools ?? []).map((tool) => tool.name),
  };
}

/**
 * pi 1.6's loop puts messages of its own into the context before a batch: a
 * system message declaring the tools (`toolsAdded`), and the level of
 * thinking on the assistant message. Both are the loop's, not the batch's
 * (a toolpool caller hands hooks whatever context it keeps): hooks' contexts
 * are compared without them.
 */
function isNotLoopDeclaration(message: unknown): boolean {
  const { role, toolsAdded, toolsRemoved } = message as { role?: unknown; toolsAdded?: unknown; toolsRemoved?: unknown };
  return !(role === "system" && (toolsAdded !== undefined || toolsRemoved !== undefined));
}

function withoutThinkingLevel(message: unknown): unknown {
  if (typeof message !== "object" || message === null || !("thinkingLevel" in message)) return message;
  const { thinkingLevel: _level, ...rest } = message as Record<string, unknown>;
  return rest;
}

/** A JSON round trip: what a transcript would keep (drops `undefined` fields). */
function structuredCloneJson<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

/** Threads of the runtime `runScenario` makes itself. */
const scenarioThreads = 4;

const runPrefix = "run";
let runCount = 0;

/**
 * Timestamps aside, `durationMs` by presence (pi 1.6), and gate names without
 * their run prefix; validation texts are compared whole.
 */
function normalize(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (key, field: unknown) => {
    if (key === "timestamp" && typeof field === "number") return 0;
    if (key === "durationMs" && typeof field === "number" && Number.isInteger(field) && field >= 0) return "a whole number of ms";
    if (typeof field === "string") return field.replace(/\brun\d+:/g, "");
    return field;
  });
}

/** Sorts the entries from index `from` on that match `isRacy`, leaving every other entry in place. */
function sortTail(list: unknown[], from: number, isRacy: (item: unknown) => boolean): unknown[] {
  if (!Number.isFinite(from)) return list;
  const key = (item: unknown) => JSON.stringify(item);
  const positions = list.map((_item, index) => index).filter((index) => index >= from && isRacy(list[index]));
  const sorted = positions.map((index) => list[index]).sort((a, b) => key(a).localeCompare(key(b)));
  const result = [...list];
  for (const [i, position] of positions.entries()) result[position] = sorted[i];
  return result;
}
