/**
 * `confine: true` for pi's coding tools: a path argument must stay inside the
 * session's workspace, symlinks followed. The path is resolved as pi's tool
 * resolves it (pi's own `resolveToCwd`, and `resolveReadPathAsync` for
 * read), then walked one component at a time as the kernel's open would
 * walk it: every component that is a symlink is replaced by where it points,
 * whether that exists or not, through as many hops as the kernel follows.
 * So a dangling link to a file outside (`notes.md -> /home/me/.bashrc`,
 * not written yet) is judged by its target and refused, as is a chain of
 * links whose last hop leaves; a link whose target lies inside keeps
 * working. A component that does not exist ends the walk: the rest cannot
 * hold links, and is appended as it is (a file `write` is about to create);
 * but a `..` after it (or after a file), which the kernel would refuse to
 * walk, is refused here too rather than judged by its text.
 *
 * A check before the tool runs leaves a window: a folder swapped for a link
 * between the check and the tool's own open is followed (docs/coding-tools.md,
 * "What confine does not stop", says what an operator can do about it).
 * Confinement keeps an agent's paths where they belong; it is not a sandbox
 * for hostile code (bash runs any command; it only starts in the workspace).
 *
 * @module
 */
import type { Stats } from "node:fs";
import { lstat, readlink } from "node:fs/promises";
import { dirname, isAbsolute, parse, relative, resolve, sep } from "node:path";

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

/** How many links one path may pass through: Linux's own limit (`MAXSYMLINKS`), past which its open fails with ELOOP. */
const maxLinkHops = 40;

/**
 * Throws (the call's error result) when `args`' path argument lies outside
 * the real workspace `root`; the message names the path as given and the
 * workspace. `alsoAllowed`: real folders a path may lie in besides the
 * workspace (read's own bash output files, see `bash-output-files.ts`).
 */
export async function assertConfined(
  tool: CodingToolName,
  args: unknown,
  cwd: string,
  root: string,
  paths: PiPathUtils,
  alsoAllowed: readonly string[] = [],
): Promise<void> {
  const spec = pathArguments[tool];
  if (spec === undefined || typeof args !== "object" || args === null) return;
  const given = (args as Record<string, unknown>)[spec.name];
  const path = typeof given === "string" && given !== "" ? given : spec.missing;
  if (path === undefined) return;
  const absolute = tool === "read" ? await paths.resolveReadPathAsync(path, cwd) : paths.resolveToCwd(path, cwd);
  let real: string;
  try {
    real = await followLinks(absolute);
  } catch (error) {
    if (error instanceof DeadEndError)
      throw new Error(
        `Path ${quotePathAlways(path)} leads through ${quotePathAlways(error.at)}, which ${error.reason}, and then back out of it with ".."; it is not followed`,
      );
    if ((error as NodeJS.ErrnoException).code !== "ELOOP") throw error;
    throw new Error(`Path ${quotePathAlways(path)} passes through more than ${maxLinkHops} symbolic links; it is not followed`);
  }
  if (isInside(real, root) || alsoAllowed.some((folder) => isInside(real, folder))) return;
  throw new Error(`Path ${quotePathAlways(path)} is outside the workspace ${quotePathAlways(root)}: it resolves to ${quotePathAlways(real)}`);
}

/**
 * A path the kernel would not walk: a `..` below a component that does not
 * exist or is not a folder (its open fails with ENOENT or ENOTDIR). Judging
 * it by its text would skip the links between (`missing/../link/file`).
 */
class DeadEndError extends Error {
  constructor(
    readonly at: string,
    readonly reason: "does not exist" | "is not a folder",
  ) {
    super(`${at} ${reason}`);
  }
}

/**
 * Where an open of absolute `path` lands: each component that is a symlink
 * replaced by its target (relative targets against the link's folder),
 * dangling or not, until a component does not exist (the rest is appended)
 * or the path ends. Throws ELOOP past {@link maxLinkHops} links,
 * {@link DeadEndError} where a `..` follows a component that does not exist
 * or is not a folder (as strict as the kernel, which fails there), and what
 * `lstat` or `readlink` throw other than ENOENT and ENOTDIR.
 */
export async function followLinks(path: string): Promise<string> {
  let pending = components(path);
  let current = parse(path).root;
  let isFolder = true;
  let hops = 0;
  while (pending.length > 0) {
    const name = pending.shift() as string;
    if (name === ".") continue;
    if (name === "..") {
      if (!isFolder) throw new DeadEndError(current, "is not a folder");
      current = dirname(current);
      continue;
    }
    const next = resolve(current, name);
    let info: Stats;
    try {
      info = await lstat(next);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
      // Nothing there: no component below it can be a link, and none can climb back out of it.
      if (pending.includes("..")) throw new DeadEndError(next, "does not exist");
      return resolve(next, ...pending);
    }
    if (!info.isSymbolicLink()) {
      current = next;
      isFolder = info.isDirectory();
      continue;
    }
    hops += 1;
    if (hops > maxLinkHops) throw Object.assign(new Error(`Too many symbolic links: ${path}`), { code: "ELOOP" });
    const target = await readlink(next);
    // The walk goes on from the link's folder (or the root), a folder.
    isFolder = true;
    if (isAbsolute(target)) current = parse(resolve(target)).root;
    pending = [...components(target), ...pending];
  }
  return current;
}

/** The names of `path`'s components, `.` and `..` kept (they are resolved against real folders). */
function components(path: string): string[] {
  return path.split(sep).filter((name) => name !== "");
}

function isInside(path: string, root: string): boolean {
  const fromRoot = relative(root, path);
  return fromRoot === "" || (!isAbsolute(fromRoot) && fromRoot !== ".." && !fromRoot.startsWith(`..${sep}`));
}
