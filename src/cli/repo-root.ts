import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The working directory when it is a toolpool checkout, else the package this CLI was loaded from (two levels up from `dist/cli/`). */
export function locateRepoRoot(cwd: string = process.cwd(), moduleUrl: string = import.meta.url): string {
  if (isToolpoolPackage(cwd)) return cwd;
  return fileURLToPath(new URL("../../", moduleUrl));
}

function isToolpoolPackage(dir: string): boolean {
  try {
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: unknown };
    return manifest.name === "toolpool";
  } catch {
    return false;
  }
}
