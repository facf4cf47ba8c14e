/** A runtime's caps (see `coordinator/call-caps.ts`): per tool, per session, and per batch. */
import { CapGate, CapKey } from "../cap-gate.js";
import { currentCapContext, ToolCap, type BatchCaps, type RuntimeCaps } from "../coordinator/call-caps.js";
import type { RegisteredTool } from "../coordinator/tool-registry.js";
import { ToolpoolError } from "../errors.js";
import type { ResolvedRuntimeOptions } from "../options.js";

/** A tool's cap is the option's for its name, else its definition's; names in `maxConcurrency` must be tools. */
export function createRuntimeCaps(options: ResolvedRuntimeOptions, registry: ReadonlyMap<string, RegisteredTool>): RuntimeCaps {
  for (const name of Object.keys(options.maxConcurrency)) {
    if (!registry.has(name)) {
      throw new ToolpoolError(
        "TP_ERR_INVALID_OPTION",
        `Expected \`maxConcurrency\` to name tools of the runtime, got ${JSON.stringify(name)}, which is none`,
      );
    }
  }
  const tools = new Map<string, ToolCap>();
  for (const [name, entry] of registry) {
    const cap = options.maxConcurrency[name] ?? (entry.kind === "worker" ? entry.tool.maxConcurrency : undefined);
    if (cap !== undefined) tools.set(name, new ToolCap(name, cap));
  }
  return Object.freeze({ gate: new CapGate(), tools, perSession: options.maxConcurrencyPerSession });
}

export function hasRuntimeCaps(caps: RuntimeCaps): boolean {
  return caps.tools.size > 0 || caps.perSession !== undefined;
}

/**
 * A batch made by a capped call's execute is that call's child: it counts
 * against the parent's batch and takes its session unless it names one.
 * `mayBeNested`: whether any call ever ran capped (else none can have a parent).
 */
export function batchCapsOf(
  runtime: RuntimeCaps,
  mayBeNested: boolean,
  perBatch: number | undefined,
  sessionKey: string | undefined,
  ownSession: () => unknown,
): { caps: BatchCaps | undefined; session: unknown } {
  const parent = mayBeNested ? currentCapContext(runtime) : undefined;
  if (parent !== undefined) {
    const inherited = parent.caps;
    const poolSession = sessionKey ?? inherited.poolSession;
    return {
      caps: {
        runtime,
        batchKey: perBatch === undefined ? inherited.batchKey : new CapKey(),
        perBatch: perBatch ?? inherited.perBatch,
        session: sessionKey ?? inherited.session,
        poolSession,
        parent: parent.claim,
      },
      session: poolSession,
    };
  }
  const poolSession = sessionKey ?? ownSession();
  if (perBatch === undefined && !hasRuntimeCaps(runtime)) return { caps: undefined, session: poolSession };
  // A batch without a sessionKey is its own session: one key for both.
  const batchKey = new CapKey();
  return { caps: { runtime, batchKey, perBatch, session: sessionKey ?? batchKey, poolSession, parent: undefined }, session: poolSession };
}
