import { spawn, spawnSync } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect } from "vitest";

import { builtinTools, workerTool, type Runtime, type ToolResultMessage } from "toolpool";
import { createTemporaryFile, isTemporaryFileName, sweepTemporaryFiles, TEMPORARY_FILE_MAX_AGE_MS } from "./support/built.js";
import { codeOf, textOf, until } from "./support/helpers.js";
import { open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest({ force: true });

/** Linux names every thread of a process in /proc/self/task: a temporary file's writer can be checked. */
const hasThreadList = existsSync("/proc/thread-self");
const patchToB = "--- a\n+++ b\n@@ -1,1 +1,1 @@\n-needle a\n+needle b\n";
const stuckWrite = new URL("./fixtures/tools/stuck-write.mjs", import.meta.url);

let root: string;

beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "toolpool-temporary-")));
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

const temporaryFiles = (dir: string): string[] => readdirSync(dir).filter((name) => name.endsWith(".toolpool.tmp"));

/** The kernel thread that wrote a temporary file, from its name. */
const writerThread = (name: string): string => /\.w[0-9a-f]{16}-(\d+)\.[0-9a-f]{12}\.toolpool\.tmp$/.exec(name)![1]!;

/** Waits until the threads that wrote the temporary files in `dir` have ended (a terminated thread exits soon after its call's outcome). */
async function untilWritersEnded(dir: string): Promise<void> {
  const running = () => temporaryFiles(dir).filter((name) => existsSync(`/proc/self/task/${writerThread(name)}`));
  await until(
    () => running().length === 0,
    () => `the writers of ${running().join(", ")} ended`,
    { limitMs: 60_000 },
  );
}

describe("temporary files", () => {
  it("are named after the file, the process (an id no other process shares) and the thread that write them, and recognised by their suffix", () => {
    const file = createTemporaryFile(root, "a.txt");
    closeSync(file.fd);
    const name = file.name;
    expect(name).toMatch(/^\.a\.txt\.w[0-9a-f]{16}-\d+\.[0-9a-f]{12}\.toolpool\.tmp$/);
    expect(readdirSync(root)).toContain(name);
    expect(isTemporaryFileName(name)).toBe(true);
    expect(isTemporaryFileName("a.txt")).toBe(false);
    rmSync(join(root, name));
    // A name near the 255-byte limit still leaves room for the rest.
    const long = createTemporaryFile(root, "é".repeat(127));
    closeSync(long.fd);
    rmSync(long.path);
  });

  it.runIf(hasThreadList)(
    "a sweep removes those of ended threads and stale ones, and keeps those of running threads and every other file (Linux)",
    async () => {
      const dir = mkdtempSync(join(root, "sweep-"));
      // Written by a thread that then ended without cleaning up.
      const worker = new Worker(
        `import(${JSON.stringify(new URL("../dist/tools/temporary-file.js", import.meta.url).href)}).then((m) => {
        const file = m.createTemporaryFile(${JSON.stringify(dir)}, "gone.txt");
        require("node:worker_threads").parentPort.postMessage(file.path);
      });`,
        { eval: true },
      );
      const [ended] = await Promise.all([
        new Promise<string>((resolve) => worker.once("message", resolve)),
        new Promise((resolve) => worker.once("exit", resolve)),
      ]);
      await untilWritersEnded(dir);
      // Written by this thread, which runs.
      const running = createTemporaryFile(dir, "running.txt");
      closeSync(running.fd);
      // Older namings and other processes are judged by age only.
      const oldName = join(dir, ".old.txt.0123456789ab.toolpool.tmp");
      const recentName = join(dir, ".recent.txt.0123456789ab.toolpool.tmp");
      const userFiles = ["notes.toolpool.tmp", ".notes.toolpool.tmp", "plain.txt"].map((name) => join(dir, name));
      for (const path of [oldName, recentName, ...userFiles]) writeFileSync(path, "x");
      const longAgo = (Date.now() - TEMPORARY_FILE_MAX_AGE_MS - 60_000) / 1000;
      for (const path of [oldName, ...userFiles]) utimesSync(path, longAgo, longAgo);

      expect(sweepTemporaryFiles(dir).sort()).toEqual([ended.slice(dir.length + 1), ".old.txt.0123456789ab.toolpool.tmp"].sort());
      expect(readdirSync(dir).sort()).toEqual(
        [running.path.slice(dir.length + 1), ".recent.txt.0123456789ab.toolpool.tmp", ...userFiles.map((path) => path.slice(dir.length + 1))].sort(),
      );
    },
  );
});

