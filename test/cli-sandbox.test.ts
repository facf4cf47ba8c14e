// `serve` and `mcp` with `--sandbox` (src/cli/sandbox-options.ts): the flags,
// the refusal where bwrap cannot run, the servers' default and the line that
// says at start which isolation commands run with.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { supportsPi16 } from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

import { runCli } from "./support/cli.js";
import { until } from "./support/helpers.js";
import { warnSkippedPi16 } from "./support/pi16.js";
import { spawnServe } from "./support/serve-process.js";

warnSkippedPi16("test/cli-sandbox.test.ts");

const base = join(tmpdir(), `toolpool-cli-sandbox-${process.pid}`);
const root = join(base, "root");
/** A PATH without bwrap (nor anything else): the CLI runs from `process.execPath`. */
const noBwrap = { PATH: join(base, "empty-bin") };
const children: ChildProcess[] = [];
mkdirSync(root, { recursive: true });
mkdirSync(noBwrap.PATH, { recursive: true });

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
  rmSync(base, { recursive: true, force: true });
});

describe("serve and mcp --sandbox: what they refuse (exit 2)", () => {
  it("refuses --sandbox bwrap where bwrap is not on PATH, naming the cause and the fix, before anything starts", async () => {
    for (const command of [
      ["serve", "--port", "0"],
      ["mcp", "--http", "127.0.0.1:0"],
    ]) {
      const run = await runCli([...command, "--coding-tools", "--root", root, "--token", "t0k", "--sandbox", "bwrap"], { env: noBwrap });
      expect({ command, code: run.code }).toEqual({ command, code: 2 });
      expect(run.stdout).not.toContain("listening");
      expect(run.stderr).toMatch(
        /^toolpool: --sandbox bwrap: the bwrap sandbox cannot run here \(TP_ERR_SANDBOX_UNAVAILABLE\): bwrap \(bubblewrap\) is not on PATH\. /,
      );
      expect(run.stderr).toContain("To fix: install it (Debian and Ubuntu: `apt-get install bubblewrap`");
      expect(run.stderr).toContain("pass --sandbox none to run commands unsandboxed");
      expect(run.stderr.split("\n")).toHaveLength(2);
    }
  }, 60_000);

  it("takes a --sandbox-* flag as asking for the sandbox: refused where bwrap cannot run, never dropped", async () => {
    const run = await runCli(["mcp", "--coding-tools", "--root", root, "--sandbox-network"], { env: noBwrap, input: "" });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^toolpool: --sandbox-network: the bwrap sandbox cannot run here \(TP_ERR_SANDBOX_UNAVAILABLE\)/);
  }, 60_000);

  it.each([
    [["serve", "--port", "0", "--sandbox", "bwrap"], "toolpool: --sandbox needs --coding-tools\n"],
    [["mcp", "--sandbox-hide", "/srv"], "toolpool: --sandbox-hide needs --coding-tools\n"],
    [
      ["mcp", "--coding-tools", "--root", root, "--sandbox", "none", "--sandbox-bind", "/srv"],
      "toolpool: --sandbox-bind and --sandbox none contradict each other\n",
    ],
    [
      ["mcp", "--coding-tools", "--root", root, "--sandbox", "docker"],
      /^toolpool: option '--sandbox <kind>' argument 'docker' is invalid\. Allowed choices are bwrap, none\.\n$/,
    ],
    [
      ["mcp", "--coding-tools", "--root", root, "--sandbox-env", "A=B"],
      /^toolpool: option '--sandbox-env <name>' argument 'A=B' is invalid\. Expected an environment variable name\.\n$/,
    ],
  ] as const)(
    "refuses %j",
    async (args, message) => {
      const run = await runCli(args, { input: "" });
      expect(run.code).toBe(2);
      if (typeof message === "string") expect(run.stderr).toBe(message);
      else expect(run.stderr).toMatch(message);
    },
    60_000,
  );
});

