/**
 * The workspace of the built-in tools: the directory every path argument must
 * lie in, and whether `patch` may write.
 *
 * A tool module runs inside a worker and receives only `(args, ctx)`, so its
 * settings travel in the one thing that already crosses the thread boundary
 * for each tool: its module URL. `builtinTools({ root, allowWrite })` adds
 * them as query parameters (`hash.js?root=/srv/ws&allowWrite=0`); Node's ESM
 * loader keys modules by their full URL, so each setting is a module instance
 * of its own, loaded once per worker, and the worker protocol stays unchanged.
 * A module imported without them (a plain `file:` URL) confines itself to the
 * process's working directory and never writes.
 *
 * @module
 */
import { realpathSync } from "node:fs";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { messageOf, quotePath, quotePathAlways } from "./quote-path.js";

/** The settings of a tool module instance. */
export interface Workspace {
  /** The real path (symlinks resolved) of the workspace root. */
  readonly realRoot: string;
  /**
   * The root as it was given (absolute), when that differs from its real
   * path — `/tmp/ws` where `/tmp` links to `/private/tmp` — so that absolute
   * paths written the same way count as inside.
   */
  readonly root?: string;
  /** Whether `patch` may write files. */
  readonly allowWrite: boolean;
}

/** The query parameter holding the real root. */
const rootParam = "root";
/** The query parameter holding the root as given, when it is not the real root. */
const givenRootParam = "givenRoot";
/** The query parameter holding "1" when writes are allowed. */
const allowWriteParam = "allowWrite";

/**
 * `moduleUrl` with `workspace` in its query. `workspace.realRoot` must already
 * be a real path (see `realpathSync`).
 */
export function toWorkspaceModuleUrl(moduleUrl: URL, workspace: Workspace): URL {
  const url = new URL(moduleUrl.href);
  url.searchParams.set(rootParam, workspace.realRoot);
  if (workspace.root !== undefined && workspace.root !== workspace.realRoot) url.searchParams.set(givenRootParam, workspace.root);
  url.searchParams.set(allowWriteParam, workspace.allowWrite ? "1" : "0");
  return url;
}

/**
 * The workspace a tool module was loaded for, read from its own
 * `import.meta.url`; without settings there, the working directory and no
 * writes.
 */
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
 * Resolves a path argument against the workspace root and returns its real
 * path, which must lie inside the real root (absolute paths inside it are
 * fine). Throws an `Error` (the call's error result) when the path, lexically
 * or once its symlinks are resolved, leaves the root, or does not exist;
 * the message shows the path quoted when it holds control characters.
 * The lexical check comes first, so that nothing outside the root is ever
 * looked at, not even whether it exists.
 *
 * @param tool The tool's name, for the message.
 * @param argName The argument's name, for the message.
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

/** Whether `path` (absolute, normalised) is `root` or lies below it. */
function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!isAbsolute(rel) && rel !== ".." && !rel.startsWith(`..${sep}`));
}
