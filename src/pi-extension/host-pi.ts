/**
 * The pi that loads the extension, found on disk: its package folder (for the
 * threads' tool modules) and the entry of the build it runs (for the tool
 * definitions). A plain import would resolve from toolpool's folder, where pi
 * installs no peer dependencies, or find a second pi. Main thread of pi.
 * @module
 */
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, join, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as util from "node:util";

import { ToolpoolError } from "../errors.js";

const piPackageName = "@earendil-works/pi-coding-agent";

export interface HostPi {
  /** Its package folder (real path). */
  readonly folder: string;
  readonly version: string;
  /** The entry module of the build pi runs: `dist/bundle/index.js` for its bundled CLI, else the package's entry. */
  readonly entry: URL;
}

/**
 * Scripts that may be pi's, most telling first: the call stack (call from
 * the extension's factory before its first `await`), then `process.argv[1]`.
 */
export function hostPiCandidates(): string[] {
  // `util.getCallSites` is in every Node that runs pi 1.6 (>= 22.19); @types/node 20 does not declare it.
  const getCallSites = (util as { getCallSites?: (frames?: number) => { scriptName: string }[] }).getCallSites;
  const scripts = (getCallSites?.(64) ?? []).flatMap(({ scriptName }) => {
    if (scriptName.startsWith("file:")) return [fileURLToPath(scriptName)];
    return isAbsolute(scriptName) ? [scriptName] : [];
  });
  const entryScript = process.argv[1];
  if (entryScript !== undefined && entryScript !== "") scripts.push(entryScript);
  return [...new Set(scripts)];
}

/** The first of `scripts` inside a pi-coding-agent package; else throws `TP_ERR_MISSING_PACKAGE`. */
export function findHostPi(scripts: readonly string[]): HostPi {
  for (const script of scripts) {
    let real: string;
    try {
      real = realpathSync(script);
    } catch {
      continue;
    }
    const found = owningPackage(real);
    if (found === undefined || found.manifest.name !== piPackageName) continue;
    const { folder, manifest } = found;
    // The bundled CLI (the `pi` bin) runs its bundle's chunks; the bundle's entry shares them.
    const bundled = real.startsWith(join(folder, "dist", "bundle") + sep);
    const entry = bundled ? join(folder, "dist", "bundle", "index.js") : join(folder, manifest.exports?.["."]?.import ?? "dist/index.js");
    if (!existsSync(entry)) {
      throw new ToolpoolError("TP_ERR_MISSING_PACKAGE", `toolpool's pi extension: the pi at ${folder} has no ${entry}`);
    }
    return Object.freeze({ folder, version: String(manifest.version), entry: pathToFileURL(entry) });
  }
  throw new ToolpoolError(
    "TP_ERR_MISSING_PACKAGE",
    `toolpool's pi extension could not find the pi that loads it: none of ${scripts.length === 0 ? "(no scripts)" : scripts.join(", ")} lies in a package ${piPackageName} (the code that called the extension, then pi's entry script). Load toolpool from pi's command line (pi -e /path/to/toolpool, pi install /path/to/toolpool) or pi's SDK installed as a package on disk.`,
  );
}

interface PiManifest {
  name?: string;
  version?: string;
  exports?: { ".": { import?: string } };
}

/** The nearest folder above `file` with a named package.json. */
function owningPackage(file: string): { folder: string; manifest: PiManifest } | undefined {
  let folder = dirname(file);
  for (;;) {
    const path = join(folder, "package.json");
    if (existsSync(path)) {
      try {
        const manifest = JSON.parse(readFileSync(path, "utf8")) as PiManifest;
        if (typeof manifest.name === "string") return { folder, manifest };
      } catch {}
    }
    const parent = dirname(folder);
    if (parent === folder) return undefined;
    folder = parent;
  }
}
