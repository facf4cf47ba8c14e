/** The composition root of a runtime: options, pi's rules, tool registry, pools and compiled schemas. */
import { rulesOf, type PiRules } from "../coordinator/pi-rules.js";
import { compileToolSchemas, createToolRegistry, type RegisteredTool } from "../coordinator/tool-registry.js";
import { resolveRuntimeOptions, type ResolvedRuntimeOptions, type RuntimeOptions } from "../options.js";
import type { RuntimeCaps } from "../coordinator/call-caps.js";
import { piMismatchOf, toolNeedsOf, type ToolNeeds } from "../contracts/tool-needs.js";
import { ToolpoolError } from "../errors.js";
import { PoolRouter, type PoolRouterEvents } from "./pool-router.js";
import { createRuntimeCaps } from "./runtime-caps.js";

interface RuntimeParts {
  /** Frozen. */
  options: ResolvedRuntimeOptions;
  rules: PiRules;
  registry: ReadonlyMap<string, RegisteredTool>;
  router: PoolRouter;
  caps: RuntimeCaps;
  /** Called once the runtime has closed (see `contracts/tool-needs.ts`). */
  releases: (() => Promise<void>)[];
}

/** Throws `TP_ERR_INVALID_OPTION` or `TP_ERR_INVALID_TOOL`, having closed any pool it made. */
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
  // After the pools: threads boot while the schemas compile (the first loads TypeBox). Never throws.
  compileToolSchemas(registry, rules.compileSchema);
  // Last: nothing below can fail, so nothing opened needs closing on a throw.
  const releases = [...new Set(needs.map((need) => need.openForRuntime))].flatMap((open) => (open === undefined ? [] : [open()]));
  return { options, rules, registry, router, caps, releases };
}

function needsOf(tools: readonly object[]): ToolNeeds[] {
  const needs = new Set<ToolNeeds>();
  for (const tool of tools) {
    const need = toolNeedsOf(tool);
    if (need !== undefined) needs.add(need);
  }
  return [...needs];
}