describe.runIf(hasThreadList)("a write cut short by termination (Linux)", () => {
  /** grep and patch on the pool, and the tool that never finishes its write. */
  function openWithStuckWrite(stuckTimeoutMs?: number): Runtime {
    const runtime = open({
      tools: [
        ...builtinTools(["grep", "patch"], { root, allowWrite: true }),
        workerTool({
          name: "stuck_write",
          description: "starts a write and never finishes it",
          parameters: { type: "object" },
          module: stuckWrite,
          ...(stuckTimeoutMs === undefined ? {} : { timeoutMs: stuckTimeoutMs }),
        }),
      ],
      pool: { maxThreads: 2, abortGraceMs: 50 },
    });
    return runtime;
  }

  async function call(runtime: Runtime, name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolResultMessage> {
    const { messages } = await runtime.executeToolCalls(
      { role: "assistant", content: [{ type: "toolCall", id: "c1", name, arguments: args }] },
      signal === undefined ? {} : { signal },
    );
    return messages[0]!;
  }

  /** A folder of its own holding a.txt, for one write cut short. */
  function folderWithFile(): string {
    const dir = mkdtempSync(join(root, "cut-"));
    writeFileSync(join(dir, "a.txt"), "needle a\n");
    return dir;
  }

  /** After a stuck write's outcome: grep never lists its file; once its thread has ended, the next patch in the folder removes it. */
  async function expectCleanedByNextPatch(runtime: Runtime, dir: string): Promise<void> {
    expect(temporaryFiles(dir)).toHaveLength(1);
    const grep = await call(runtime, "grep", { pattern: "needle", path: dir });
    expect(textOf(grep)).toBe("a.txt:1: needle a");
    await untilWritersEnded(dir);
    const patch = await call(runtime, "patch", { path: join(dir, "a.txt"), patch: patchToB, write: true });
    expect(textOf(patch)).toBe(`patch: applied 1 hunk to ${join(dir, "a.txt")} (9 bytes written)`);
    expect(temporaryFiles(dir)).toEqual([]);
  }

  it("by an abort past its grace: no temporary file is left once the next patch writes in its folder", async () => {
    const dir = folderWithFile();
    const runtime = openWithStuckWrite();
    const controller = new AbortController();
    const outcome = call(runtime, "stuck_write", { dir, name: "a.txt" }, controller.signal);
    // Aborted only once its write has started.
    await until(() => temporaryFiles(dir).length === 1, "its temporary file written", { limitMs: 60_000 });
    controller.abort();
    const message = await outcome;
    expect(codeOf(message)).toBe("TP_ERR_ABORTED");
    await expectCleanedByNextPatch(runtime, dir);
  });

  it("by its time limit: no temporary file is left once the next patch writes in its folder", async () => {
    const dir = folderWithFile();
    // Generous: the write starts at once, and the limit only has to come after that.
    const runtime = openWithStuckWrite(5_000);
    const message = await call(runtime, "stuck_write", { dir, name: "a.txt" });
    expect(codeOf(message)).toBe("TP_ERR_TIMEOUT");
    await expectCleanedByNextPatch(runtime, dir);
  });
});

/** Whether this machine can start processes in pid namespaces of their own, each with its own /proc (root, and unshare installed). */
const canUnsharePid = process.getuid?.() === 0 && spawnSync("unshare", ["--pid", "--fork", "--mount-proc", "true"], { stdio: "ignore" }).status === 0;
const patchWriter = new URL("./fixtures/patch/patch-writer.mjs", import.meta.url);

/** Runs node as pid 1 of a pid namespace of its own (with its own /proc), as a container does. */
function spawnInPidNamespace(args: string[]): ReturnType<typeof spawn> {
  return spawn("unshare", ["--pid", "--fork", "--mount-proc", process.execPath, ...args], { stdio: ["pipe", "pipe", "inherit"] });
}

/** The first line a process prints. */
function firstLine(child: ReturnType<typeof spawn>): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
      if (text.includes("\n")) resolve(text.slice(0, text.indexOf("\n")));
    });
    child.once("exit", (code) => reject(new Error(`exited with ${code} before printing a line: ${text}`)));
  });
}

