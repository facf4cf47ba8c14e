/** A worker tool as a pi `AgentTool`, so a pi `Agent` can use the pool directly (`Runtime.agentTools()`). */
import type { ToolCallPool } from "../contracts/pool-contract.js";
import type { WorkerTool } from "../contracts/worker-tool.js";
import { enterCapContext, isPromiseLike, leaveCapContext, type CapContext } from "../coordinator/call-caps.js";
import { errorFromThrown, ToolpoolError } from "../errors.js";
import type { AgentTool, AgentToolResult } from "../types.js";

/** Runs one call under the runtime's caps; `run` gets the call's cap context once it holds its slots. */
export type CappedRun = <T>(toolName: string, toolCallId: string, run: (context: CapContext | undefined) => T) => T | Promise<T>;

/**
 * pi's tools fail by throwing, so a failed call throws: the tool's error
 * remade (`errorFromThrown`), or a `ToolpoolError` for toolpool's faults.
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
 * An inline tool whose calls count against the runtime's caps: a proxy whose
 * execute runs the tool's in its cap context, so calls it makes through
 * `runtime.runToolCall` are its children. Methods are bound to the tool
 * (private fields work); a frozen `execute` cannot be proxied, so such a tool
 * is copied instead.
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
      // The tool's own promise goes back to the caller, awaited in the same turns as without caps.
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

/** Neither writable nor configurable: a proxy must give it back as it is. */
function isFixed(object: object, key: PropertyKey): boolean {
  const own = Object.getOwnPropertyDescriptor(object, key);
  return own !== undefined && own.configurable === false && own.writable === false;
}
