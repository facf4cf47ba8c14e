/**
 * Escapes from the bwrap sandbox, each tried through real bash calls (and
 * grep's ripgrep) of a sandboxed runtime, each a test that fails when the
 * escape works; where it is cheap, the same command on an unsandboxed
 * runtime shows that the escape is real there. The sandbox's base folder is
 * bound read-only (`bind`), so that what stays unseen inside it (other
 * sessions' workspaces, a folder given to `hide`) is hidden by the sandbox's
 * own rules, not only by the default hiding of the temporary folder.
 */
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { type CodingToolName, codingTools, createRuntime, supportsPi16, type Runtime } from "toolpool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { warnSkippedPi16 } from "./support/pi16.js";
import { runningAfterWait } from "./support/processes.js";
import { until } from "./support/helpers.js";
import { which } from "./support/coding-trees.js";
import { bash, hasBwrap, killAll, processesWith, run } from "./support/sandbox-calls.js";

warnSkippedPi16("test/sandbox-escape.test.ts");

/** Inherited by the runtimes' threads and spawn helpers: the sandbox must leave both behind. */
const secretValue = `secret-${process.pid}-${Date.now()}`;
process.env.SANDBOX_ESCAPE_SECRET = secretValue;
process.env.TOOLPOOL_TOKEN = secretValue;

