// `toolpool doctor` (src/cli/doctor-command.ts, doctor-checks.ts): what this
// machine offers the servers' default setup, for people and as JSON.
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { supportsPi16 } from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

import { runCli } from "./support/cli.js";
import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/doctor.test.ts");

interface DoctorReport {
  isReady: boolean;
  checks: { name: string; status: "ok" | "warn" | "fail"; detail: string; version?: string; path?: string }[];
}

const base = join(tmpdir(), `toolpool-doctor-${process.pid}`);
/** A PATH without bwrap, rg or fd: the CLI runs from `process.execPath`. */
const noTools = { PATH: join(base, "empty-bin") };
mkdirSync(noTools.PATH, { recursive: true });

afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("toolpool doctor", () => {
  it("with a PATH lacking bwrap, reports bwrap missing with its fix and exits 1 (--json)", async () => {
    const run = await runCli(["doctor", "--json"], { env: noTools });
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout) as DoctorReport;
    expect(report.isReady).toBe(false);
    expect(report.checks.map((check) => check.name)).toEqual(["node", "pi", "bwrap", "rg", "fd"]);
    const bwrap = report.checks.find((check) => check.name === "bwrap")!;
    expect(bwrap).toMatchObject({ status: "fail", detail: expect.stringMatching(/^bwrap \(bubblewrap\) is not on PATH\. To fix: install it/) });
    // grep and find are not among the default tools: without rg and fd the default setup still runs.
    expect(report.checks.filter((check) => check.name === "rg" || check.name === "fd").map((check) => check.status)).toEqual(["warn", "warn"]);
    expect(run.stderr).toMatch(/^toolpool: doctor: (\w+, )*bwrap failed: /);
  }, 60_000);

  it("with a PATH lacking bwrap, says so to people, one line a check and a verdict", async () => {
    const run = await runCli(["doctor"], { env: noTools });
    expect(run.code).toBe(1);
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(6);
    expect(lines).toContain(
      "fail  bwrap  bwrap (bubblewrap) is not on PATH. To fix: install it (Debian and Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`)",
    );
    expect(lines.at(-1)).toMatch(/^not ready: (\w+, )*bwrap \(see above\)$/);
  }, 60_000);
});

describe.skipIf(!supportsPi16())("toolpool doctor on a machine with pi 1.6 and bwrap (pi 1.6)", () => {
  it("reports Node, pi and bwrap working, and exits 0, for people and as JSON", async () => {
    const json = await runCli(["doctor", "--json"]);
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as DoctorReport;
    expect(report.isReady).toBe(true);
    expect(report.checks.slice(0, 3)).toEqual([
      expect.objectContaining({ name: "node", status: "ok", version: process.versions.node }),
      expect.objectContaining({ name: "pi", status: "ok", version: expect.stringMatching(/^1\.6\./) }),
      expect.objectContaining({ name: "bwrap", status: "ok", version: expect.stringMatching(/^\d+\.\d+/), path: expect.stringMatching(/\/bwrap$/) }),
    ]);
    for (const check of report.checks) expect(check.status).not.toBe("fail");

    const human = await runCli(["doctor"]);
    expect(human.code).toBe(0);
    expect(human.stderr).toBe("");
    expect(human.stdout).toMatch(/^ok {4}bwrap {2}bubblewrap \d+\.\d+\.\d+ at \S+\/bwrap makes a sandbox/m);
    expect(human.stdout.trimEnd().split("\n").at(-1)).toBe("ready: serve and mcp --coding-tools run pi's coding tools here, bash in a bwrap sandbox");
  }, 60_000);
});
