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
 * Confine refuses what leaves the workspace and nothing else: a path whose
 * walk fails inside it (a loop of links, a folder it may not search) goes to
 * pi's tool, which answers as it would without confine.
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
 *
 * Only a path that leaves is refused: one whose walk fails inside (a loop
 * of links, a folder it may not search) returns, and pi's tool gives its own
 * answer, as it does to everything that comes before any path is touched
 * (an aborted signal, invalid edits). Two exceptions, refused wherever they
 * are because where they would lead cannot be judged: a `..` after a
 * component that does not exist or is not a folder ({@link DeadEnd}), and a
 * walk that fails inside for a reason other than permission (a resolved
 * path past PATH_MAX).
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
  const isAllowed = (real: string) => isInside(real, root) || alsoAllowed.some((folder) => isInside(real, folder));
  const landing = await walkLinks(absolute);
  switch (landing.kind) {
    case "reached":
      if (isAllowed(landing.path)) return;
      throw outsideError(path, root, `it resolves to ${quotePathAlways(landing.path)}`);
    case "stuck": {
      if (!isAllowed(landing.at)) throw outsideError(path, root, `it leads to ${quotePathAlways(landing.at)}`);
      // No permission to search a folder inside stops the kernel's walk there too (pi runs with this process's
      // credentials): pi answers. Any other failure is not the kernel's: the walk joins whole paths, which can pass
      // PATH_MAX (ENAMETOOLONG) where the kernel, following one link at a time, goes on; so it fails closed.
      const code = (landing.error as NodeJS.ErrnoException).code;
      if (code === "EACCES" || code === "EPERM") return;
      throw new Error(
        `Path ${quotePathAlways(path)} could not be checked against the workspace ${quotePathAlways(root)}: ${code ?? String(landing.error)}${code === "ENAMETOOLONG" ? " (its links lead to a path longer than the system allows)" : ""}; it is not followed`,
      );
    }
    case "loop": {
      const outside = landing.links.find((link) => !isAllowed(link));
      if (outside === undefined) return;
      throw outsideError(path, root, `it passes through the symbolic link ${quotePathAlways(outside)}`);
    }
    case "dead-end":
      throw new Error(
        `Path ${quotePathAlways(path)} leads through ${quotePathAlways(landing.at)}, which ${landing.reason}, and then back out of it with ".."; it is not followed`,
      );
  }
}

function outsideError(path: string, root: string, how: string): Error {
  return new Error(`Path ${quotePathAlways(path)} is outside the workspace ${quotePathAlways(root)}: ${how}`);
}

/**
 * Where a walk of a path's links ends. `reached`: the path an open lands on.
 * `stuck`: `lstat` or `readlink` failed at `at` (no permission to search its
 * folder, a name too long) for a reason other than a missing component, so
 * the kernel cannot walk further either. `loop`: more than
 * {@link maxLinkHops} links, each one passed through in `links` (the kernel's
 * ELOOP). `dead-end`: a `..` after component `at`, which does not exist or
 * is not a folder (the kernel's ENOENT or ENOTDIR); judging it by its text
 * would skip the links between (`missing/../link/file`).
 */
type Landing =
  | { kind: "reached"; path: string }
  | { kind: "stuck"; at: string; error: unknown }
  | { kind: "loop"; links: string[] }
  | ({ kind: "dead-end" } & DeadEnd);

interface DeadEnd {
  at: string;
  reason: "does not exist" | "is not a folder";
}

/**
 * Where an open of absolute `path` lands: each component that is a symlink
 * replaced by its target (relative targets against the link's folder),
 * dangling or not, until a component does not exist (the rest is appended)
 * or the path ends; or where and why the walk could not get there (see
 * {@link Landing}).
 */
async function walkLinks(path: string): Promise<Landing> {
  let pending = components(path);
  let current = parse(path).root;
  let isFolder = true;
  const links: string[] = [];
  while (pending.length > 0) {
    const name = pending.shift() as string;
    if (name === ".") continue;
    if (name === "..") {
      if (!isFolder) return { kind: "dead-end", at: current, reason: "is not a folder" };
      current = dirname(current);
      continue;
    }
    const next = resolve(current, name);
    let info: Stats;
    try {
      info = await lstat(next);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") return { kind: "stuck", at: next, error };
      // Nothing there: no component below it can be a link, and none can climb back out of it.
      if (pending.includes("..")) return { kind: "dead-end", at: next, reason: "does not exist" };
      return { kind: "reached", path: resolve(next, ...pending) };
    }
    if (!info.isSymbolicLink()) {
      current = next;
      isFolder = info.isDirectory();
      continue;
    }
    links.push(next);
    if (links.length > maxLinkHops) return { kind: "loop", links };
    let target: string;
    try {
      target = await readlink(next);
    } catch (error) {
      return { kind: "stuck", at: next, error };
    }
    // The walk goes on from the link's folder (or the root), a folder.
    isFolder = true;
    if (isAbsolute(target)) current = parse(resolve(target)).root;
    pending = [...components(target), ...pending];
  }
  return { kind: "reached", path: current };
}

/**
 * Where an open of absolute `path` lands (see {@link walkLinks}). Throws
 * ELOOP past {@link maxLinkHops} links, a {@link DeadEnd} (`at`, `reason`)
 * where a `..` follows a component that does not exist or is not a folder
 * (as strict as the kernel, which fails there), and what `lstat` or
 * `readlink` throw other than ENOENT and ENOTDIR.
 */
export async function followLinks(path: string): Promise<string> {
  const landing = await walkLinks(path);
  switch (landing.kind) {
    case "reached":
      return landing.path;
    case "stuck":
      throw landing.error;
    case "loop":
      throw Object.assign(new Error(`Too many symbolic links: ${path}`), { code: "ELOOP" });
    case "dead-end":
      throw Object.assign(new Error(`${landing.at} ${landing.reason}`), { at: landing.at, reason: landing.reason });
  }
}

/** The names of `path`'s components, `.` and `..` kept (they are resolved against real folders). */
function components(path: string): string[] {
  return path.split(sep).filter((name) => name !== "");
}

function isInside(path: string, root: string): boolean {
  const fromRoot = relative(root, path);
  return fromRoot === "" || (!isAbsolute(fromRoot) && fromRoot !== ".." && !fromRoot.startsWith(`..${sep}`));
}
