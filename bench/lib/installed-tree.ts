/**
 * A real tree for the built-in tools suite: a copy of the project's own
 * installed `node_modules` (tens of thousands of files of every size, from a
 * few bytes to minified bundles of several MiB), in a temp dir. A copy, so
 * that the search's root is no `node_modules` itself (both `grep` and the
 * bench's ripgrep skip nested `node_modules/` folders, as `grep` always does).
 */
import { cpSync, existsSync, lstatSync, mkdtempSync, readdirSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export interface InstalledTree {
  root: string;
  /** Regular files outside nested `node_modules/` folders, at most `maxFileBytes` each: what `grep` searches. */
  files: number;
  bytes: number;
  remove: () => void;
}

/** The project's `node_modules`, seen from `dist-bench/lib/`. */
export const installedPackagesDir = fileURLToPath(new URL("../../node_modules", import.meta.url));

/** Copies the project's `node_modules` into a temp dir; undefined when there is none. */
export function copyInstalledTree(maxFileBytes: number): InstalledTree | undefined {
  if (!existsSync(installedPackagesDir)) return undefined;
  const root = join(mkdtempSync(join(tmpdir(), "toolpool-bench-installed-")), "packages");
  const remove = (): void => rmSync(join(root, ".."), { recursive: true, force: true });
  try {
    // The folder itself may be a link (a checkout sharing another's packages): copy what it points to.
    cpSync(realpathSync(installedPackagesDir), root, { recursive: true, verbatimSymlinks: true });
    let files = 0;
    let bytes = 0;
    const visit = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (entry.name !== "node_modules" && entry.name !== ".git") visit(path);
        } else if (entry.isFile()) {
          const size = lstatSync(path).size;
          if (size > maxFileBytes) continue;
          files += 1;
          bytes += size;
        }
      }
    };
    visit(root);
    return { root, files, bytes, remove };
  } catch (error) {
    remove();
    throw error;
  }
}
