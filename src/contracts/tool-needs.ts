/** What a tool set asks of each runtime taking its worker tools; kept beside the definitions so they stay plain data. */
type PiVersion = "0.73" | "1.6";

export interface ToolNeeds {
  /** A runtime of another pi is refused, with `why`. */
  readonly pi?: { readonly version: PiVersion; readonly why: string };
  /** Called once per runtime taking any tool of the set; its result runs once that runtime closed. Shared functions share one call. */
  readonly openForRuntime?: () => () => Promise<void>;
}

const needsOfTools = new WeakMap<object, ToolNeeds>();

export function declareToolNeeds(tools: readonly object[], needs: ToolNeeds): void {
  for (const tool of tools) needsOfTools.set(tool, needs);
}

export function toolNeedsOf(tool: object): ToolNeeds | undefined {
  return needsOfTools.get(tool);
}

/** The one statement of the mismatch, thrown by `createRuntime` and printed by the CLI. */
export function piMismatchOf(needs: ToolNeeds, pi: PiVersion): string | undefined {
  if (needs.pi === undefined || needs.pi.version === pi) return undefined;
  return `${needs.pi.why}: they need \`pi: "${needs.pi.version}"\`, and this runtime's pi is "${pi}"`;
}
