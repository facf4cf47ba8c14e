/**
 * A call's workspace and pi session, in its arguments (the pi extension's calls); only
 * `callScopedCodingTools` read it, so a model cannot choose its workspace elsewhere.
 * @module
 */
import type { CodingCallContext, PiSessionInfo } from "./coding-settings.js";
import { callFailure, workspaceAt } from "./workspace.js";

export type CallScope = Pick<CodingCallContext, "cwd" | "root" | "piSession">;

const scopeKey = "toolpool:callScope";

interface ScopedArgs {
  readonly [scopeKey]: CallScope;
  readonly args: unknown;
}

/** `args` with the scope of a call in `cwd` (an existing directory, else throws) for `piSession`. Main thread. */
export function withCallScope(args: unknown, cwd: string, piSession: PiSessionInfo | undefined): ScopedArgs {
  const { cwd: absolute, root } = workspaceAt(cwd, "The working folder of the call", callFailure);
  return { [scopeKey]: { cwd: absolute, root, ...(piSession === undefined ? {} : { piSession }) }, args };
}

/** Undefined for arguments not made by {@link withCallScope}. Worker thread. */
export function callScopeOf(scoped: unknown): { args: unknown; scope: CallScope } | undefined {
  if (typeof scoped !== "object" || scoped === null || !(scopeKey in scoped)) return undefined;
  const { [scopeKey]: scope, args } = scoped as ScopedArgs;
  return typeof scope?.cwd === "string" && typeof scope.root === "string" ? { args, scope } : undefined;
}
