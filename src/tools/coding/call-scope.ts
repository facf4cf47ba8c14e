/**
 * A call's own workspace and pi session, carried in its arguments through
 * the pool task: how the pi extension runs each call in the folder and for
 * the session of that call, whatever else runs meanwhile. Only tools made
 * for it (`callScopedCodingTools`) read it; any other coding tool takes such
 * arguments as they are, so a model cannot choose its own workspace.
 *
 * @module
 */
import type { CodingCallContext, PiSessionInfo } from "./coding-settings.js";
import { callFailure, workspaceAt } from "./workspace.js";

/** Where a call runs and for which pi session. */
export type CallScope = Pick<CodingCallContext, "cwd" | "root" | "piSession">;

const scopeKey = "toolpool:callScope";

/** A call's arguments with its scope: what a call-scoped coding tool's execute receives. */
interface ScopedArgs {
  readonly [scopeKey]: CallScope;
  readonly args: unknown;
}

/**
 * `args` with the scope of a call that runs in `cwd` (which must be an
 * existing directory: else throws naming it) for `piSession`. Main thread.
 */
export function withCallScope(args: unknown, cwd: string, piSession: PiSessionInfo | undefined): ScopedArgs {
  const { cwd: absolute, root } = workspaceAt(cwd, "The working folder of the call", callFailure);
  return { [scopeKey]: { cwd: absolute, root, ...(piSession === undefined ? {} : { piSession }) }, args };
}

/** The arguments and scope of a call made with {@link withCallScope}; undefined for other arguments. Worker thread. */
export function callScopeOf(scoped: unknown): { args: unknown; scope: CallScope } | undefined {
  if (typeof scoped !== "object" || scoped === null || !(scopeKey in scoped)) return undefined;
  const { [scopeKey]: scope, args } = scoped as ScopedArgs;
  return typeof scope?.cwd === "string" && typeof scope.root === "string" ? { args, scope } : undefined;
}
