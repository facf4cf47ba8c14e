/**
 * Tools that count how many of their calls run at once, for the tests of
 * caps (test/caps.test.ts, test/call-caps.test.ts): a worker probe and an
 * inline probe over the shared counts of fixtures/tools/concurrency-probe.mjs.
 */
import { workerTool, type AgentTool, type ToolCall } from "toolpool";

import { execute as probeExecute } from "../fixtures/tools/concurrency-probe.mjs";

const probeModule = new URL("../fixtures/tools/concurrency-probe.mjs", import.meta.url);
/** The probes' parameters: the gate each call waits at. */
export const gateArgs = { type: "object", properties: { gate: { type: "string" } }, required: ["gate"] } as const;

/** Shared counts of a probe: running now, most at once, started (see concurrency-probe.mjs). */
export function counts() {
  const shared = new Int32Array(new SharedArrayBuffer(12));
  return { shared, running: () => Atomics.load(shared, 0), most: () => Atomics.load(shared, 1), started: () => Atomics.load(shared, 2) };
}

/** A worker probe tool counting into `shared`. */
export function workerProbe(name: string, shared: Int32Array, maxConcurrency?: number) {
  return workerTool({ name, description: "", parameters: gateArgs, module: probeModule, context: () => shared, maxConcurrency });
}

/** An inline probe tool counting into `shared`. */
export function inlineProbe(name: string, shared: Int32Array): AgentTool {
  return { name, label: name, description: "", parameters: gateArgs, execute: (_id, args, signal) => probeExecute({ ...args, shared }, { signal }) };
}

/** The outcome, or "deadlocked" when it has not settled within a bound far above what a busy machine needs. */
export function orDeadlock<T>(promise: Promise<T>, limitMs = 20_000): Promise<T | "deadlocked"> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<"deadlocked">((resolve) => (timer = setTimeout(() => resolve("deadlocked"), limitMs)));
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

/** A tool call of `name`, with `args`. */
export const call = (id: string, name: string, args: Record<string, unknown> = {}): ToolCall => ({ type: "toolCall", id, name, arguments: args });
