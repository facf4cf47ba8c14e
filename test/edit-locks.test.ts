import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";

import { codingTools, createRuntime, supportsPi16, workerTool, type Runtime } from "toolpool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { warnSkippedPi16 } from "./support/pi16.js";
import { builtCodingToolsUrl } from "./support/build-paths.js";

warnSkippedPi16("test/edit-locks.test.ts");

const base = join(tmpdir(), `toolpool-edit-locks-${process.pid}`);
const dist = builtCodingToolsUrl;
const fixtures = new URL("./fixtures/coding/", import.meta.url);

interface LockTableModule {
  pathLockTable(): Int32Array;
  pathLockSlot(key: string): number;
}
const lockTable = () => import(new URL("path-lock-table.js", dist).href) as Promise<LockTableModule>;
const lockKey = async (path: string): Promise<string> =>
  ((await import(new URL("path-locks.js", dist).href)) as { pathLockKey(path: string): Promise<string> }).pathLockKey(path);

afterAll(() => rmSync(base, { recursive: true, force: true }));

/** A worker thread whose messages are taken one at a time, in order. */
function startThread(url: URL, workerData: unknown): { worker: Worker; next: () => Promise<unknown> } {
  const worker = new Worker(url, { workerData });
  const messages: unknown[] = [];
  const waiters: ((message: unknown) => void)[] = [];
  worker.on("message", (message: unknown) => {
    const waiter = waiters.shift();
    if (waiter) waiter(message);
    else messages.push(message);
  });
  const next = () => (messages.length > 0 ? Promise.resolve(messages.shift()) : new Promise<unknown>((resolve) => waiters.push(resolve)));
  return { worker, next };
}

