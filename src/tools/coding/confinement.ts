/**
 * `confine: true`: a tool's path argument must stay inside the workspace.
 * The path is walked as the kernel would, every symlink (dangling or not)
 * replaced by its target. Fails closed on what cannot be judged; a walk that
 * fails inside goes to pi. Not a sandbox: a folder swapped for a link after
 * the check is followed (docs/coding-tools.md, "What confine does not stop").
 * @module
 */
import type { Stats } from "node:fs";
import { lstat, readlink } from "node:fs/promises";
import { dirname, isAbsolute, parse, relative, resolve, sep } from "node:path";

import { quotePathAlways } from "../quote-path.js";
import type { CodingToolName } from "./coding-settings.js";
import type { PiPathUtils } from "./pi-coding-agent.js";

/** Each tool's path argument, and what it means when absent. */
const pathArguments: Partial<Record<CodingToolName, { name: string; missing?: string }>> = {
  read: { name: "path" },
  edit: { name: "path" },
  write: { name: "path" },
  ls: { name: "path", missing: "." },
  find: { name: "path", missing: "." },
  grep: { name: "path", missing: "." },
};

/** Linux's `MAXSYMLINKS`. */
const maxLinkHops = 40;

/**
 * Throws (the call's error result) when the path leaves `root` and every
 * `alsoAllowed` folder. Fails closed on a `..` after a missing or non-folder
 * component, and on walk failures other than permission.
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
      // EACCES stops the kernel too, so pi answers; anything else (ENAMETOOLONG from
      // joined paths the kernel would walk) fails closed.
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
 * `dead-end`: a `..` after a missing or non-folder component; judging it by
 * text would skip the links between (`missing/../link/file`).
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
    isFolder = true;
    if (isAbsolute(target)) current = parse(resolve(target)).root;
    pending = [...components(target), ...pending];
  }
  return { kind: "reached", path: current };
}

/** Where an open of `path` lands; throws ELOOP, a {@link DeadEnd}, or other `lstat`/`readlink` errors. */
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

function components(path: string): string[] {
  return path.split(sep).filter((name) => name !== "");
}

function isInside(path: string, root: string): boolean {
  const fromRoot = relative(root, path);
  return fromRoot === "" || (!isAbsolute(fromRoot) && fromRoot !== ".." && !fromRoot.startsWith(`..${sep}`));
}
