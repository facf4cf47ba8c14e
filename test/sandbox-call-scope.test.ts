/**
 * Which sandbox a spawn of pi's grep or find gets: its own call's, even when
 * it comes after the call settled (pi's find settles an aborted call at once
 * and may still start fd), and never none or the next call's.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, describe, expect, it } from "vitest";

import { sandboxingSpawn, withCallSandbox } from "./support/internals.js";

const base = mkdtempSync(join(tmpdir(), "toolpool-sandbox-scope-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const sandboxOf = (bwrap: string) => ({ kind: "bwrap" as const, bwrap, network: false, hide: [], bind: [], env: [] });

describe("a sandboxed call's spawns", () => {
  it("stay in the call's sandbox when they come after the call settled, the next call running", async () => {
    const started: { file: string; args: string[] }[] = [];
    const spawn = sandboxingSpawn(((file: string, args: string[]) => {
      started.push({ file, args });
      return {};
    }) as never);
    let startLeftover: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      startLeftover = resolve;
    });
    let leftover: Promise<unknown> = Promise.resolve();
    // The first call settles, leaving work behind that spawns later; the second runs when it does.
    await withCallSandbox({ sandbox: sandboxOf("/first/bwrap"), place: { workspace: base } }, async () => {
      leftover = (async () => {
        await gate;
        return spawn("fd", ["--version"], {});
      })();
    });
    await withCallSandbox({ sandbox: sandboxOf("/second/bwrap"), place: { workspace: base } }, async () => {
      startLeftover();
      await leftover;
    });
    await withCallSandbox(undefined, async () => {
      spawn("rg", ["--version"], {});
    });
    expect(started.map(({ file }) => file)).toEqual(["/first/bwrap", "rg"]);
  });
});
