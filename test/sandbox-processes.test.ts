/**
 * bash's process handling in the bwrap sandbox (its grace at the deadline,
 * pi's session variables, background processes kept), and a sandbox the
 * machine cannot make. The escapes are in sandbox-escape.test.ts.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { codingTools, createRuntime, supportsPi16, ToolpoolError } from "toolpool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { warnSkippedPi16 } from "./support/pi16.js";
import { runningAfterWait } from "./support/processes.js";
import { until } from "./support/helpers.js";
import { bash, hasBwrap, killAll, processesWith } from "./support/sandbox-calls.js";

warnSkippedPi16("test/sandbox-processes.test.ts");

const base = mkdtempSync(join(tmpdir(), "toolpool-sandbox-processes-"));
const root = join(base, "sessions");
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe.skipIf(!supportsPi16() || !hasBwrap)("bash's process handling in the bwrap sandbox (pi 1.6)", () => {
  beforeAll(() => mkdirSync(root, { recursive: true }));

  it("gives the shell its SIGTERM and grace at the deadline, as without a sandbox", async () => {
    const runtimes = [true, false].map((isSandboxed) =>
      createRuntime({
        pi: "1.6",
        tools: codingTools({
          workspace: { root, perSession: true },
          tools: ["bash"],
          bash: { graceMs: 5_000 },
          ioThreads: 1,
          ...(isSandboxed ? { sandbox: "bwrap" as const } : {}),
        }),
      }),
    );
    try {
      // The shell leads its group and carries the call's marker: a SIGTERM to each may both reach it, so the trap runs once.
      const command = "trap 'trap \"\" TERM; echo got-term; exit 0' TERM; echo started; sleep 30 & wait";
      const [inside, control] = await Promise.all(runtimes.map((runtime) => bash(runtime, command, "grace", 1)));
      expect(control!.text).toMatch(/^started\ngot-term\n+Command timed out after 1 seconds$/);
      expect(inside).toEqual(control);
    } finally {
      await Promise.all(runtimes.map((runtime) => runtime.close()));
    }
  }, 60_000);

  it("tells the command pi's session variables, as pi's bash does", async () => {
    const runtime = createRuntime({
      pi: "1.6",
      tools: codingTools({
        workspace: { root, perSession: true },
        tools: ["bash"],
        sandbox: "bwrap",
        ioThreads: 1,
        piSession: (sessionKey) => ({ id: `id-${sessionKey}`, model: { provider: "prov", id: "mod" }, thinkingLevel: "high" }),
      }),
    });
    try {
      const outcome = await bash(runtime, 'echo "$PI_SESSION_ID $PI_PROVIDER $PI_MODEL $PI_REASONING_LEVEL"', "pi");
      expect(outcome).toEqual({ text: "id-pi prov mod high\n", isError: false });
    } finally {
      await runtime.close();
    }
  });

  it("keeps a call's background processes with keepBackground until the runtime closes, then ends them", async () => {
    const token = `kept-${process.pid}`;
    const runtime = createRuntime({
      pi: "1.6",
      tools: codingTools({ workspace: { root, perSession: true }, tools: ["bash"], sandbox: "bwrap", bash: { keepBackground: true }, ioThreads: 1 }),
    });
    let pids: number[] = [];
    try {
      const outcome = await bash(runtime, `setsid env -i /bin/sh -c ': ${token}; while :; do sleep 0.2; done' > /dev/null 2>&1 & echo up`, "kept");
      expect(outcome).toEqual({ text: "up\n", isError: false });
      await until(() => processesWith(token).length > 0, "the background loop alive after its call");
      pids = processesWith(token);
    } finally {
      await runtime.close();
    }
    try {
      expect(await runningAfterWait(pids, "the background loop after close")).toEqual([]);
    } finally {
      killAll(processesWith(token));
    }
  }, 60_000);
});

describe("a sandbox the machine cannot make", () => {
  it("refuses codingTools with TP_ERR_SANDBOX_UNAVAILABLE naming the cause and the fix, where PATH has no bwrap", () => {
    const path = process.env.PATH;
    // The probe is cached per PATH: another PATH probes again.
    process.env.PATH = join(base, "no-bwrap-here");
    let thrown: unknown;
    try {
      codingTools({ workspace: base, tools: ["bash"], sandbox: "bwrap" });
    } catch (error) {
      thrown = error;
    } finally {
      process.env.PATH = path;
    }
    expect(thrown).toBeInstanceOf(ToolpoolError);
    expect((thrown as ToolpoolError).code).toBe("TP_ERR_SANDBOX_UNAVAILABLE");
    const cause = process.platform === "linux" ? "bwrap (bubblewrap) is not on PATH" : "bubblewrap runs on Linux only";
    expect((thrown as Error).message).toContain(cause);
    expect((thrown as Error).message).toMatch(/To fix: .*(apt-get install bubblewrap|sandbox: "none")/);
    expect((thrown as Error).message).toContain("Nothing runs unsandboxed in its place");
  });
});
