/**
 * The built-in tools' workspace: the root every path must lie in, and whether
 * `patch` may write. A tool module receives only `(args, ctx)`, so the
 * settings travel in its module URL's query; Node keys ESM modules by full
 * URL, so each setting is a module instance of its own. Without them: the
 * working directory, no writes.
 *
 * @module
 */
import { realpathSync } from "node:fs";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { messageOf, quotePath, quotePathAlways } from "./quote-path.js";

export interface Workspace {
  readonly realRoot: string;
  /** The root as given, when it differs from its real path (`/tmp` → `/private/tmp`), so such absolute paths count as inside. */
  readonly root?: string;
  readonly allowWrite: boolean;
}

const rootParam = "root";
const givenRootParam = "givenRoot";
const allowWriteParam = "allowWrite";

/** `workspace.realRoot` must already be a real path. */
export function toWorkspaceModuleUrl(moduleUrl: URL, workspace: Workspace): URL {
  const url = new URL(moduleUrl.href);
  url.searchParams.set(rootParam, workspace.realRoot);
  if (workspace.root !== undefined && workspace.root !== workspace.realRoot) url.searchParams.set(givenRootParam, workspace.root);
  url.searchParams.set(allowWriteParam, workspace.allowWrite ? "1" : "0");
  return url;
}

export function workspaceFromModuleUrl(moduleUrl: string): Workspace {
  const params = new URL(moduleUrl).searchParams;
  const root = params.get(rootParam);
  const givenRoot = params.get(givenRootParam);
  return Object.freeze({
    realRoot: root === null || root === "" ? realpathSync(process.cwd()) : root,
    allowWrite: params.get(allowWriteParam) === "1",
    ...(givenRoot === null || givenRoot === "" || root === null ? {} : { root: givenRoot }),
  });
}

/**
 * Resolves a path argument to its real path inside the real root. The
 * lexical check comes first, so nothing outside the root is looked at, not
 * even whether it exists.
 *
 * @param noun What a missing path is called in its message ("file", "path").
 */
export function resolveInWorkspace(workspace: Workspace, tool: string, argName: string, path: string, noun = argName): string {
  const outside = (): Error =>
    new Error(`${tool}: ${argName} ${quotePathAlways(path)} is outside the workspace root ${quotePath(workspace.realRoot)}`);
  if (path.includes("\0")) throw new Error(`${tool}: ${argName} must not contain a NUL character`);
  const absolute = resolve(workspace.realRoot, path);
  const isLexicallyInside = isInside(workspace.realRoot, absolute) || (workspace.root !== undefined && isInside(workspace.root, absolute));
  if (!isLexicallyInside) throw outside();
  let real: string;
  try {
    real = realpathSync(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") throw new Error(`${tool}: ${noun} not found: ${quotePath(path)}`);
    throw new Error(`${tool}: cannot resolve ${argName} ${quotePath(path)}: ${messageOf(error)}`);
  }
  if (!isInside(workspace.realRoot, real)) throw outside();
  return real;
}

function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!isAbsolute(rel) && rel !== ".." && !rel.startsWith(`..${sep}`));
}
