/**
 * `confine: true` for pi's coding tools: a path argument must stay inside the
 * session's workspace, symlinks resolved. The path is resolved as pi's tool
 * resolves it (pi's own `resolveToCwd`, and `resolveReadPathAsync` for
 * read), then the real path of its nearest existing ancestor decides, so a
 * file that does not exist yet (write) is judged by the folder it would go in.
 *
 * A check before the tool runs leaves a window: a symlink swapped in between
 * the check and the tool's own open is followed. Confinement keeps an agent's
 * paths where they belong; it is not a sandbox for hostile code (bash runs
 * any command; it only starts in the workspace).
 *
 * @module
 */
import { realpath } from "node:fs/promises";
import { basename, dirname, join, relative, sep, isAbsolute } from "node:path";

import { quotePathAlways } from "../quote-path.js";
import type { CodingToolName } from "./coding-settings.js";
import type { PiPathUtils } from "./pi-coding-agent.js";

/** The path argument of each tool that takes one, and what it stands for when absent. */
const pathArguments: Partial<Record<CodingToolName, { name: string; missing?: string }>> = {
  read: { name: "path" },
  edit: { name: "path" },
  write: { name: "path" },
  ls: { name: "path", missing: "." },
  find: { name: "path", missing: "." },
  grep: { name: "path", missing: "." },
};

/**
 * Throws (the call's error result) when `args`' path argument lies outside
 * the real workspace `root`; the message names the path as given and the
 * workspace.
 */
export async function assertConfined(tool: CodingToolName, args: unknown, cwd: string, root: string, paths: PiPathUtils): Promise<void> {
  const spec = pathArguments[tool];
  if (spec === undefined || typeof args !== "object" || args === null) return;
  const given = (args as Record<string, unknown>)[spec.name];
  const path = typeof given === "string" && given !== "" ? given : spec.missing;
  if (path === undefined) return;
  const absolute = tool === "read" ? await paths.resolveReadPathAsync(path, cwd) : paths.resolveToCwd(path, cwd);
  const real = await realPathOfNearest(absolute);
  if (!isInside(real, root)) {
    throw new Error(`Path ${quotePathAlways(path)} is outside the workspace ${quotePathAlways(root)}: it resolves to ${quotePathAlways(real)}`);
  }
}

/** The real path of `path`, or of its nearest existing ancestor with the rest appended. */
async function realPathOfNearest(path: string): Promise<string> {
  const rest: string[] = [];
  let current = path;
  for (;;) {
    try {
      return join(await realpath(current), ...rest.reverse());
    } catch (error) {
      const parent = dirname(current);
      const code = (error as NodeJS.ErrnoException).code;
      if (parent === current || (code !== "ENOENT" && code !== "ENOTDIR")) throw error;
      rest.push(basename(current));
      current = parent;
    }
  }
}

function isInside(path: string, root: string): boolean {
  const fromRoot = relative(root, path);
  return fromRoot === "" || (!isAbsolute(fromRoot) && fromRoot !== ".." && !fromRoot.startsWith(`..${sep}`));
}
