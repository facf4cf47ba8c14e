// The spawn helper (remote-spawn.ts, spawn-helper.ts): children started by a
// process of its own behave as Node's own children do, for the calls pi's
// bash, grep and find make; when the helper fails, no child is lost or hung.
import { spawn as nodeSpawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

import { afterEach, describe, expect, it } from "vitest";

import { until } from "./support/helpers.js";
import { isRunning, markedProcesses, runningAfterWait, sleepers } from "./support/processes.js";
import { builtCodingToolsUrl, RemoteChild, routedSpawn, SpawnHelper } from "./support/built.js";

type AnyChild = ReturnType<typeof nodeSpawn> | RemoteChild;

interface Observed {
  events: string[];
  stdout: string;
  stderr: string;
  exitCode: number | null;
  signalCode: NodeJS.Signals | null;
  killed: boolean;
}

/** Everything a caller can see of `child` until it closes, in order. */
function observe(child: AnyChild, stdin?: string): Promise<Observed> {
  const events: string[] = [];
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (data: Buffer) => (stdout += data));
  child.stderr?.on("data", (data: Buffer) => (stderr += data));
  child.on("spawn", () => events.push("spawn"));
  child.on("error", (error: NodeJS.ErrnoException) => events.push(`error ${error.code} ${error.message}`));
  child.on("exit", (code, signal) => events.push(`exit ${code} ${signal}`));
  if (stdin !== undefined) child.stdin?.end(stdin);
  return new Promise((resolve) =>
    child.on("close", (code, signal) => {
      events.push(`close ${code} ${signal}`);
      resolve({ events, stdout, stderr, exitCode: child.exitCode, signalCode: child.signalCode, killed: child.killed });
    }),
  );
}

const helpers: SpawnHelper[] = [];
afterEach(() => {
  for (const helper of helpers.splice(0)) helper.close();
});

function newHelper(url?: URL): { helper: SpawnHelper; spawn: typeof nodeSpawn } {
  const helper = url === undefined ? new SpawnHelper(nodeSpawn) : new SpawnHelper(nodeSpawn, url);
  helpers.push(helper);
  return { helper, spawn: routedSpawn(nodeSpawn, helper) };
}

/** The parent process number of `pid`, from /proc. */
const parentOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[1]);

