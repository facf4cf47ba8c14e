/**
 * pi's probes for ripgrep and fd (`rg --version` before every grep call) are
 * remembered on a pool thread for a while; nothing else is.
 */
import type { spawnSync } from "node:child_process";

import { describe, expect, it } from "vitest";

import { probeMemoryMs, rememberingProbes } from "./support/internals.js";

type SpawnSync = typeof spawnSync;

/** A fake spawnSync recording its calls; `fails` names commands whose probe finds nothing. */
function fakeSpawnSync(fails = new Set<string>()) {
  const calls: unknown[][] = [];
  const spawn = ((...call: unknown[]) => {
    calls.push(call);
    const command = call[0] as string;
    return fails.has(command)
      ? { error: new Error(`spawnSync ${command} ENOENT`), status: null }
      : { error: undefined, status: 0, stdout: `${command} 1.0` };
  }) as unknown as SpawnSync;
  return { spawn, calls };
}

describe("remembered tool probes", () => {
  it("runs pi's probe of rg once per window, and again once the window has passed", () => {
    let now = 0;
    const fake = fakeSpawnSync();
    const spawn = rememberingProbes(fake.spawn, () => now);
    const first = spawn("rg", ["--version"], { stdio: "pipe" });
    now = probeMemoryMs - 1;
    const second = spawn("rg", ["--version"], { stdio: "pipe" });
    expect(second).toBe(first);
    expect(fake.calls).toHaveLength(1);
    now = probeMemoryMs;
    spawn("rg", ["--version"], { stdio: "pipe" });
    expect(fake.calls).toHaveLength(2);
    // fd has its own memory.
    spawn("fd", ["--version"], { stdio: "pipe" });
    expect(fake.calls.map((call) => call[0])).toEqual(["rg", "rg", "fd"]);
  });

  it("never remembers a probe that found nothing", () => {
    const fake = fakeSpawnSync(new Set(["rg"]));
    const spawn = rememberingProbes(fake.spawn, () => 0);
    for (let i = 0; i < 3; i++) expect(spawn("rg", ["--version"], { stdio: "pipe" }).error).toBeInstanceOf(Error);
    expect(fake.calls).toHaveLength(3);
  });

  it("passes every other call through, arguments as given", () => {
    const fake = fakeSpawnSync();
    const spawn = rememberingProbes(fake.spawn, () => 0) as unknown as (...call: unknown[]) => unknown;
    const others: unknown[][] = [
      ["rg", ["--version"], { stdio: "inherit" }],
      ["rg", ["--version"], { stdio: "pipe", cwd: "/" }],
      ["rg", ["-n", "x"], { stdio: "pipe" }],
      ["git", ["--version"], { stdio: "pipe" }],
      ["rg", ["--version"]],
    ];
    for (const call of [...others, ...others]) spawn(...call);
    expect(fake.calls).toEqual([...others, ...others]);
  });
});
