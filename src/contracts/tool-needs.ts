/**
 * What a tool set asks of each runtime that takes its worker tools, beyond
 * the tool definition itself: the pi whose rules its results are written
 * for, and resources that live as long as the runtime (pi's coding tools:
 * the folder of bash's full-output files). Kept beside the definitions, not
 * in them: a definition stays plain data the caller can read, and these
 * needs are no part of the public API.
 *
 * @module
 */
/** A pi whose rules a runtime follows (`RuntimeOptions.pi`). */
type PiVersion = "0.73" | "1.6";

/** A tool set's needs (see the module's comment). */
export interface ToolNeeds {
  /** The pi whose rules the tools' results follow, and why: a runtime of another pi is refused. */
  readonly pi?: { readonly version: PiVersion; readonly why: string };
  /**
   * Called once for each runtime that takes any tool of the set, when it is
   * made; what it returns is called once that runtime has closed (its pools
   * stopped). Tools that share one function share one call.
   */
  readonly openForRuntime?: () => () => Promise<void>;
}

const needsOfTools = new WeakMap<object, ToolNeeds>();

/** Records `needs` for each of `tools`. */
export function declareToolNeeds(tools: readonly object[], needs: ToolNeeds): void {
  for (const tool of tools) needsOfTools.set(tool, needs);
}

/** What `tool` needs; undefined when nothing was declared. */
export function toolNeedsOf(tool: object): ToolNeeds | undefined {
  return needsOfTools.get(tool);
}

/**
 * Why tools that need `needs.pi` cannot run under `pi`, or undefined when
 * they can: the one statement of the mismatch, which `createRuntime` throws
 * and the command line prints for its flags.
 */
export function piMismatchOf(needs: ToolNeeds, pi: PiVersion): string | undefined {
  if (needs.pi === undefined || needs.pi.version === pi) return undefined;
  return `${needs.pi.why}: they need \`pi: "${needs.pi.version}"\`, and this runtime's pi is "${pi}"`;
}
