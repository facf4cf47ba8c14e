/**
 * A worker tool as a pi `AgentTool`, so that a pi `Agent` can use the pool
 * directly (`Runtime.agentTools()`).
 *
 * @module
 */
import type { ToolCallPool } from "../contracts/pool-contract.js";
import type { WorkerTool } from "../contracts/worker-tool.js";
import { enterCapContext, isPromiseLike, leaveCapContext, type CapContext } from "../coordinator/call-caps.js";
import { errorFromThrown, ToolpoolError } from "../errors.js";
import type { AgentTool, AgentToolResult } from "../types.js";

/**
 * Runs one call of the tool named `toolName` under the runtime's caps (see
 * `runCapped` in `coordinator/call-caps.ts`): `run` gets the call's cap
 * context once it holds its slots, undefined where no cap applies.
 */
export type CappedRun = <T>(toolName: string, toolCallId: string, run: (context: CapContext | undefined) => T) => T | Promise<T>;

/**
 * An `AgentTool` whose execute runs `tool` on `pool`, with the fields of
 * `tool.agentToolFields` besides its own. pi's tools fail by throwing, so a
 * failed call throws: the tool's error remade (its name, message, `code` and
 * other plain fields, see `errorFromThrown`), or a `ToolpoolError` with its
 * code for toolpool's faults.
 */
export function toAgentTool(tool: WorkerTool, pool: ToolCallPool, capped?: CappedRun): AgentTool {
  return {
    ...tool.agentToolFields,
    name: tool.name,
    label: tool.label,
    description: tool.description,
    parameters: tool.parameters,
    ...(tool.executionMode === undefined ? {} : { executionMode: tool.executionMode }),
    ...(tool.prepareArguments === undefined ? {} : { prepareArguments: tool.prepareArguments }),
    execute: async (toolCallId, args, signal, onUpdate): Promise<AgentToolResult<unknown>> => {
      const run = (partCaps: CapContext | undefined) => pool.run({ tool, toolCallId, args, signal, onUpdate, partCaps });
      const outcome = await (capped === undefined ? run(undefined) : capped(tool.name, toolCallId, run));
      if (outcome.kind === "ok") return outcome.result;
      throw outcome.code === undefined ? errorFromThrown(outcome.message, outcome.thrown) : new ToolpoolError(outcome.code, outcome.message);
    },
  };
}

/**
 * An inline tool whose calls count against the runtime's caps: `tool`
 * behind a proxy whose execute waits for its slots and runs the tool's own
 * in its cap context, so that the calls it makes through
 * `runtime.runToolCall` are its children. Everything else reads through to
 * the tool, its getters and methods with the tool itself as `this` (class
 * tools with private fields work). A tool whose `execute` cannot change (a
 * frozen tool: a proxy must give it back as it is) is copied instead, its
 * properties' descriptors and prototype kept.
 */
export function toCappedInlineTool(tool: AgentTool, capped: CappedRun): AgentTool {
  const execute: AgentTool["execute"] = (toolCallId, args, signal, onUpdate) =>
    capped(tool.name, toolCallId, (context) => {
      if (context === undefined) return tool.execute(toolCallId, args, signal, onUpdate);
      let result: ReturnType<AgentTool["execute"]>;
      try {
        result = enterCapContext(context, () => tool.execute(toolCallId, args, signal, onUpdate));
      } catch (error) {
        leaveCapContext();
        throw error;
      }
      // The tool's own promise goes back to the caller, which awaits it in the turns it would without caps.
      if (isPromiseLike(result)) Promise.resolve(result).then(leaveCapContext, leaveCapContext);
      else leaveCapContext();
      return result;
    }) as ReturnType<AgentTool["execute"]>;
  if (isFixed(tool, "execute")) {
    const descriptors = Object.getOwnPropertyDescriptors(tool);
    descriptors.execute = { value: execute, enumerable: true, writable: true, configurable: true };
    return Object.create(Object.getPrototypeOf(tool) as object | null, descriptors) as AgentTool;
  }
  const bound = new WeakMap<(...args: never[]) => unknown, unknown>();
  return new Proxy(tool, {
    get(target, key) {
      if (key === "execute") return execute;
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== "function" || isFixed(target, key)) return value;
      let method = bound.get(value as (...args: never[]) => unknown);
      if (method === undefined) {
        method = (value as (...args: unknown[]) => unknown).bind(target);
        bound.set(value as (...args: never[]) => unknown, method);
      }
      return method;
    },
  });
}

/** Whether `key` is an own property of `object` that a proxy must give back as it is (neither writable nor configurable). */
function isFixed(object: object, key: PropertyKey): boolean {
  const own = Object.getOwnPropertyDescriptor(object, key);
  return own !== undefined && own.configurable === false && own.writable === false;
}
