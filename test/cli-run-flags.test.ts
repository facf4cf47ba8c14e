import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { runCli as runCliIn, type CliRun } from "./support/cli.js";

let folder: string;
/** Ten matching lines of 200 characters each. */
const longLines = Array.from({ length: 10 }, (_, line) => `needle ${line} ${"x".repeat(190 - String(line).length)}`);

beforeAll(() => {
  folder = mkdtempSync(join(tmpdir(), "toolpool-run-flags-"));
  writeFileSync(join(folder, "lines.txt"), `${longLines.join("\n")}\n`);
  const call = (id: string, name: string, args: object) => ({ type: "toolCall", id, name, arguments: args });
  writeFileSync(join(folder, "ok.json"), JSON.stringify({ role: "assistant", content: [call("g", "grep", { pattern: "needle" })] }));
  writeFileSync(
    join(folder, "mixed.json"),
    JSON.stringify({
      role: "assistant",
      content: [call("g", "grep", { pattern: "needle" }), call("h", "hash", {}), call("t", "hash", { text: "a" })],
    }),
  );
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** `toolpool run` in the folder: exit code, stdout, stderr. */
function runCli(args: string[]): Promise<CliRun> {
  return runCliIn(["run", "--threads", "1", "--root", folder, ...args], { cwd: folder });
}

describe("toolpool run --full and --fail-on-error", () => {
  it("shows the first 4 lines of a result, cut at 160 characters, and with --full all of it", async () => {
    const preview = await runCli(["ok.json"]);
    expect(preview.code).toBe(0);
    // The first 4 lines shown (grep's), the rest counted.
    expect(preview.stdout).toContain("lines.txt:4: ");
    expect(preview.stdout).not.toContain("lines.txt:5: ");
    expect(preview.stdout).toMatch(/… \d+ more lines/);
    expect(preview.stdout).not.toContain(longLines[0]);
    expect(preview.stdout).toContain(`${`lines.txt:1: ${longLines[0]}`.slice(0, 159)}…`);

    const full = await runCli(["--full", "ok.json"]);
    expect(full.code).toBe(0);
    for (const [index, line] of longLines.entries()) expect(full.stdout).toContain(`lines.txt:${index + 1}: ${line}`);
    expect(full.stdout).not.toContain("more line");
  }, 90_000);

  it("exits 0 when calls ended in error, and 1 with --fail-on-error, after showing the results", async () => {
    const plain = await runCli(["mixed.json"]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain("3 calls, 1 error");

    const failing = await runCli(["--fail-on-error", "mixed.json"]);
    expect(failing.code).toBe(1);
    expect(failing.stdout).toContain("3 calls, 1 error");
    expect(failing.stderr.trim().split("\n").at(-1)).toBe("toolpool: 1 of 3 calls ended in an error result (--fail-on-error)");

    const passing = await runCli(["--fail-on-error", "ok.json"]);
    expect(passing.code).toBe(0);
  }, 90_000);
});

describe("toolpool run --max-concurrency", () => {
  it("caps a tool by name, and refuses a cap that is not TOOL=N with N >= 1 or names no tool (exit 2)", async () => {
    const capped = await runCli(["--max-concurrency", "hash=1", "--max-concurrency", "grep=2", "mixed.json"]);
    expect(capped.code).toBe(0);
    expect(capped.stdout).toContain("3 calls, 1 error");

    for (const bad of ["hash=0", "hash", "=3", "hash=1.5"]) {
      const refused = await runCli(["--max-concurrency", bad, "ok.json"]);
      expect(refused.code, bad).toBe(2);
      expect(refused.stderr, bad).toContain("--max-concurrency");
    }
    const unknown = await runCli(["--max-concurrency", "nope=2", "ok.json"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("`maxConcurrency`");
  }, 120_000);
});
