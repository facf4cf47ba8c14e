/** `grep`'s walk: every file to search under a root, in code point order, honoring `.gitignore` as git does. */
import { readdirSync, type Dirent } from "node:fs";
import { join, sep } from "node:path";
import ignore, { type Ignore } from "ignore";

import { readRegularFile } from "../regular-file.js";
import { isTemporaryFileName } from "../temporary-file.js";

const MAX_GITIGNORE_BYTES = 1024 * 1024;
const ALWAYS_SKIPPED = new Set([".git", "node_modules"]);
/** Git defaults core.ignorecase to true on the usual case-insensitive file systems. */
const caseInsensitiveFs = process.platform === "darwin" || process.platform === "win32";

/** Basename glob (`*`, `?`, everything else literal) to an anchored RegExp. */
export function globToRegExp(glob: string): RegExp {
  let source = "";
  for (const ch of glob) {
    if (ch === "*") source += ".*";
    else if (ch === "?") source += ".";
    else source += ch.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&");
  }
  return new RegExp(`^${source}$`, "su");
}

interface IgnoreLayer {
  /** Relative to the search root ("" for the root). */
  base: string;
  rules: Ignore;
}

/** As git: the deepest .gitignore with a matching rule decides, so a nested `!pattern` re-includes. */
function isIgnored(relPath: string, layers: readonly IgnoreLayer[]): boolean {
  for (let i = layers.length - 1; i >= 0; i--) {
    const layer = layers[i]!;
    const local = layer.base === "" ? relPath : relPath.slice(layer.base.length + 1);
    const verdict = layer.rules.test(local);
    if (verdict.ignored) return true;
    if (verdict.unignored) return false;
  }
  return false;
}

const walkStopped = new Error("walk stopped");

/** Absolute and root-relative paths, in walk order. */
export interface FileList {
  abs: string[];
  rel: string[];
}

export async function walkTree(
  root: string,
  nameFilter: RegExp | undefined,
  signal: AbortSignal,
  reportProgress: () => Promise<void>,
  onFile: (files: FileList) => boolean,
): Promise<FileList> {
  const files: FileList = { abs: [], rel: [] };
  const walk = async (absDir: string, relDir: string, parentLayers: readonly IgnoreLayer[]): Promise<void> => {
    signal.throwIfAborted();
    let entries: Dirent[];
    try {
      entries = readdirSync(absDir, { withFileTypes: true });
    } catch {
      return;
    }
    let layers = parentLayers;
    if (entries.some((e) => e.name === ".gitignore" && e.isFile())) {
      try {
        const text = readRegularFile(join(absDir, ".gitignore"), ".gitignore", MAX_GITIGNORE_BYTES).toString("utf8");
        const rules = ignore({ ignorecase: caseInsensitiveFs }).add(text);
        layers = [...parentLayers, { base: relDir, rules }];
      } catch {
        // Unreadable: treated as absent, as git does.
      }
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const prefix = absDir.endsWith(sep) ? absDir : absDir + sep;
    for (const entry of entries) {
      if (ALWAYS_SKIPPED.has(entry.name)) continue;
      const rel = relDir === "" ? entry.name : `${relDir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (isIgnored(`${rel}/`, layers)) continue;
        await walk(prefix + entry.name, rel, layers);
      } else if (entry.isFile()) {
        if (isTemporaryFileName(entry.name)) continue;
        if (nameFilter && !nameFilter.test(entry.name)) continue;
        if (isIgnored(rel, layers)) continue;
        files.abs.push(prefix + entry.name);
        files.rel.push(rel);
        // A spread search has enough: later files cannot be in the result.
        if (!onFile(files)) throw walkStopped;
      }
      // Symlinks are not followed: they could loop.
    }
    await reportProgress();
  };
  try {
    await walk(root, "", []);
  } catch (error) {
    if (error !== walkStopped) throw error;
  }
  return files;
}
