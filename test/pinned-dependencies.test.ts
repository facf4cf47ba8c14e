/**
 * toolpool relies on two dependencies beyond their documented API, so both
 * are pinned to one version and these tests fail when either changes:
 *
 * - Piscina: the private `kMovable` mark of `piscina/dist/symbols.js` (a
 *   worker's reply is made movable without loading Piscina's main module,
 *   `src/workers/thread/move-to-host.ts`), and the text of a worker's exit, which
 *   Piscina reports only in its message (`src/workers/classify-failure.ts`).
 * - BullMQ: the `failedReason` texts of a job failed as stalled, by which the
 *   fleet tells a lost node from a failed call (`src/fleet/remote-pool.ts`).
 *
 * Raising either pin means checking these uses against the new version.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { join } from "node:path";

import { Piscina } from "piscina";
import { describe, expect, it } from "vitest";

import { lostNodeReason, moveToHost } from "./support/internals.js";

const require = createRequire(import.meta.url);
const packageJson = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  dependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};
/** Where a dependency is installed (neither package's `exports` lists its package.json). */
const packageRoot = (name: string) => {
  const entry = require.resolve(name);
  const marker = `/node_modules/${name}/`;
  return entry.slice(0, entry.lastIndexOf(marker) + marker.length);
};
const installedVersion = (name: string) => (JSON.parse(readFileSync(join(packageRoot(name), "package.json"), "utf8")) as { version: string }).version;

describe("pinned dependencies", () => {
  it("pins piscina and bullmq to the exact versions installed", () => {
    // bullmq is an optional peer dependency (the fleet's): pinned there, and in devDependencies for the checkout.
    const pins = { piscina: packageJson.dependencies.piscina, bullmq: packageJson.peerDependencies?.bullmq };
    expect(packageJson.devDependencies?.bullmq).toBe(pins.bullmq);
    for (const [name, pin] of Object.entries(pins)) {
      expect(pin, `${name} is pinned exactly`).toMatch(/^\d+\.\d+\.\d+$/);
      expect(installedVersion(name), `${name} installed at its pin`).toBe(pin);
    }
  });

  it("marks a reply movable exactly as Piscina.move does", () => {
    const buffer = new ArrayBuffer(8);
    const ours = moveToHost("value", [buffer]) as object;
    const piscinas = Piscina.move(new ArrayBuffer(8)) as object;
    const privateMark = (value: object) =>
      Object.getOwnPropertySymbols(value).filter((symbol) => !Object.prototype.propertyIsEnumerable.call(value, symbol));
    // The one non-enumerable mark Piscina checks is the same symbol on both.
    expect(privateMark(piscinas)).toHaveLength(1);
    expect(privateMark(ours)).toEqual(privateMark(piscinas));
    for (const symbol of [Piscina.transferableSymbol, Piscina.valueSymbol]) {
      expect(symbol in piscinas && symbol in ours, `${String(symbol)} on both`).toBe(true);
    }
    expect((ours as Record<symbol, unknown>)[Piscina.transferableSymbol]).toEqual([buffer]);
    expect((ours as Record<symbol, unknown>)[Piscina.valueSymbol]).toBe("value");
  });

  it("reports a worker's exit in the message that classify-failure reads", { timeout: 60_000 }, async () => {
    const directory = mkdtempSync(join(tmpdir(), "toolpool-pins-"));
    const filename = join(directory, "exit.mjs");
    writeFileSync(filename, "export default () => process.exit(7);\n");
    const pool = new Piscina({ filename, maxThreads: 1 });
    try {
      const error = await pool.run(null).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect((error as Error).message).toMatch(/^worker exited with code: 7$/);
    } finally {
      await pool.destroy();
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it("names a job failed as stalled with the texts the fleet reads", () => {
    const bullmqRoot = packageRoot("bullmq");
    const stalledScript = readFileSync(join(bullmqRoot, "dist/cjs/commands/moveStalledJobsToWait-9.lua"), "utf8");
    const workerSource = readFileSync(join(bullmqRoot, "dist/cjs/classes/worker.js"), "utf8");
    expect(stalledScript).toContain("job stalled more than allowable limit");
    expect(workerSource).toContain("job started more than allowable limit");
    expect(lostNodeReason.test("job stalled more than allowable limit")).toBe(true);
    expect(lostNodeReason.test("job started more than allowable limit")).toBe(true);
  });
});