/** Resolves once a thread is parked waiting on `slot` (a spurious wake-up, which waiters re-check, tells); bounded. */
async function waiterParked(table: Int32Array, slot: number): Promise<boolean> {
  for (let tries = 0; tries < 2_000; tries++) {
    if (Atomics.notify(table, slot) > 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return false;
}

describe("path locks across worker threads", () => {
  const holder = new URL("lock-holder.mjs", fixtures);

  it("gives up a wait with pi's 'Operation aborted' as soon as the call is aborted, leaving the holder's lock", async () => {
    const { pathLockTable, pathLockSlot } = await lockTable();
    mkdirSync(base, { recursive: true });
    const path = join(base, "aborted.txt");
    writeFileSync(path, "x\n");
    const table = pathLockTable();
    const slot = pathLockSlot(await lockKey(path));

    const first = startThread(holder, { path, hold: true, pathLocks: table });
    expect(await first.next()).toBe("held");
    const waiting = startThread(holder, { path, hold: false, pathLocks: table });
    // The second thread is parked on the slot, waiting for the first.
    expect(await waiterParked(table, slot)).toBe(true);
    waiting.worker.postMessage("abort");
    expect(await waiting.next()).toBe("failed: Operation aborted");
    expect(Atomics.load(table, slot)).toBe(first.worker.threadId);
    await waiting.worker.terminate();
    await first.worker.terminate();
    Atomics.store(table, slot, 0);
  }, 60_000);
});

describe("path locks on a pool: a thread that ends holding a lock frees it", () => {
  const workspace = join(base, "pool");
  const parameters = { type: "object", properties: { path: { type: "string" }, exit: { type: "boolean" } }, required: ["path"] };
  let runtime: Runtime;
  beforeAll(() => {
    mkdirSync(workspace, { recursive: true });
    runtime = createRuntime({
      tools: [
        workerTool({
          name: "hold",
          description: "hold a path lock",
          parameters,
          module: new URL("path-lock-tool.mjs", fixtures),
          exportName: "hold",
        }),
        workerTool({
          name: "take",
          description: "take a path lock",
          parameters,
          module: new URL("path-lock-tool.mjs", fixtures),
          exportName: "take",
        }),
      ],
      pool: { minThreads: 2, maxThreads: 2, abortGraceMs: 100 },
    });
  });
  afterAll(() => runtime.close());

  const call = (id: string, name: string, args: Record<string, unknown>) => ({
    role: "assistant" as const,
    content: [{ type: "toolCall" as const, id, name, arguments: args }],
    stopReason: "toolUse" as const,
  });
  // A take that never gets the lock ends aborted, which the assertions below name, rather than at the test's timeout.
  const take = (id: string, path: string) => runtime.executeToolCalls(call(id, "take", { path }), { signal: AbortSignal.timeout(30_000) });

  it("when the pool terminates it (an abort it ignores)", async () => {
    const { pathLockTable, pathLockSlot } = await lockTable();
    const path = join(workspace, "terminated.txt");
    const slot = pathLockSlot(await lockKey(path));
    const controller = new AbortController();
    let holderId = 0;
    const held = runtime.executeToolCalls(call("h", "hold", { path }), {
      signal: controller.signal,
      emit: (event) => {
        if (event.type !== "tool_execution_update") return;
        holderId = Atomics.load(pathLockTable(), slot);
        controller.abort();
      },
    });
    const { messages } = await held;
    expect(messages[0]!.isError).toBe(true);
    expect(holderId).toBeGreaterThan(0);
    const taken = await take("t", path);
    expect(taken.messages[0]!.content).toEqual([{ type: "text", text: "taken" }]);
    expect(Atomics.load(pathLockTable(), slot)).toBe(0);
  }, 60_000);

  it("when it exits by itself (process.exit inside the lock)", async () => {
    const { pathLockTable, pathLockSlot } = await lockTable();
    const path = join(workspace, "exited.txt");
    const slot = pathLockSlot(await lockKey(path));
    const { messages } = await runtime.executeToolCalls(call("h", "hold", { path, exit: true }));
    expect(messages[0]!.isError).toBe(true);
    const taken = await take("t", path);
    expect(taken.messages[0]!.content).toEqual([{ type: "text", text: "taken" }]);
    expect(Atomics.load(pathLockTable(), slot)).toBe(0);
  }, 60_000);
});

describe.skipIf(!supportsPi16())("pi 1.6 edit tool on two threads at once, 50 rounds", () => {
  // The gate makes every round contended (checked below), so each round proves
  // the property on its own: 50 show it as well as 200 did, in a quarter of the time.
  const rounds = 50;

  /** Two threads edit one file, one line each per round, their edits made to overlap by the fixture's gate. */
  async function editTogether(locked: boolean) {
    const cwd = join(base, locked ? "locked" : "unlocked");
    mkdirSync(cwd, { recursive: true });
    const file = "shared.txt";
    const lines = Array.from({ length: rounds }, (_, round) => `line ${round} a\nline ${round} b\n`);
    writeFileSync(join(cwd, file), `head\n${lines.join("")}tail\n`);
    const { pathLockTable } = await lockTable();
    const arrivals = new Int32Array(new SharedArrayBuffer(rounds * 4));
    const inside = new Int32Array(new SharedArrayBuffer(8));
    const threads = ["a", "b"].map((name) =>
      startThread(new URL("edit-thread.mjs", fixtures), { cwd, file, name, locked, arrivals, inside, pathLocks: pathLockTable() }),
    );
    try {
      for (const thread of threads) expect(await thread.next()).toBe("ready");
      const replies: { round: number; isError: boolean; text: string; bothArrived: boolean }[] = [];
      for (let round = 0; round < rounds; round++) {
        for (const thread of threads) thread.worker.postMessage(round);
        for (const thread of threads) replies.push((await thread.next()) as (typeof replies)[number]);
      }
      const final = readFileSync(join(cwd, file), "utf8");
      return { replies, final, overlapsInside: Atomics.load(inside, 1) };
    } finally {
      await Promise.all(threads.map((thread) => thread.worker.terminate()));
    }
  }

  it("with the path lock: every edit applies, none lost, one edit inside at a time, each round contended", async () => {
    const { replies, final, overlapsInside } = await editTogether(true);
    expect(replies.filter((reply) => reply.isError)).toEqual([]);
    expect(replies).toHaveLength(2 * rounds);
    for (let round = 0; round < rounds; round++) {
      expect(final).toContain(`line ${round} a edited by a\n`);
      expect(final).toContain(`line ${round} b edited by b\n`);
    }
    expect(overlapsInside).toBe(0);
    // Every edit, once it had read the file, found the other thread of its round at the lock or past it:
    // in every round, the first edit held the lock with the second waiting for it.
    expect(replies.filter((reply) => !reply.bothArrived)).toEqual([]);
  }, 300_000);

  it("without it (pi's own operations, the control): the same gate loses one edit of every round", async () => {
    const { replies, final } = await editTogether(false);
    expect(replies.filter((reply) => reply.isError || !reply.bothArrived)).toEqual([]);
    const applied = final.split("\n").filter((line) => line.includes(" edited by ")).length;
    console.log(`without the lock: ${applied} of ${2 * rounds} edits on disk, every edit reported applied`);
    expect(applied).toBe(rounds);
  }, 300_000);
});

describe.skipIf(!supportsPi16())("checkedEditOperations with pi 1.6's edit tool", () => {
  const cwd = join(base, "checked");
  interface EditTool {
    execute(id: string, args: unknown): Promise<{ content: { text: string }[] }>;
  }
  interface Checked {
    readFile(path: string): Promise<Buffer>;
    writeFile(path: string, content: string): Promise<void>;
    access(path: string): Promise<void>;
  }

  /** Runs an edit of `first` in `file`, doing `during` between the edit's read and its write. */
  async function editWith(file: string, during: (path: string) => Promise<void> | void) {
    const { checkedEditOperations } = (await import(new URL("checked-file-operations.js", dist).href)) as {
      checkedEditOperations(path?: string): Checked;
    };
    const { createEditTool } = (await import("@earendil-works/pi-coding-agent")) as unknown as {
      createEditTool(cwd: string, options: unknown): EditTool;
    };
    const checked = checkedEditOperations(file);
    const operations = {
      ...checked,
      readFile: async (path: string) => {
        const bytes = await checked.readFile(path);
        await during(path);
        return bytes;
      },
    };
    return createEditTool(cwd, { operations })
      .execute("e", { path: file, edits: [{ oldText: "first", newText: "FIRST" }] })
      .then(
        (result) => ({ text: result.content[0]!.text, error: undefined }),
        (error: Error) => ({ text: undefined, error: error.message }),
      );
  }

  const refusal = (file: string) =>
    `File ${file} was changed on disk after the edit read it; nothing was written. Read it again and redo the edit against what it holds now.`;

  it("refuses an edit whose file another process appended to after the edit read it, keeping the append", async () => {
    mkdirSync(cwd, { recursive: true });
    const path = join(cwd, "appended.txt");
    writeFileSync(path, "first\nsecond\n");
    const outcome = await editWith("appended.txt", async () => {
      const child = spawn(process.execPath, ["-e", `require("node:fs").appendFileSync(${JSON.stringify(path)}, "appended\\n")`]);
      expect((await once(child, "exit"))[0]).toBe(0);
    });
    expect(outcome).toEqual({ text: undefined, error: refusal("appended.txt") });
    expect(readFileSync(path, "utf8")).toBe("first\nsecond\nappended\n");
  }, 60_000);

  it("refuses a change of the same size made at once after the read (the timestamps may not tell; the bytes do)", async () => {
    mkdirSync(cwd, { recursive: true });
    const path = join(cwd, "same-size.txt");
    writeFileSync(path, "first\nsecond\n");
    const outcome = await editWith("same-size.txt", (file) => writeFileSync(file, "first\nSECOND\n"));
    expect(outcome).toEqual({ text: undefined, error: refusal("same-size.txt") });
    expect(readFileSync(path, "utf8")).toBe("first\nSECOND\n");
  }, 60_000);

  it("refuses an edit of a file replaced by another (same bytes, another inode) or removed", async () => {
    mkdirSync(cwd, { recursive: true });
    const path = join(cwd, "replaced.txt");
    writeFileSync(path, "first\n");
    const replaced = await editWith("replaced.txt", (file) => {
      // Saved as editors save: a new file renamed over it.
      writeFileSync(`${file}.new`, "first\n");
      renameSync(`${file}.new`, file);
    });
    expect(replaced.error).toBe(refusal("replaced.txt"));
    expect(readFileSync(path, "utf8")).toBe("first\n");
    const removed = await editWith("replaced.txt", (file) => rmSync(file));
    expect(removed.error).toBe(refusal("replaced.txt"));
    expect(existsSync(path)).toBe(false);
  }, 60_000);

  it("writes as pi does when nothing changed", async () => {
    mkdirSync(cwd, { recursive: true });
    const path = join(cwd, "unchanged.txt");
    writeFileSync(path, "\uFEFFfirst\r\nsecond\r\n");
    const outcome = await editWith("unchanged.txt", () => {});
    expect(outcome).toEqual({ text: "Successfully replaced 1 block(s) in unchanged.txt.", error: undefined });
    expect(readFileSync(path, "utf8")).toBe("\uFEFFFIRST\r\nsecond\r\n");
  }, 60_000);
});

describe.skipIf(!supportsPi16())("edits never lose an update through codingTools (pi 1.6)", () => {
  const workspace = join(base, "sessions");
  let runtime: Runtime;
  beforeAll(() => {
    mkdirSync(workspace, { recursive: true });
    runtime = createRuntime({
      pi: "1.6",
      tools: codingTools({ workspace, tools: ["read", "edit", "write"] }),
      pool: { maxThreads: 2, minThreads: 2 },
    });
  });
  afterAll(() => runtime.close());

  const edit = (id: string, path: string, oldText: string, newText: string) => ({
    role: "assistant" as const,
    content: [{ type: "toolCall" as const, id, name: "edit", arguments: { path, edits: [{ oldText, newText }] } }],
    stopReason: "toolUse" as const,
  });

  it("applies every edit of sessions editing one file at once, on two threads", async () => {
    // Large enough that each edit's read, diff and write take a while, so that edits on the two threads overlap.
    const lines = Array.from({ length: 20_000 }, (_, index) => `<L${index}> ${"x".repeat(40)}`);
    writeFileSync(join(workspace, "shared.txt"), `${lines.join("\n")}\n`);
    const sessions = ["a", "b", "c", "d"];
    let applied = 0;
    for (let round = 0; round < 15; round++) {
      const batches = sessions.map((session, index) => {
        const target = round * 4 + index;
        return runtime.executeToolCalls(edit(`${session}${round}`, "shared.txt", `<L${target * 100}>`, `<L${target * 100}> edited by ${session}`), {
          sessionKey: session,
        });
      });
      for (const { messages } of await Promise.all(batches)) {
        expect(messages[0]!.isError, JSON.stringify(messages[0]!.content)).toBe(false);
        applied += 1;
      }
    }
    const final = readFileSync(join(workspace, "shared.txt"), "utf8");
    const edited = final.split("\n").filter((line) => line.includes(" edited by "));
    expect(applied).toBe(60);
    expect(edited).toHaveLength(60);
  }, 240_000);

  it("applies one of two sessions' edits of the same text, and tells the other why", async () => {
    writeFileSync(join(workspace, "contested.txt"), "const answer = 41;\n");
    const [first, second] = await Promise.all([
      runtime.executeToolCalls(edit("x", "contested.txt", "const answer = 41;", "const answer = 42;"), { sessionKey: "x" }),
      runtime.executeToolCalls(edit("y", "contested.txt", "const answer = 41;", "const answer = 43;"), { sessionKey: "y" }),
    ]);
    const outcomes = [first.messages[0]!, second.messages[0]!];
    expect(outcomes.filter((message) => !message.isError)).toHaveLength(1);
    const loser = outcomes.find((message) => message.isError)!;
    expect((loser.content[0] as { text: string }).text).toMatch(/^Could not find the exact text in contested\.txt/);
    expect(["const answer = 42;\n", "const answer = 43;\n"]).toContain(readFileSync(join(workspace, "contested.txt"), "utf8"));
  }, 120_000);
});