describe.skipIf(!supportsPi16())("serve and mcp --coding-tools say at start which isolation commands run with (pi 1.6)", () => {
  it("with bash served and no --sandbox, run commands in the bwrap sandbox where bwrap runs (serve and mcp)", async () => {
    const served = await spawnServe(["--coding-tools", "--root", root, "--token", "t0k", "--threads", "1"], {}, children);
    // Written before "listening" on stdout, but the two pipes may arrive in either order.
    await until(
      () => served.stderr().includes("toolpool serve: coding tools'"),
      () => `the isolation line on serve's stderr: ${served.stderr()}`,
      {
        limitMs: 30_000,
      },
    );
    expect(served.stderr()).toMatch(/^toolpool serve: coding tools' commands run in a bwrap sandbox \(network off; bubblewrap \d+\.\d+/m);
    served.child.kill("SIGTERM");
    expect((await served.exited)[0]).toBe(0);

    const mcp = await runCli(["mcp", "--coding-tools", "read,bash", "--root", root], { input: "" });
    expect(mcp.code).toBe(0);
    expect(mcp.stderr).toMatch(/^toolpool mcp: coding tools' commands run in a bwrap sandbox \(network off; bubblewrap \d+\.\d+/m);
  }, 60_000);

  it("with bash served and no --sandbox where bwrap is not on PATH, serve unsandboxed with a warning saying why", async () => {
    const mcp = await runCli(["mcp", "--coding-tools", "--root", root], { env: noBwrap, input: "" });
    expect(mcp.code).toBe(0);
    expect(mcp.stderr).toMatch(
      /^toolpool mcp: warning: coding tools' commands run unsandboxed, as this user: bwrap \(bubblewrap\) is not on PATH\. To sandbox them: install it/m,
    );
  }, 60_000);

  it("says --sandbox none, --sandbox-network, and no default sandbox without bash", async () => {
    for (const [args, line] of [
      [["--sandbox", "none"], "toolpool mcp: coding tools' commands run unsandboxed, as this user (--sandbox none)"],
      [["--sandbox-network"], /^toolpool mcp: coding tools' commands run in a bwrap sandbox \(network on; bubblewrap /m],
      [
        ["--sandbox", "bwrap", "--sandbox-hide", "/srv", "--sandbox-bind", "/usr", "--sandbox-bind-rw", base, "--sandbox-env", "LANG"],
        /run in a bwrap sandbox \(network off;/,
      ],
    ] as const) {
      const mcp = await runCli(["mcp", "--coding-tools", "--root", root, ...args], { input: "" });
      expect({ args, code: mcp.code }).toEqual({ args, code: 0 });
      if (typeof line === "string") expect(mcp.stderr).toContain(`${line}\n`);
      else expect(mcp.stderr).toMatch(line);
    }
    const readOnly = await runCli(["mcp", "--coding-tools", "read,edit", "--root", root], { input: "" });
    expect(readOnly.stderr).toContain(
      "toolpool mcp: coding tools run unsandboxed (without bash the sandbox is not the default: --sandbox bwrap asks for it)\n",
    );
  }, 60_000);
});

describe.skipIf(!supportsPi16())("the server's own files in its sandbox (pi 1.6)", () => {
  it("hides mcp's --token-file from the commands, wherever it lies (pi 1.6)", async () => {
    const tokenFile = join(base, "token");
    writeFileSync(tokenFile, "s3cret-t0ken\n");
    const requests = [
      {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "bash", arguments: { command: `cat ${tokenFile}; ls ${base}` } } },
    ];
    // The token's folder bound read-only: only the sandbox's hiding of the server's files keeps the token unseen.
    const run = await runCli(["mcp", "--coding-tools", "bash", "--root", root, "--token-file", tokenFile, "--sandbox-bind", base], {
      input: `${requests.map((request) => JSON.stringify(request)).join("\n")}\n`,
    });
    expect(run.code).toBe(0);
    const answer = run.stdout.split("\n").find((line) => line.includes('"id":2'));
    expect(answer).toContain("empty-bin");
    expect(answer).not.toContain("s3cret-t0ken");
  }, 60_000);
});
