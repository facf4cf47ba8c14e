import { spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import { mkdirSync, rmSync } from "node:fs";
import { getPriority, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { codingTools, createRuntime, supportsPi16, type Runtime } from "toolpool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { warnSkippedPi16 } from "./support/pi16.js";
import { markedProcesses, runningAfterWait, sleepers } from "./support/processes.js";
import { textOf, until } from "./support/helpers.js";

warnSkippedPi16("test/bash-process-tree.test.ts");

const workspace = join(tmpdir(), `toolpool-bash-tree-${process.pid}`);

/**
 * The processes of this test process's bash calls that are still alive,
 * read straight from /proc: every process of a call carries the call's
 * marker in its environment. Zombies (exited, not yet reaped) have none.
 */
function leftovers(): number[] {
  const needle = Buffer.from(`TOOLPOOL_BASH_CALL=${process.pid}:`);
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const environ = readFileSync(`/proc/${name}/environ`);
      if (environ.includes(needle)) found.push(Number(name));
    } catch {}
  }
  return found;
}

const bash = (id: string, command: string, timeout?: number) => ({
  role: "assistant" as const,
  content: [{ type: "toolCall" as const, id, name: "bash", arguments: timeout === undefined ? { command } : { command, timeout } }],
  stopReason: "toolUse" as const,
});

