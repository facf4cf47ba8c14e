/**
 * The composition root of a runtime: its options resolved, its pi's rules,
 * its tool registry, its pools, and every tool's schema compiled — the parts
 * the `Runtime` facade holds.
 *
 * @module
 */
import { rulesOf, type PiRules } from "../coordinator/pi-rules.js";
import { compileToolSchemas, createToolRegistry, type RegisteredTool } from "../coordinator/tool-registry.js";
import { resolveRuntimeOptions, type ResolvedRuntimeOptions, type RuntimeOptions } from "../options.js";
import type { RuntimeCaps } from "../coordinator/call-caps.js";
import { piMismatchOf, toolNeedsOf, type ToolNeeds } from "../contracts/tool-needs.js";
import { ToolpoolError } from "../errors.js";
import { PoolRouter, type PoolRouterEvents } from "./pool-router.js";
import { createRuntimeCaps } from "./runtime-caps.js";

/** What a runtime is made of. */
interface RuntimeParts {
  /** The validated options, defaults applied; frozen. */
  options: ResolvedRuntimeOptions;
  /** The rules of the runtime's pi, where 0.73.1 and 1.6.0 differ. */
  rules: PiRules;
  registry: ReadonlyMap<string, RegisteredTool>;
  router: PoolRouter;
  /** The caps of the tools and sessions, and the gate every capped call passes. */
  caps: RuntimeCaps;
  /** What to call once the runtime has closed: the releases of what its tools' sets opened for it (see `contracts/tool-needs.ts`). */
  releases: (() => Promise<void>)[];
}

/**
 * Makes the parts of a runtime. Throws `TP_ERR_INVALID_OPTION` or
 * `TP_ERR_INVALID_TOOL` for bad options or tools, having closed any pool it
 * made.
 */
export function composeRuntime(input: RuntimeOptions | undefined, events: PoolRouterEvents): RuntimeParts {
  const options = resolveRuntimeOptions(input);
  const rules = rulesOf(options.pi);
  const registry = createToolRegistry(options.tools);
  const needs = needsOf(options.tools);
  for (const need of needs) {
    const mismatch = piMismatchOf(need, options.pi);
    if (mismatch !== undefined) throw new ToolpoolError("TP_ERR_INVALID_OPTION", mismatch);
  }
  // Before the pools: a bad cap starts no thread.
  const caps = createRuntimeCaps(options, registry);
  const router = new PoolRouter(options, registry, events);
  // After the pools: their threads boot while the schemas compile (the
  // first compile loads TypeBox), which shortens a new runtime's first batch.
  // A schema never refuses the runtime (compileToolSchemas never throws).
  compileToolSchemas(registry, rules.compileSchema);
  // Last: nothing below can fail, so nothing opened needs closing on a throw.
  const releases = [...new Set(needs.map((need) => need.openForRuntime))].flatMap((open) => (open === undefined ? [] : [open()]));
  return { options, rules, registry, router, caps, releases };
}

/** The distinct needs declared for `tools`. */
function needsOf(tools: readonly object[]): ToolNeeds[] {
  const needs = new Set<ToolNeeds>();
  for (const tool of tools) {
    const need = toolNeedsOf(tool);
    if (need !== undefined) needs.add(need);
  }
  return [...needs];
}
