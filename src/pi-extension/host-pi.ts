/**
 * The pi that loads toolpool's extension, found on disk: its package folder
 * (whose tool modules the pool's threads import) and the entry module of the
 * build it runs (whose tool definitions, renderers included, the extension
 * registers).
 *
 * pi gives an extension its own modules only through its loader's aliases
 * (jiti's, for a module jiti transforms); toolpool's extension is an ES
 * module that Node loads natively, and its worker threads load pi's tools
 * by path, so an import of `@earendil-works/pi-coding-agent` would resolve
 * from toolpool's folder: nothing there where pi installs packages (it
 * leaves out peer dependencies), or a second pi, other than the one running.
 *
 * Runs on pi's main thread.
 * @module
 */
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, join, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as util from "node:util";

import { ToolpoolError } from "../errors.js";

/** The package name of pi's coding agent. */
const piPackageName = "@earendil-works/pi-coding-agent";

/** The pi that runs the extension. */
export interface HostPi {
  /** Its package folder (real path). */
  readonly folder: string;
  /** Its `version` (package.json). */
  readonly version: string;
  /** The entry module of the build pi runs: `dist/bundle/index.js` for its bundled CLI, else the package's entry. */
  readonly entry: URL;
}

/**
 * The scripts that may be pi's, most telling first: those on the call stack
 * (pi's extension loader calls the extension's factory, so call this from
 * the factory before its first `await`), then pi's entry script
 * (`process.argv[1]`, the `pi` bin, often a symlink).
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

/**
 * The first of `scripts` that lies in a package of pi's coding agent (the
 * nearest package.json above it names `@earendil-works/pi-coding-agent`),
 * symlinks resolved. Throws `TP_ERR_MISSING_PACKAGE` naming what it looked
 * at when none does.
 */
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

/** The package holding `file`: the nearest folder above it with a package.json that has a name. */
function owningPackage(file: string): { folder: string; manifest: PiManifest } | undefined {
  let folder = dirname(file);
  for (;;) {
    const path = join(folder, "package.json");
    if (existsSync(path)) {
      try {
        const manifest = JSON.parse(readFileSync(path, "utf8")) as PiManifest;
        if (typeof manifest.name === "string") return { folder, manifest };
      } catch {
        // Not a manifest: go on up.
      }
    }
    const parent = dirname(folder);
    if (parent === folder) return undefined;
    folder = parent;
  }
}