describe.skipIf(process.platform !== "linux")("spawn helper", () => {
  it.each([
    ["exit code, stdout and stderr", "sh", ["-c", "echo out; echo err >&2; exit 3"], {}, undefined],
    ["a command that is not there", "toolpool-no-such-command", [], {}, undefined],
    ["stdin piped in", "sh", ["-c", "cat; echo"], { stdio: ["pipe", "pipe", "pipe"] }, "line 1\nline 2"],
    ["stdio ignored", "sh", ["-c", "echo unseen"], { stdio: "ignore" }, undefined],
    ["a child killed by a signal", "sh", ["-c", "kill -9 $$"], {}, undefined],
    [
      "a working directory and an environment",
      "sh",
      ["-c", 'pwd; echo "$TOOLPOOL_PROBE"'],
      { cwd: "/tmp", env: { TOOLPOOL_PROBE: "here", PATH: process.env.PATH } },
      undefined,
    ],
    [
      "an environment value that is not a string",
      "sh",
      ["-c", 'echo "$TOOLPOOL_NUMBER"'],
      { env: { TOOLPOOL_NUMBER: 5, PATH: process.env.PATH } },
      undefined,
    ],
    ["a process group of its own", "sh", ["-c", "ps -o pgid= -p $$ | tr -d ' '; echo $$"], { detached: true }, undefined],
  ] as const)("gives what Node's spawn gives: %s", async (_name, file, args, options, stdin) => {
    const { spawn } = newHelper();
    const native = await observe(nodeSpawn(file, [...args], options as never), stdin);
    const remote = await observe(spawn(file, [...args], options as never), stdin);
    if (_name === "a process group of its own") {
      // Each child leads a group of its own: the group is its own pid, whichever started it.
      for (const seen of [native, remote]) {
        const [group, pid] = seen.stdout.trim().split("\n");
        expect(group).toBe(pid);
      }
      expect(remote.events).toEqual(native.events);
      return;
    }
    expect(remote).toEqual(native);
  });

  it("starts its children from the helper, not from this process, and the helper is not this process's child", async () => {
    const { helper, spawn } = newHelper();
    const seen = await observe(spawn("sh", ["-c", "echo $PPID"], {}));
    expect(helper.helperPid).toBeDefined();
    expect(Number(seen.stdout.trim())).toBe(helper.helperPid);
    // Started through a shell that exited: not this process's child, so never a zombie of this process.
    expect(parentOf(helper.helperPid!)).not.toBe(process.pid);
  });

  it("leaves to Node's spawn what it does not make (a shell, an IPC channel, a timeout)", () => {
    const { helper, spawn } = newHelper();
    for (const [args, options] of [
      [["-c", "true"], { shell: true }],
      [["-c", "true"], { stdio: ["pipe", "pipe", "pipe", "ipc"] }],
      [["-c", "true"], { timeout: 1000 }],
      [["-c", "true"], { stdio: ["inherit", "pipe", "pipe"] }],
    ] as const) {
      const child = spawn("sh", [...args], options as never);
      expect(child.constructor.name).toBe("ChildProcess");
      child.kill();
    }
    expect(helper.helperPid).toBeUndefined();
  });

  it("relays a large output whole, with the helper's flow control", async () => {
    const { spawn } = newHelper();
    const child = spawn("sh", ["-c", "head -c 6000000 /dev/zero | tr '\\0' x"], {});
    let bytes = 0;
    let chunks = 0;
    child.stdout!.on("data", (data: Buffer) => {
      bytes += data.length;
      chunks += 1;
      // A slow reader: the helper must hold the output back rather than lose it.
      if (chunks % 50 === 0) {
        child.stdout!.pause();
        setTimeout(() => child.stdout!.resume(), 5);
      }
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", (exitCode: number | null) => resolve(exitCode)));
    expect(code).toBe(0);
    expect(bytes).toBe(6_000_000);
  });

  it("sends a signal asked for before the child started once it has", async () => {
    const { spawn } = newHelper();
    const child = spawn("sleep", ["30"], {});
    expect(child.pid).toBeUndefined();
    expect(child.kill("SIGTERM")).toBe(true);
    const seen = await observe(child);
    expect(seen.events.at(-1)).toBe("close null SIGTERM");
    expect(seen.killed).toBe(true);
  });

  it("closes a child whose output a background process holds once its reader lets go (as pi's bash does)", async () => {
    const { spawn } = newHelper();
    const child = spawn("sh", ["-c", "sleep 30 & echo $!; echo up"], { detached: true });
    let stdout = "";
    child.stdout!.on("data", (data: Buffer) => (stdout += data));
    await new Promise((resolve) => child.once("exit", resolve));
    // The shell exited; `sleep` keeps the pipe open. pi's wait destroys the streams after a grace.
    child.stdout!.destroy();
    child.stderr!.destroy();
    await new Promise((resolve) => child.once("close", resolve));
    const sleeper = Number(stdout.split("\n")[0]);
    process.kill(sleeper, "SIGKILL");
    expect(stdout).toContain("up");
  });

  it("lets a caller that awaits the start hear the exit, even when every report came at once", async () => {
    const child = new RemoteChild(
      { kind: "spawn", id: 1, file: "sh", args: [], cwd: "/", env: {}, detached: false, stdio: ["ignore", "pipe", "pipe"] },
      () => {},
    );
    const started = new Promise((resolve) => child.once("spawn", resolve));
    child.receive({ kind: "spawned", id: 1, pid: 999_999_999 });
    child.receive({ kind: "data", id: 1, stream: "stdout", data: Buffer.from("hi") });
    child.receive({ kind: "end", id: 1, stream: "stdout" });
    child.receive({ kind: "end", id: 1, stream: "stderr" });
    child.receive({ kind: "exit", id: 1, code: 0, signal: null });
    child.receive({ kind: "close", id: 1, code: 0, signal: null });
    await started;
    // Listening only now, after the start was awaited, as toolpool's bash does.
    const seen = await observe(child);
    expect(seen).toMatchObject({ events: ["exit 0 null", "close 0 null"], stdout: "hi", exitCode: 0 });
  });

  it("kills the children it had started when the helper dies, and starts again for the next child", async () => {
    const { helper, spawn } = newHelper();
    const child = spawn("sleep", ["30"], {});
    await new Promise((resolve) => child.once("spawn", resolve));
    const first = helper.helperPid!;
    const closed = observe(child);
    process.kill(first, "SIGKILL");
    const seen = await closed;
    expect(seen.events.slice(-2)).toEqual(["exit null SIGKILL", "close null SIGKILL"]);
    // The sleeper was killed (a zombie at most, until whoever adopted it reaps it).
    await until(
      () => {
        try {
          return readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1]!.startsWith("Z");
        } catch {
          return true;
        }
      },
      () => `the orphaned sleep ${child.pid} ended`,
    );
    const next = await observe(spawn("echo", ["again"], {}));
    expect(next.stdout).toBe("again\n");
    expect(helper.helperPid).not.toBe(first);
    expect(helper.isEnabled).toBe(true);
  });

  it("starts its children itself when the helper cannot start, and gives the helper up after three failures", async () => {
    const { helper, spawn } = newHelper(new URL("./fixtures/coding/failing-helper.mjs", import.meta.url));
    for (let attempt = 1; attempt <= 3; attempt++) {
      const seen = await observe(spawn("sh", ["-c", "echo $PPID"], {}));
      // The helper died before starting the child: the thread started it, as Node's spawn would.
      expect(seen.events).toEqual(["spawn", "exit 0 null", "close 0 null"]);
      expect(Number(seen.stdout.trim())).toBe(process.pid);
    }
    expect(helper.isEnabled).toBe(false);
    const after = spawn("sh", ["-c", "true"], {});
    expect(after.constructor.name).toBe("ChildProcess");
    await new Promise((resolve) => after.once("close", resolve));
  });

  it("keeps a child's real exit when the helper dies within the turn its reports wait", () => {
    const child = new RemoteChild(
      { kind: "spawn", id: 1, file: "sh", args: [], cwd: "/", env: {}, detached: false, stdio: ["ignore", "ignore", "ignore"] },
      () => {},
    );
    const events: string[] = [];
    child.on("spawn", () => events.push("spawn"));
    child.on("exit", (code, signal) => events.push(`exit ${code} ${signal}`));
    child.on("close", (code, signal) => events.push(`close ${code} ${signal}`));
    child.receive({ kind: "spawned", id: 1, pid: 999_999_999 });
    child.receive({ kind: "exit", id: 1, code: 3, signal: null });
    // The helper died before the turn passed (and before it sent the close).
    child.abandon("gone");
    expect(events).toEqual(["spawn", "exit 3 null", "close 3 null"]);
  });

  it("fails a child whose start a helper that was reading requests never reported, rather than start it twice", async () => {
    const { helper, spawn } = newHelper(new URL("./fixtures/coding/ready-then-exit-helper.mjs", import.meta.url));
    const seen = await observe(spawn("sh", ["-c", "echo ran"], {}));
    expect(seen.events).toEqual([expect.stringMatching(/^error undefined spawn sh: the spawn helper exited/), "close null null"]);
    expect(seen.stdout).toBe("");
    expect(helper.isEnabled).toBe(true);
  });

  it("replays a child's input to the child the thread starts itself", async () => {
    const { spawn } = newHelper(new URL("./fixtures/coding/failing-helper.mjs", import.meta.url));
    const seen = await observe(spawn("cat", [], { stdio: ["pipe", "pipe", "pipe"] }), "hello\n");
    expect(seen).toMatchObject({ stdout: "hello\n", exitCode: 0 });
  });

  it("ends a child that Node's spawn refuses in the helper (an argument too long) with an error and a close", async () => {
    const { spawn } = newHelper();
    const long = "x".repeat(256 * 1024);
    expect(() => nodeSpawn("echo", [long]).kill()).toThrow(/E2BIG/);
    const seen = await observe(spawn("echo", [long], {}));
    expect(seen.events).toEqual([expect.stringMatching(/^error E2BIG/), expect.stringMatching(/^close /)]);
  });

  it("runs the helper in a process group of its own, out of reach of a signal to this process's group", async () => {
    const { helper, spawn } = newHelper();
    await observe(spawn("true", [], {}));
    const groupOf = (pid: number | string) => Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[2]);
    expect(groupOf(helper.helperPid!)).not.toBe(groupOf("self"));
  });

  it("holds a child's output back in the helper while the thread's reader is full", async () => {
    const { spawn } = newHelper();
    const child = spawn("head", ["-c", "40000000", "/dev/zero"], {});
    child.stdout!.pause();
    await new Promise((resolve) => child.once("spawn", resolve));
    // The child stops: asleep (reading /dev/zero never blocks, so it waits
    // in a write) with nothing written since the last look, most of its
    // output unwritten. Only a helper that stopped reading leaves it there:
    // one that read on would let it write all and exit.
    const { pid } = child;
    const written = () => Number(/^wchar: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, "utf8"))?.[1]);
    const isAsleep = () => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.startsWith("S");
    let lastWritten = -1;
    await until(
      () => {
        if (!isRunning(pid!)) throw new Error("the child wrote its whole output and ended: nothing held it back");
        const now = written();
        const isStuck = isAsleep() && now === lastWritten;
        lastWritten = now;
        return isStuck;
      },
      () => `the child stuck in a write (written: ${lastWritten} bytes)`,
    );
    expect(lastWritten).toBeLessThan(40_000_000);
    expect(child.stdout!.readableLength).toBeLessThan(4 << 20);
    let bytes = 0;
    child.stdout!.on("data", (data: Buffer) => (bytes += data.length));
    child.stdout!.resume();
    await new Promise((resolve) => child.once("close", resolve));
    expect(bytes).toBe(40_000_000);
  });

  it("holds back only the output whose reader is full: the other flows on", async () => {
    const { spawn } = newHelper();
    // stderr is never read here, and holds more than its stream's buffer; stdout is read.
    const child = spawn("sh", ["-c", "head -c 200000 /dev/zero >&2; head -c 5000000 /dev/zero"], {});
    let bytes = 0;
    child.stdout!.on("data", (data: Buffer) => (bytes += data.length));
    const code = await new Promise<number | null>((resolve) => child.on("close", (exitCode: number | null) => resolve(exitCode)));
    expect(code).toBe(0);
    expect(bytes).toBe(5_000_000);
  });

  it("refuses an unknown signal as Node's kill does, and the helper serves its other children on", async () => {
    const { spawn } = newHelper();
    const native = nodeSpawn("sleep", ["30"]);
    const remote = spawn("sleep", ["30"], {});
    const sibling = spawn("sh", ["-c", "sleep 0.3; echo alive"], {});
    const siblingSeen = observe(sibling);
    await new Promise((resolve) => remote.once("spawn", resolve));
    const codeOf = (kill: () => unknown) => {
      try {
        kill();
        return "no error";
      } catch (error) {
        return (error as NodeJS.ErrnoException).code;
      }
    };
    expect(codeOf(() => remote.kill("SIGFOO" as NodeJS.Signals))).toBe(codeOf(() => native.kill("SIGFOO" as NodeJS.Signals)));
    expect(codeOf(() => remote.kill("SIGFOO" as NodeJS.Signals))).toBe("ERR_UNKNOWN_SIGNAL");
    expect(await siblingSeen).toMatchObject({ stdout: "alive\n", exitCode: 0 });
    native.kill("SIGKILL");
    remote.kill("SIGKILL");
  });

  it("ends the children in the helper's group (ripgrep, fd) when the thread that started them ends", async () => {
    const worker = new Worker(new URL("./fixtures/coding/spawn-thread.mjs", import.meta.url), {
      workerData: { remoteSpawnUrl: new URL("remote-spawn.js", builtCodingToolsUrl).href },
    });
    const [[pid]] = (await once(worker, "message")) as [[number, number]];
    expect(readFileSync(`/proc/${pid}/cmdline`, "utf8")).toContain("sleep");
    await worker.terminate();
    await until(
      () => {
        try {
          return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.startsWith("Z");
        } catch {
          return true;
        }
      },
      () => `the sleep ${pid} of the terminated thread ended`,
    );
  });

  it.each(["SIGKILL", "SIGTERM"] as const)(
    "ends every marked process of its host's bash calls once the host is killed with %s, setsid'd and double-forked ones included, and no other's",
    async (signal) => {
      const host = nodeSpawn(
        process.execPath,
        [fileURLToPath(new URL("./fixtures/coding/spawn-host.mjs", import.meta.url)), new URL("remote-spawn.js", builtCodingToolsUrl).href],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      const exited = once(host, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
      const sleeps = () => sleepers("1000").filter((pid) => markedProcesses(`${host.pid}:`).includes(pid));
      let pids: number[] = [];
      const others: number[] = [];
      try {
        await once(host.stdout, "data");
        await until(
          () => sleeps().length >= 3,
          () => `the shell's three sleeps (found ${sleeps().length})`,
        );
        pids = sleeps();
        // As a process of another PID namespace's call would be marked, its host there numbered as this one.
        const foreign = nodeSpawn("sleep", ["1000"], { stdio: "ignore", env: { ...process.env, TOOLPOOL_BASH_CALL: `${host.pid}:1:1:1` } });
        await once(foreign, "spawn");
        others.push(foreign.pid!);
        host.kill(signal);
        expect((await exited)[1]).toBe(signal);
        expect(await runningAfterWait(pids, "the host's processes")).toEqual([]);
        expect(others.filter(isRunning)).toEqual(others);
      } finally {
        host.kill("SIGKILL");
        for (const pid of [...pids, ...others]) if (isRunning(pid)) process.kill(pid, "SIGKILL");
      }
    },
    60_000,
  );

  it("leaves a marked group of its own running when only the thread that started it ends (its host runs on)", async () => {
    const worker = new Worker(new URL("./fixtures/coding/spawn-thread.mjs", import.meta.url), {
      workerData: { remoteSpawnUrl: new URL("remote-spawn.js", builtCodingToolsUrl).href, marker: `${process.pid}:0:1` },
    });
    const [[pid, helperPid]] = (await once(worker, "message")) as [[number, number]];
    try {
      await worker.terminate();
      // The helper looks at its host for a while before it leaves: once it is gone, it has decided.
      await until(
        () => !isRunning(helperPid),
        () => `the spawn helper ${helperPid} exited`,
      );
      expect(isRunning(pid)).toBe(true);
    } finally {
      process.kill(pid, "SIGKILL");
    }
  });
});
