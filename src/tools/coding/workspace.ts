/** Where each call of a coding tool runs (pi's `cwd`). Main thread. @module */
import { createHash } from "node:crypto";
import { mkdirSync, realpathSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";

import { describeValue, ToolpoolError } from "../../errors.js";
import { invalidOption } from "../../option-checks.js";
import type { CodingCallContext } from "./coding-settings.js";

/**
 * One folder for every session; a function of the batch's `sessionKey` that gives an existing
 * directory; or a folder per session under `root` (by its key's name or SHA-256), `root` without a key.
 */
export type CodingWorkspace = string | ((sessionKey: string | undefined) => string) | { root: string; perSession: true };

/** Throws `TP_ERR_INVALID_OPTION` for an invalid `workspace`. */
export function workspaceResolver(workspace: CodingWorkspace): (sessionKey: string | undefined) => CodingCallContext {
  if (typeof workspace === "string") {
    const fixed = workspaceAt(workspace, "workspace");
    return () => fixed;
  }
  if (typeof workspace === "function") {
    return (sessionKey) => {
      const folder = workspace(sessionKey);
      if (typeof folder !== "string" || folder === "") {
        throw new Error(`The workspace function gave ${describeValue(folder)} for session ${describeValue(sessionKey)}, not a folder`);
      }
      const context = workspaceAt(folder, `The workspace of session ${JSON.stringify(sessionKey)}`, callFailure);
      // Its siblings are taken for other sessions' workspaces: a sandbox hides them.
      const parent = dirname(context.root);
      return parent === context.root ? context : Object.freeze({ ...context, sessionsFolder: parent });
    };
  }
  if (typeof workspace === "object" && workspace !== null && workspace.perSession === true && typeof workspace.root === "string") {
    const root = workspaceAt(workspace.root, "workspace.root");
    const folders = new Map<string, CodingCallContext>();
    return (sessionKey) => {
      if (sessionKey === undefined) return root;
      let context = folders.get(sessionKey);
      if (context === undefined) {
        const folder = join(root.cwd, sessionFolderName(sessionKey));
        mkdirSync(folder, { recursive: true });
        context = Object.freeze({
          ...workspaceAt(folder, `The workspace of session ${JSON.stringify(sessionKey)}`, callFailure),
          sessionsFolder: root.root,
        });
        // Bounded: a server with many sessions recomputes old ones.
        if (folders.size >= 1024) folders.delete(folders.keys().next().value as string);
        folders.set(sessionKey, context);
      }
      return context;
    };
  }
  throw invalidOption("workspace", "a folder, a function (sessionKey) => folder, or { root, perSession: true }", workspace);
}

function sessionFolderName(sessionKey: string): string {
  if (/^[A-Za-z0-9._-]{1,64}$/.test(sessionKey) && sessionKey !== "." && sessionKey !== "..") return sessionKey;
  return `session-${createHash("sha256").update(sessionKey).digest("hex").slice(0, 32)}`;
}

/** `folder` as a call's context: an existing directory, else `fail`'s error. */
export function workspaceAt(
  folder: string,
  name: string,
  fail: (name: string, folder: string, reason: string) => Error = optionFailure,
): CodingCallContext {
  const cwd = isAbsolute(folder) ? folder : resolve(folder);
  try {
    const root = realpathSync(cwd);
    if (!statSync(root).isDirectory()) throw new Error("not a directory");
    return Object.freeze({ cwd, root });
  } catch (error) {
    throw fail(name, folder, (error as Error).message);
  }
}

const optionFailure = (name: string, folder: string, reason: string): Error =>
  new ToolpoolError("TP_ERR_INVALID_OPTION", `Expected \`${name}\` to be an existing directory, got ${describeValue(folder)} (${reason})`);
/** Found when a call comes: that call's error result. */
export const callFailure = (name: string, folder: string, reason: string): Error =>
  new Error(`${name} is not an existing directory: ${folder} (${reason})`);
