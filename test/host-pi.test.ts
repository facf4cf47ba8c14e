import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

import { afterAll, describe, expect, it } from "vitest";

import { findHostPi } from "./support/internals.js";

const base = realpathSync(mkdtempSync(join(tmpdir(), "toolpool-host-pi-")));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function writeFile(path: string, text = ""): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
}

/** A package folder `name` under `root`, with the files pi 1.6 ships: its bundled CLI and its entry. */
function writePackage(root: string, name: string): string {
  const folder = join(root, "lib", "node_modules", ...name.split("/"));
  writeFile(join(folder, "package.json"), JSON.stringify({ name, version: "1.6.0", exports: { ".": { import: "./dist/index.js" } } }));
  for (const file of [
    "dist/index.js",
    "dist/bundle/cli.js",
    "dist/bundle/index.js",
    "dist/bundle/chunks/chunk-A.js",
    "dist/core/extensions/loader.js",
  ]) {
    writeFile(join(folder, file));
  }
  return folder;
}

describe("findHostPi", () => {
  const global = join(base, "global");
  const pi = writePackage(global, "@earendil-works/pi-coding-agent");
  // `npm install -g` links the bin to the bundled CLI.
  const bin = join(global, "bin", "pi");
  mkdirSync(dirname(bin), { recursive: true });
  symlinkSync(join(pi, "dist", "bundle", "cli.js"), bin);
  const toolpool = writePackage(join(base, "project"), "toolpool");
  const extension = join(toolpool, "dist", "index.js");

  it("takes the first script in a pi package, past toolpool's own, and the bundle's entry for the bundled CLI", () => {
    const host = findHostPi([extension, join(pi, "dist", "bundle", "chunks", "chunk-A.js"), bin]);
    expect(host).toEqual({ folder: pi, version: "1.6.0", entry: pathToFileURL(join(pi, "dist", "bundle", "index.js")) });
  });

  it("follows a symlinked bin to its package", () => {
    expect(findHostPi([extension, bin]).entry.href).toBe(pathToFileURL(join(pi, "dist", "bundle", "index.js")).href);
  });

  it("takes the package's entry for pi's unbundled build (its SDK, dist/cli.js)", () => {
    expect(findHostPi([join(pi, "dist", "core", "extensions", "loader.js")]).entry.href).toBe(pathToFileURL(join(pi, "dist", "index.js")).href);
  });

  it("skips a missing script and a package of another name", () => {
    const other = writePackage(join(base, "other"), "@mariozechner/pi-coding-agent");
    expect(findHostPi([join(base, "missing.js"), join(other, "dist", "bundle", "cli.js"), bin]).folder).toBe(pi);
  });

  it("throws TP_ERR_MISSING_PACKAGE naming every script it looked at when none is pi's", () => {
    const script = writeFile(join(base, "program", "main.mjs"));
    expect(() => findHostPi([extension, script])).toThrow(
      expect.objectContaining({
        code: "TP_ERR_MISSING_PACKAGE",
        message: expect.stringContaining(`none of ${extension}, ${script} lies in a package @earendil-works/pi-coding-agent`),
      }),
    );
  });
});