const base = mkdtempSync(join(tmpdir(), "toolpool-sandbox-escape-"));
const root = join(base, "sessions");
const outside = join(base, "outside");
const home = join(base, "home");
const secretFile = join(base, "secret-file.txt");
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe.skipIf(!supportsPi16() || !hasBwrap)("the bwrap sandbox against escapes (pi 1.6)", () => {
  let sandboxed: Runtime;
  let plain: Runtime;
  let server: Server;
  let port: number;
  let connections = 0;
  const isRoot = process.getuid?.() === 0;

  beforeAll(async () => {
    for (const folder of [root, outside, join(home, ".ssh")]) mkdirSync(folder, { recursive: true });
    writeFileSync(join(home, ".ssh", "id_ed25519"), `${secretValue}\n`);
    writeFileSync(secretFile, `${secretValue}\n`);
    chmodSync(base, 0o755);
    const common = {
      workspace: { root, perSession: true as const },
      tools: ["bash", "read", "write", "edit", "ls"] satisfies CodingToolName[],
      bash: { graceMs: 200 },
      ioThreads: 1,
    };
    sandboxed = createRuntime({
      pi: "1.6",
      tools: codingTools({ ...common, sandbox: { kind: "bwrap", bind: [{ path: base }], hide: [home, secretFile] } }),
      pool: { maxThreads: 1 },
    });
    plain = createRuntime({ pi: "1.6", tools: codingTools(common), pool: { maxThreads: 1 } });
    server = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    port = (server.address() as { port: number }).port;
  });

  afterAll(async () => {
    await Promise.all([sandboxed?.close(), plain?.close()]);
    server?.close();
  });

  it("cannot write outside the workspace by an absolute path", async () => {
    const target = join(outside, "absolute.txt");
    const inside = await bash(sandboxed, `echo escaped > ${target}`);
    expect(inside.text).toMatch(/Read-only file system/);
    expect(existsSync(target)).toBe(false);
    await bash(plain, `echo escaped > ${target}`);
    expect(readFileSync(target, "utf8")).toBe("escaped\n");
  });

  it("cannot write outside the workspace through ..", async () => {
    const target = join(outside, "dots.txt");
    const inside = await bash(sandboxed, "echo escaped > ../../outside/dots.txt");
    expect(inside.isError).toBe(true);
    expect(existsSync(target)).toBe(false);
    await bash(plain, "echo escaped > ../../outside/dots.txt", "control");
    expect(readFileSync(target, "utf8")).toBe("escaped\n");
  });

  it("cannot write through a symlink it makes to a file outside, and the host file keeps its content", async () => {
    const target = join(outside, "linked.txt");
    writeFileSync(target, "original\n");
    const inside = await bash(sandboxed, `ln -sf ${target} out-link && echo escaped > out-link; cat out-link`);
    expect(inside.text).toMatch(/Read-only file system/);
    expect(readFileSync(target, "utf8")).toBe("original\n");
    await bash(plain, `ln -sf ${target} out-link && echo escaped > out-link`, "control");
    expect(readFileSync(target, "utf8")).toBe("escaped\n");
  });

  it("refuses read, write, edit and ls of paths outside, through the link it made and through ..", async () => {
    const target = join(outside, "confined.txt");
    writeFileSync(target, "original\n");
    await bash(sandboxed, `ln -sf ${target} conf-link; ln -sfn ${outside} dir-link`, "confined");
    const calls: [string, Record<string, unknown>][] = [
      ["read", { path: "conf-link" }],
      ["write", { path: "conf-link", content: "escaped\n" }],
      ["edit", { path: "conf-link", edits: [{ oldText: "original", newText: "escaped" }] }],
      ["write", { path: "../../outside/confined.txt", content: "escaped\n" }],
      ["read", { path: target }],
      ["ls", { path: "dir-link" }],
    ];
    for (const [name, args] of calls) {
      const outcome = await run(sandboxed, name, args, "confined");
      expect(outcome, `${name} ${JSON.stringify(args)}`).toMatchObject({ isError: true });
      expect(outcome.text).toMatch(/is outside the workspace/);
    }
    expect(readFileSync(target, "utf8")).toBe("original\n");
    // The workspace itself stays the tools' own.
    expect(await run(sandboxed, "write", { path: "inside.txt", content: "mine\n" }, "confined")).toMatchObject({ isError: false });
    expect(await bash(sandboxed, "cat inside.txt", "confined")).toEqual({ text: "mine\n", isError: false });
  });

  it("cannot read a secret in a hidden home folder or a hidden file, and sees /root and /home empty", async () => {
    const inside = await bash(
      sandboxed,
      `cat ${join(home, ".ssh", "id_ed25519")} ${secretFile}; for d in ${home} /root /home; do echo "$d $(ls -A $d | wc -l)"; done`,
    );
    expect(inside.text).not.toContain(secretValue);
    expect(inside.text).toContain(`${home} 0\n/root 0\n/home 0\n`);
    const control = await bash(plain, `cat ${join(home, ".ssh", "id_ed25519")} ${secretFile}`);
    expect(control.text).toBe(`${secretValue}\n${secretValue}\n`);
  });

  it("cannot read or list another session's workspace", async () => {
    expect(await bash(sandboxed, "echo bob-private > note.txt && cat note.txt", "bob")).toEqual({ text: "bob-private\n", isError: false });
    const inside = await bash(sandboxed, `cat ../bob/note.txt ${join(root, "bob", "note.txt")}; ls -A ..`);
    expect(inside.text).not.toContain("bob-private");
    expect(inside.text.split("\n")).not.toContain("bob");
    expect((await bash(plain, "cat ../bob/note.txt; ls -A ..", "control")).text).toMatch(/^bob-private\n[\s\S]*\bbob\n/);
  });

  it("cannot read another session's workspace that a workspace function gave, beside its own", async () => {
    const folders = join(base, "by-function");
    const runtime = createRuntime({
      pi: "1.6",
      tools: codingTools({
        workspace: (sessionKey) => {
          mkdirSync(join(folders, sessionKey ?? "none"), { recursive: true });
          return join(folders, sessionKey ?? "none");
        },
        tools: ["bash"],
        sandbox: { kind: "bwrap", bind: [{ path: base }] },
        ioThreads: 1,
      }),
    });
    try {
      expect(await bash(runtime, "echo carol-private > note.txt", "carol")).toMatchObject({ isError: false });
      const inside = await bash(runtime, "cat ../carol/note.txt; ls -A ..", "dave");
      expect(inside.text).not.toContain("carol-private");
      expect(inside.text.split("\n")).not.toContain("carol");
      expect(inside.text.split("\n")).toContain("dave");
      expect(readFileSync(join(folders, "carol", "note.txt"), "utf8")).toBe("carol-private\n");
    } finally {
      await runtime.close();
    }
  });

  it("cannot connect to a TCP port listening on the host's 127.0.0.1", async () => {
    const attempt = `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`;
    const inside = await bash(sandboxed, attempt);
    expect(inside.text).not.toContain("connected");
    // The control's connection comes after any the sandboxed call made: the server accepts in order.
    expect((await bash(plain, attempt)).text).toContain("connected");
    await until(() => connections >= 1, "the control's connection");
    expect(connections).toBe(1);
  });

  it("cannot signal or see the host's processes", async () => {
    const probe = `kill -0 ${process.pid} && echo signalled; cat /proc/${process.pid}/cmdline && echo seen; ls /proc | grep -c '^[0-9]'`;
    const inside = await bash(sandboxed, probe);
    expect(inside.text).not.toMatch(/signalled|seen/);
    // Its own PID namespace: the shell, bwrap's init and what the command runs, a handful.
    const count = Number(inside.text.trim().split("\n").at(-1));
    expect(count).toBeGreaterThan(0);
    expect(count).toBeLessThan(10);
    expect((await bash(plain, probe)).text).toMatch(/signalled\n[\s\S]*seen/);
  });

  it("leaves nothing alive after its deadline, a setsid + env -i + double-forked loop included", async () => {
    const command = (token: string) => `( setsid env -i /bin/sh -c ': ${token}; while :; do sleep 0.2; done' & ); echo started; sleep 100`;
    const token = `survivor-${process.pid}-sandboxed`;
    try {
      const inside = await bash(sandboxed, command(token), "alice", 1);
      expect(inside.text).toBe("started\n\n\nCommand timed out after 1 seconds");
      expect(await runningAfterWait(processesWith(token), "the sandboxed survivor")).toEqual([]);
    } finally {
      // Where the escape worked, the test leaves nothing behind.
      killAll(processesWith(token));
    }
    // Unsandboxed, the loop leaves both the call's group and its marker, and survives.
    const controlToken = `survivor-${process.pid}-plain`;
    try {
      expect((await bash(plain, command(controlToken), "alice", 1)).text).toMatch(/Command timed out after 1 seconds$/);
      await until(() => processesWith(controlToken).length > 0, "the unsandboxed survivor alive after the deadline");
    } finally {
      killAll(processesWith(controlToken));
    }
  }, 60_000);

  it("leaves nothing alive after an abort or a forced close, a setsid + env -i + double-forked loop included", async () => {
    const command = (token: string) => `( setsid env -i /bin/sh -c ': ${token}; while :; do sleep 0.2; done' & ); echo started; sleep 100`;
    const abortToken = `aborted-${process.pid}`;
    const closeToken = `closed-${process.pid}`;
    // A runtime of its own: a forced close ends it.
    const closing = createRuntime({
      pi: "1.6",
      tools: codingTools({
        workspace: { root, perSession: true },
        tools: ["bash"],
        sandbox: { kind: "bwrap", bind: [{ path: base }] },
        ioThreads: 1,
      }),
      pool: { maxThreads: 1 },
    });
    try {
      const controller = new AbortController();
      const aborted = sandboxed.executeToolCalls(
        {
          role: "assistant",
          content: [{ type: "toolCall", id: "abort-1", name: "bash", arguments: { command: command(abortToken) } }],
          stopReason: "toolUse",
        },
        { sessionKey: "alice", signal: controller.signal },
      );
      await until(() => processesWith(abortToken).length > 0, "the loop of the call to abort");
      const abortedPids = processesWith(abortToken);
      controller.abort();
      expect((await aborted).messages[0]!.isError).toBe(true);
      expect(await runningAfterWait(abortedPids, "the aborted call's loop")).toEqual([]);

      const closed = closing.executeToolCalls(
        {
          role: "assistant",
          content: [{ type: "toolCall", id: "close-1", name: "bash", arguments: { command: command(closeToken) } }],
          stopReason: "toolUse",
        },
        { sessionKey: "alice" },
      );
      await until(() => processesWith(closeToken).length > 0, "the loop of the call a forced close ends");
      const closedPids = processesWith(closeToken);
      await closing.close({ force: true });
      expect((await closed).messages[0]!.isError).toBe(true);
      expect(await runningAfterWait(closedPids, "the closed runtime's loop")).toEqual([]);
    } finally {
      await closing.close({ force: true });
      killAll([...processesWith(abortToken), ...processesWith(closeToken)]);
    }
  }, 60_000);

  it("leaves nothing alive once its host is killed with SIGKILL", async () => {
    const token = `orphan-${process.pid}`;
    // The host's own command line holds the token; its call's processes hold it followed by "-loop".
    const loop = `${token}-loop`;
    const hostScript = fileURLToPath(new URL("./fixtures/coding/sandbox-host.mjs", import.meta.url));
    const host = spawn(process.execPath, [hostScript, root, token], { stdio: ["ignore", "pipe", "inherit"] });
    const exited = once(host, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
    let pids: number[] = [];
    try {
      const line = (await Promise.race([once(createInterface({ input: host.stdout }), "line"), exited.then(() => [undefined])]))[0];
      expect(line, "the host's report that its call started").toBe("started");
      await until(() => processesWith(loop).length > 0, "the host's sandboxed loop");
      pids = processesWith(loop);
      host.kill("SIGKILL");
      expect((await exited)[1]).toBe("SIGKILL");
      expect(await runningAfterWait(pids, "the killed host's sandboxed loop")).toEqual([]);
      expect(processesWith(loop)).toEqual([]);
    } finally {
      host.kill("SIGKILL");
      killAll(processesWith(loop));
    }
  }, 60_000);

  it("cannot read an environment variable the runtime inherited", async () => {
    const probe = "env; cat /proc/1/environ /proc/$PPID/environ | tr '\\0' '\\n'";
    const inside = await bash(sandboxed, probe);
    expect(inside.text).toContain("TOOLPOOL_BASH_CALL=");
    expect(inside.text).not.toContain(secretValue);
    expect((await bash(plain, probe)).text).toContain(`SANDBOX_ESCAPE_SECRET=${secretValue}`);
  });

  it("holds no capability and cannot gain one: none permitted or bounded, no new privileges, setuid binaries inert", async () => {
    // Running as root, the sandbox's user is root on files (its mapped uid), so what counts is what it may do as root.
    const probe =
      "grep -E '^(CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status; su root -c 'grep ^CapEff: /proc/self/status' </dev/null 2>&1 | grep -v '^CapEff:.0000000000000000$' | grep ^CapEff || echo no-caps";
    const inside = await bash(sandboxed, probe);
    expect(inside.text).toContain(
      "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nno-caps\n",
    );
    if (isRoot) expect((await bash(plain, probe)).text).not.toContain("CapEff:\t0000000000000000");
  });

  it.skipIf(!isRoot || which(["setpriv"]) === undefined)("keeps an unprivileged runtime's user when it runs a setuid-root binary", async () => {
    // A setuid-root copy of id in a folder of its own, bound into the sandbox: outside it makes nobody root.
    const folder = join(base, "suid");
    mkdirSync(folder, { recursive: true });
    chmodSync(folder, 0o755);
    const suid = join(folder, "id");
    copyFileSync(which(["id"])!, suid);
    chmodSync(suid, 0o4755);
    const asNobody = ["--reuid", "65534", "--regid", "65534", "--clear-groups"];
    const direct = spawnSync("setpriv", [...asNobody, suid, "-u"], { encoding: "utf8" });
    expect(direct.stdout.trim(), "the control: a setuid-root binary run by nobody outside the sandbox").toBe("0");
    const { resolveSandbox, sandboxedCommand } = await import("./support/built.js");
    const sandbox = resolveSandbox({ kind: "bwrap", bind: [{ path: folder }] })!;
    const argv = sandboxedCommand(sandbox, { workspace: folder, cwd: folder }, suid, ["-u"]);
    const inside = spawnSync("setpriv", [...asNobody, argv.file, ...argv.args], { encoding: "utf8", env: { PATH: process.env.PATH } });
    expect(inside.stdout.trim(), inside.stderr).toBe("65534");
  });

  it("cannot make its mounts writable", async () => {
    const target = join(outside, "remounted.txt");
    const inside = await bash(sandboxed, `mount -o remount,rw ${base}; mount -o remount,rw /; echo escaped > ${target}; echo tried`);
    expect(inside.text).toContain("tried");
    expect(existsSync(target)).toBe(false);
  });

  it("cannot make a user namespace of its own", async () => {
    const probe = "unshare --user --map-root-user true && echo made";
    expect((await bash(sandboxed, probe)).text).not.toContain("made");
    // The control, where this machine lets this user make one (Ubuntu's AppArmor may forbid it outside bwrap).
    if (spawnSync("unshare", ["--user", "--map-root-user", "true"]).status === 0) expect((await bash(plain, probe)).text).toContain("made");
  });

  it("writes to a /tmp of its own, which the host's never sees", async () => {
    const name = `toolpool-sandbox-escape-${process.pid}.txt`;
    const inside = await bash(sandboxed, `echo kept > /tmp/${name} && cat /tmp/${name}`);
    expect(inside).toEqual({ text: "kept\n", isError: false });
    expect(existsSync(join(tmpdir(), name))).toBe(false);
    try {
      await bash(plain, `echo kept > /tmp/${name}`);
      expect(existsSync(join("/tmp", name))).toBe(true);
    } finally {
      rmSync(join("/tmp", name), { force: true });
    }
  });

  it("runs grep's ripgrep inside the sandbox too", async () => {
    // A ripgrep that first tries to leave a mark outside the workspace (not when pi probes its version), then searches.
    const bin = join(base, "bin");
    mkdirSync(bin, { recursive: true });
    const mark = join(outside, "rg-mark.txt");
    const script = `#!/bin/sh\n[ "$1" = --version ] || echo escaped > ${mark} 2>/dev/null\nexec ${which(["rg"])} "$@"\n`;
    writeFileSync(join(bin, "rg"), script, { mode: 0o755 });
    const path = process.env.PATH;
    // The runtimes' threads start with this PATH.
    process.env.PATH = `${bin}:${path}`;
    const grepping = (sandbox: "bwrap" | "none") =>
      createRuntime({ pi: "1.6", tools: codingTools({ workspace: { root, perSession: true }, tools: ["grep"], sandbox, ioThreads: 1 }) });
    const runtimes = [grepping("bwrap"), grepping("none")] as const;
    try {
      await bash(sandboxed, "echo needle-line > haystack.txt", "grep");
      const found = { text: "haystack.txt:1: needle-line", isError: false };
      expect(await run(runtimes[0], "grep", { pattern: "needle" }, "grep")).toEqual(found);
      expect(existsSync(mark)).toBe(false);
      expect(await run(runtimes[1], "grep", { pattern: "needle" }, "grep")).toEqual(found);
      expect(readFileSync(mark, "utf8")).toBe("escaped\n");
    } finally {
      await Promise.all(runtimes.map((runtime) => runtime.close()));
      process.env.PATH = path;
    }
  });
  it("runs find's fd inside the sandbox too", async () => {
    // An fd that first tries to leave a mark outside the workspace (not when probed for its version), then searches.
    const bin = join(base, "fd-bin");
    mkdirSync(bin, { recursive: true });
    const mark = join(outside, "fd-mark.txt");
    const realFd = which(["fd", "fdfind"]);
    expect(realFd, "fd or fdfind on PATH").toBeDefined();
    const script = `#!/bin/sh\ncase "$*" in *--version*) ;; *) echo escaped > ${mark} 2>/dev/null ;; esac\nexec ${realFd} "$@"\n`;
    for (const name of ["fd", "fdfind"]) writeFileSync(join(bin, name), script, { mode: 0o755 });
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path}`;
    const finding = (sandbox: "bwrap" | "none") =>
      createRuntime({ pi: "1.6", tools: codingTools({ workspace: { root, perSession: true }, tools: ["find"], sandbox, ioThreads: 1 }) });
    const runtimes = [finding("bwrap"), finding("none")] as const;
    try {
      // In a git repository: pi's find then runs without `--no-require-git`, which Debian 12's fd 8.6 lacks.
      await bash(sandboxed, "git init -q . && mkdir -p sub && echo x > sub/findme.txt", "find");
      const sandboxedFind = await run(runtimes[0], "find", { pattern: "*.txt" }, "find");
      expect(sandboxedFind.text).toContain("findme.txt");
      expect(existsSync(mark)).toBe(false);
      expect((await run(runtimes[1], "find", { pattern: "*.txt" }, "find")).text).toContain("findme.txt");
      expect(readFileSync(mark, "utf8")).toBe("escaped\n");
    } finally {
      await Promise.all(runtimes.map((runtime) => runtime.close()));
      process.env.PATH = path;
    }
  });
});