describe.skipIf(!supportsPi16() || process.platform !== "linux")("bash calls end their whole process tree (pi 1.6)", () => {
  let runtime: Runtime;
  const deadlineMs = 1_000;
  const graceMs = 500;
  beforeAll(() => {
    mkdirSync(workspace, { recursive: true });
    runtime = createRuntime({
      pi: "1.6",
      tools: codingTools({ workspace, tools: ["bash"], bash: { timeoutMs: deadlineMs, maxTimeoutMs: 3_000, graceMs } }),
      pool: { maxThreads: 2 },
    });
  });
  afterAll(async () => {
    await runtime.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  const escapes: [string, string][] = [
    ["a disowned background job", "sleep 1000 & disown; echo started; sleep 1000"],
    ["a child that setsid's out of the group", "setsid sleep 1000 & echo started; sleep 1000"],
    ["a shell and child that ignore SIGTERM", "trap '' TERM; sleep 1000 & echo started; sleep 1000"],
    ["double forks, 200 of them", "for i in $(seq 1 200); do ( setsid sleep 1000 & ); done; echo started; sleep 1000"],
    ["a fork loop", "while :; do sleep 1000 & sleep 0.01; done"],
  ];
  for (const [name, command] of escapes) {
    it(`at the deadline: ${name}`, async () => {
      const started = Date.now();
      const { messages } = await runtime.executeToolCalls(bash(name, command));
      const elapsed = Date.now() - started;
      expect(messages[0]!.isError).toBe(true);
      // pi's own timeout text, with the output so far, and the runtime's default named as what ended it.
      expect(textOf(messages[0]!)).toMatch(/Command timed out after 1 seconds$/);
      expect(messages[0]!.details).toEqual({ code: "TP_ERR_TIMEOUT", deadline: "default", timeoutMs: deadlineMs });
      expect(leftovers()).toEqual([]);
      // Ended, not hung: far below the 1,000 s the command asks for, whatever the machine's load.
      expect(elapsed).toBeLessThan(60_000);
    }, 120_000);
  }

  it("at the deadline and at the call's end: a group member that dropped the marker and ignores SIGTERM", async () => {
    try {
      // The shell and its marked sleep die of the SIGTERM; the unmarked one ignores it, found by its group alone.
      const atDeadline = await runtime.executeToolCalls(bash("unmarked", "(trap '' TERM; exec env -i sleep 1000.25) & echo started; sleep 1000"));
      expect(textOf(atDeadline.messages[0]!)).toBe("started\n\n\nCommand timed out after 1 seconds");
      // Found by its group alone, it is sent SIGKILL with the group, which the kernel carries out when it next runs it.
      await until(() => sleepers("1000.25").length === 0, "the unmarked sleeper killed at the deadline", { limitMs: 10_000 });
      const atEnd = await runtime.executeToolCalls(bash("unmarked-end", "(trap '' TERM; exec env -i sleep 1000.5) & echo done"));
      expect(atEnd.messages[0]).toMatchObject({ isError: false, content: [{ type: "text", text: "done\n" }] });
      await until(() => sleepers("1000.5").length === 0, "the unmarked sleeper killed at the call's end", { limitMs: 10_000 });
    } finally {
      for (const pid of [...sleepers("1000.25"), ...sleepers("1000.5")]) process.kill(pid, "SIGKILL");
    }
  }, 120_000);

  it("at the call's own timeout, and at the cap for a timeout past it", async () => {
    const own = await runtime.executeToolCalls(bash("own", "setsid sleep 1000 & sleep 1000", 2));
    expect(textOf(own.messages[0]!)).toBe("Command timed out after 2 seconds");
    expect(own.messages[0]!.details).toEqual({});
    const capped = await runtime.executeToolCalls(bash("capped", "setsid sleep 1000 & sleep 1000", 100));
    expect(textOf(capped.messages[0]!)).toBe("Command timed out after 3 seconds");
    expect(capped.messages[0]!.details).toEqual({ code: "TP_ERR_TIMEOUT", deadline: "cap", timeoutMs: 3_000 });
    expect(leftovers()).toEqual([]);
  }, 120_000);

  it("on an abort", async () => {
    const controller = new AbortController();
    const running = runtime.executeToolCalls(bash("aborted", "setsid sleep 1000 & trap '' TERM; echo started; sleep 1000"), {
      signal: controller.signal,
      emit: (event) => {
        // Abort once the command has written its first line.
        if (event.type === "tool_execution_update" && JSON.stringify(event.partialResult).includes("started")) controller.abort();
      },
    });
    const { messages } = await running;
    expect(messages[0]!.isError).toBe(true);
    expect(textOf(messages[0]!)).toMatch(/started\n*\n*Command aborted$/);
    expect(leftovers()).toEqual([]);
  }, 120_000);

  it("when the call ends by itself, its background processes end with it", async () => {
    const { messages } = await runtime.executeToolCalls(bash("bg", "sleep 1000 & disown; setsid sleep 1000 & ( nohup sleep 1000 & ); echo done"));
    expect(messages[0]).toMatchObject({ isError: false, content: [{ type: "text", text: "done\n" }] });
    expect(leftovers()).toEqual([]);
  }, 120_000);
});

describe.skipIf(!supportsPi16() || process.platform !== "linux")("bash with keepBackground (pi 1.6)", () => {
  it("keeps a call's background processes until the runtime closes, then ends them", async () => {
    mkdirSync(workspace, { recursive: true });
    const runtime = createRuntime({ pi: "1.6", tools: codingTools({ workspace, tools: ["bash"], bash: { keepBackground: true, graceMs: 200 } }) });
    const { messages } = await runtime.executeToolCalls(bash("server", "setsid sleep 1000 & echo up"));
    expect(textOf(messages[0]!)).toBe("up\n");
    expect(leftovers()).toHaveLength(1);
    await runtime.close();
    expect(leftovers()).toEqual([]);
  }, 120_000);

  it("ends the processes of a call whose thread the pool terminates (a forced close)", async () => {
    mkdirSync(workspace, { recursive: true });
    const runtime = createRuntime({ pi: "1.6", tools: codingTools({ workspace, tools: ["bash"], bash: { keepBackground: true } }) });
    let isStarted!: () => void;
    const started = new Promise<void>((resolve) => (isStarted = resolve));
    const running = runtime.executeToolCalls(bash("held", "setsid sleep 1000 & echo started; sleep 1000"), {
      emit: (event) => {
        if (event.type === "tool_execution_update" && JSON.stringify(event.partialResult).includes("started")) isStarted();
      },
    });
    await started;
    // The shell and its background sleep; the sleep may be a moment behind the line the shell wrote.
    await until(
      () => leftovers().length >= 2,
      () => `two processes of the call (found ${leftovers().length})`,
    );
    await runtime.close({ force: true });
    const { messages } = await running;
    expect(messages[0]!.details).toMatchObject({ code: "TP_ERR_CLOSED" });
    expect(leftovers()).toEqual([]);
  }, 120_000);
});

describe.skipIf(!supportsPi16() || process.platform !== "linux")("where bash's shell is started from (pi 1.6)", () => {
  /**
   * What the shell of a bash call sees of its parent (process number, command
   * line, and the parent's own parent), with `TOOLPOOL_SPAWN_HELPER` as given
   * while the runtime's threads start.
   */
  async function shellParent(helperSetting: string | undefined): Promise<{ pid: number; commandLine: string; parent: number }> {
    mkdirSync(workspace, { recursive: true });
    const before = process.env.TOOLPOOL_SPAWN_HELPER;
    if (helperSetting === undefined) delete process.env.TOOLPOOL_SPAWN_HELPER;
    else process.env.TOOLPOOL_SPAWN_HELPER = helperSetting;
    const runtime = createRuntime({ pi: "1.6", tools: codingTools({ workspace, tools: ["bash"] }), pool: { maxThreads: 1, minThreads: 1 } });
    try {
      const command = "echo $PPID; tr '\\0' ' ' < /proc/$PPID/cmdline; echo; cut -d ' ' -f 4 /proc/$PPID/stat";
      const { messages } = await runtime.executeToolCalls(bash("parent", command));
      const [pid, commandLine, parent] = textOf(messages[0]!).trim().split("\n");
      return { pid: Number(pid), commandLine: commandLine!, parent: Number(parent) };
    } finally {
      await runtime.close();
      if (before === undefined) delete process.env.TOOLPOOL_SPAWN_HELPER;
      else process.env.TOOLPOOL_SPAWN_HELPER = before;
    }
  }

  it("starts it from the pool thread's spawn helper, a process beside the pool's (not its child)", async () => {
    const parent = await shellParent(undefined);
    expect(parent.pid).not.toBe(process.pid);
    expect(parent.commandLine).toContain("spawn-helper.js");
    expect(parent.parent).not.toBe(process.pid);
  }, 120_000);

  it("starts it from the thread itself with TOOLPOOL_SPAWN_HELPER=0", async () => {
    const parent = await shellParent("0");
    expect(parent.pid).toBe(process.pid);
  }, 120_000);
});

describe.skipIf(!supportsPi16() || process.platform !== "linux")("the priority of a pool thread's processes (pi 1.6)", () => {
  it("is 5 nice levels below this process's, however many of pi's tools the thread loaded", async () => {
    mkdirSync(workspace, { recursive: true });
    const runtime = createRuntime({ pi: "1.6", tools: codingTools({ workspace, tools: ["bash", "ls", "grep"], ioThreads: 1 }) });
    try {
      // ls and grep load their own module instances on the one io thread before bash loads its.
      for (const name of ["ls", "grep"]) {
        const args = name === "ls" ? { path: "." } : { pattern: "nothing-here", path: "." };
        const { messages } = await runtime.executeToolCalls({ role: "assistant", content: [{ type: "toolCall", id: name, name, arguments: args }] });
        expect(messages[0]!.isError, textOf(messages[0]!)).toBeFalsy();
      }
      const { messages } = await runtime.executeToolCalls(bash("nice", "ps -o ni= -p $$"));
      expect(Number(textOf(messages[0]!).trim())).toBe(Math.min(19, getPriority() + 5));
    } finally {
      await runtime.close();
    }
  }, 120_000);
});

describe.skipIf(!supportsPi16() || process.platform !== "linux")("bash calls of a host that dies by a signal (pi 1.6)", () => {
  const hostScript = fileURLToPath(new URL("./fixtures/coding/bash-host.mjs", import.meta.url));
  for (const signal of ["SIGKILL", "SIGTERM"] as const) {
    it(`end, setsid and double-forked processes included, once the host is killed with ${signal} (no handler)`, async () => {
      mkdirSync(workspace, { recursive: true });
      const host = spawn(process.execPath, [hostScript, workspace], { stdio: ["ignore", "pipe", "inherit"] });
      const exited = once(host, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
      let pids: number[] = [];
      try {
        const line = (await Promise.race([once(createInterface({ input: host.stdout }), "line"), exited.then(() => [undefined])]))[0] as
          | string
          | undefined;
        expect(line, "the host's report that its call started").toBeDefined();
        const output = (JSON.parse(line!) as { output: string }).output;
        const reported = ["setsid", "double"].map((name) => Number(new RegExp(`${name} (\\d+)`).exec(output)?.[1]));
        // The plain sleep in the foreground starts a moment after the line that says so.
        const prefix = `${host.pid}:`;
        const sleeps = () => sleepers("120").filter((pid) => markedProcesses(prefix).includes(pid));
        await until(
          () => sleeps().length >= 3,
          () => `the call's three sleeps (found ${sleeps().length})`,
        );
        pids = markedProcesses(prefix);
        expect(pids).toEqual(expect.arrayContaining(reported));
        host.kill(signal);
        expect((await exited)[1]).toBe(signal);
        expect(await runningAfterWait(pids, "the host's processes")).toEqual([]);
      } finally {
        host.kill("SIGKILL");
        for (const pid of pids) {
          try {
            process.kill(pid, "SIGKILL");
          } catch {}
        }
      }
    }, 120_000);
  }
});