describe.runIf(canUnsharePid)("two processes in pid namespaces of their own on one folder (root, Linux)", () => {
  if (!canUnsharePid) console.warn("SKIPPED: needs root and `unshare --pid --fork --mount-proc` to start processes in pid namespaces of their own");

  it("a sweep in one keeps the temporary file the other is writing, though both are pid 1 and its thread id is not running here", async () => {
    const dir = mkdtempSync(join(root, "namespaces-"));
    // The writer: pid 1 of its namespace, holding a temporary file open on a worker thread started after idle ones,
    // so that its thread id is one the sweeping process has no thread with.
    const moduleUrl = JSON.stringify(new URL("../dist/tools/temporary-file.js", import.meta.url).href);
    const writerScript = `
      import { Worker } from "node:worker_threads";
      const idle = Array.from({ length: 8 }, () => new Worker("setInterval(() => {}, 1 << 30)", { eval: true }));
      await Promise.all(idle.map((worker) => new Promise((resolve) => worker.once("online", resolve))));
      const holder = new Worker(\`Promise.all([import(${moduleUrl}), import("node:worker_threads")]).then(([m, threads]) => {
        const file = m.createTemporaryFile(${JSON.stringify(dir)}, "held.txt");
        threads.parentPort.postMessage(file.path.slice(file.path.lastIndexOf("/") + 1));
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
      });\`, { eval: true });
      holder.once("message", (name) => console.log(JSON.stringify({ pid: process.pid, name })));
      process.stdin.once("end", () => process.exit(0)).resume();`;
    const writer = spawnInPidNamespace(["--input-type=module", "-e", writerScript]);
    try {
      const held = JSON.parse(await firstLine(writer)) as { pid: number; name: string };
      expect(held.pid).toBe(1);
      // The sweeper: pid 1 of another namespace, patching another file of the folder (which sweeps it first).
      writeFileSync(join(dir, "other.txt"), "a\n");
      const sweeperScript = `
        import { createPatchTool } from ${JSON.stringify(new URL("../dist/tools/patch.js", import.meta.url).href)};
        const patch = createPatchTool({ realRoot: ${JSON.stringify(dir)}, allowWrite: true });
        const result = await patch({ path: "other.txt", write: true, patch: "--- a\\n+++ b\\n@@ -1,1 +1,1 @@\\n-a\\n+b\\n" },
          { toolCallId: "t", signal: new AbortController().signal, onUpdate() {} });
        console.log(JSON.stringify({ pid: process.pid, text: result.content[0].text }));`;
      const sweeper = spawnInPidNamespace(["--input-type=module", "-e", sweeperScript]);
      sweeper.stdin!.end();
      const swept = JSON.parse(await firstLine(sweeper)) as { pid: number; text: string };
      expect(swept).toEqual({ pid: 1, text: "patch: applied 1 hunk to other.txt (2 bytes written)" });
      expect(readFileSync(join(dir, "other.txt"), "utf8")).toBe("b\n");
      expect(temporaryFiles(dir)).toEqual([held.name]);
    } finally {
      writer.stdin!.end();
      await new Promise((resolve) => (writer.exitCode === null ? writer.once("exit", resolve) : resolve(undefined)));
    }
  });

  it("two writers on one folder, one pid namespace each, both pid 1: none of their writes fails", async () => {
    const dir = mkdtempSync(join(root, "writers-"));
    const writes = 100;
    // One with more threads than the other, as two containers are: their writers' thread ids differ.
    const writers = [
      spawnInPidNamespace([patchWriter.pathname, dir, "a.txt", String(writes), "0"]),
      spawnInPidNamespace([patchWriter.pathname, dir, "b.txt", String(writes), "8"]),
    ];
    for (const writer of writers) writer.stdin!.end();
    const outcomes = (await Promise.all(writers.map(firstLine))).map(
      (line) => JSON.parse(line) as { total: number; failed: number; firstError?: string },
    );
    expect(outcomes).toEqual([
      { total: writes, failed: 0, enoent: 0 },
      { total: writes, failed: 0, enoent: 0 },
    ]);
    expect(readFileSync(join(dir, "a.txt"), "utf8").split("\n")[0]).toBe(`line ${writes}`);
    expect(readFileSync(join(dir, "b.txt"), "utf8").split("\n")[0]).toBe(`line ${writes}`);
    expect(temporaryFiles(dir)).toEqual([]);
    // Two processes that each start a pool (one of 9 threads): 2.4 s of CPU, but 11.6 s of wall time
    // on 2 cores at a load of 10, past the default 20 s limit when CI's other Nodes run beside it.
  }, 120_000);
});
