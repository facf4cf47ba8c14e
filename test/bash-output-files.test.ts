import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";

import { codingTools, createRuntime, supportsPi16, type Runtime } from "toolpool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/bash-output-files.test.ts");

const root = join(tmpdir(), `toolpool-bash-output-${process.pid}`);
/** What `seq 1 20000` prints: past pi's 50 KB and 2,000 lines, so pi saves it to a file. */
const seqBytes = Array.from({ length: 20_000 }, (_, index) => `${index + 1}\n`).join("").length;
const maxBytes = 2 * seqBytes + 1_000;

describe.skipIf(!supportsPi16())("bash's full-output files (pi 1.6)", () => {
  let runtime: Runtime;
  beforeAll(() => {
    mkdirSync(root, { recursive: true });
    runtime = createRuntime({
      pi: "1.6",
      tools: codingTools({
        workspace: { root, perSession: true },
        confine: true,
        tools: ["read", "bash"],
        bash: { outputFilesMaxBytes: maxBytes },
      }),
      pool: { maxThreads: 1 },
    });
  });
  afterAll(async () => {
    await runtime.close();
    rmSync(root, { recursive: true, force: true });
  });

  const run = async (name: string, args: Record<string, unknown>, sessionKey: string) => {
    const message = {
      role: "assistant" as const,
      content: [{ type: "toolCall" as const, id: name, name, arguments: args }],
      stopReason: "toolUse" as const,
    };
    const { messages } = await runtime.executeToolCalls(message, { sessionKey });
    return { isError: messages[0]!.isError, text: (messages[0]!.content[0] as { text: string }).text, details: messages[0]!.details };
  };
  const bashFile = async (sessionKey: string): Promise<string> => {
    const { isError, text, details } = await run("bash", { command: "seq 1 20000" }, sessionKey);
    expect(isError).toBe(false);
    const path = /Full output: (\S+)\]$/.exec(text)?.[1];
    expect(path).toBeDefined();
    expect((details as { fullOutputPath?: string }).fullOutputPath).toBe(path);
    return path!;
  };
  const totalBytes = (runtimeFolder: string) =>
    readdirSync(runtimeFolder)
      .flatMap((session) => readdirSync(join(runtimeFolder, session)).map((name) => statSync(join(runtimeFolder, session, name)).size))
      .reduce((sum, size) => sum + size, 0);

  it("keeps a session's files where its confined read reads them, and no other session's read does (pi 1.6)", async () => {
    const path = await bashFile("alice");
    expect(dirname(path)).not.toBe(tmpdir());
    expect(statSync(path).size).toBe(seqBytes);
    const own = await run("read", { path }, "alice");
    expect(own.isError).toBe(false);
    expect(own.text.startsWith("1\n2\n3\n")).toBe(true);
    const other = await run("read", { path }, "bob");
    expect(other.isError).toBe(true);
    expect(other.text).toContain("is outside the workspace");
  });

  it("holds the runtime's files within outputFilesMaxBytes, the oldest removed first (pi 1.6)", async () => {
    const first = await bashFile("carol");
    const second = await bashFile("dave");
    const runtimeFolder = dirname(dirname(first));
    expect(dirname(dirname(second))).toBe(runtimeFolder);
    const third = await bashFile("carol");
    for (const path of [second, third]) expect(existsSync(path), path).toBe(true);
    expect(existsSync(first)).toBe(false);
    expect(totalBytes(runtimeFolder)).toBeLessThanOrEqual(maxBytes);
    // A read of a removed file is pi's own error result.
    expect((await run("read", { path: first }, "carol")).isError).toBe(true);
  });

  it("removes the files when the runtime closes (pi 1.6)", async () => {
    const path = await bashFile("erin");
    const runtimeFolder = dirname(dirname(path));
    expect(existsSync(runtimeFolder)).toBe(true);
    await runtime.close();
    expect(existsSync(runtimeFolder)).toBe(false);
  });
});

describe.skipIf(!supportsPi16())("bash's full-output files, the file a call left (pi 1.6)", () => {
  const smallRoot = join(tmpdir(), `toolpool-bash-output-own-${process.pid}`);
  let runtime: Runtime;
  beforeAll(() => {
    mkdirSync(smallRoot, { recursive: true });
    runtime = createRuntime({
      pi: "1.6",
      tools: codingTools({ workspace: { root: smallRoot, perSession: true }, tools: ["bash"], bash: { outputFilesMaxBytes: 1_000 } }),
      pool: { maxThreads: 1 },
    });
  });
  afterAll(async () => {
    await runtime.close();
    rmSync(smallRoot, { recursive: true, force: true });
  });

  const bash = async (args: Record<string, unknown>, sessionKey: string) => {
    const message = {
      role: "assistant" as const,
      content: [{ type: "toolCall" as const, id: "bash", name: "bash", arguments: args }],
      stopReason: "toolUse" as const,
    };
    const { messages } = await runtime.executeToolCalls(message, { sessionKey });
    const text = (messages[0]!.content[0] as { text: string }).text;
    const path = /Full output: (\S+)\]/.exec(text.slice(text.lastIndexOf("Full output: ")))?.[1];
    expect(path).toBeDefined();
    return { isError: messages[0]!.isError, text, path: path! };
  };

  it("keeps pi's own file, not one whose name the command printed, nor another session's so named (pi 1.6)", async () => {
    const alice = await bash({ command: "seq 1 20000" }, "alice");
    expect(existsSync(alice.path)).toBe(true);
    // Mallory's output ends with the name of Alice's file, and then with a name no file has.
    const named = `echo ${basename(alice.path)}; echo pi-bash-0123456789abcdef.log`;
    const mallory = await bash({ command: `seq 1 20000; ${named}` }, "mallory");
    expect(mallory.isError).toBe(false);
    expect(mallory.text).toContain(`pi-bash-0123456789abcdef.log\n\n[Showing`);
    expect(existsSync(mallory.path), "the call's own file").toBe(true);
    expect(existsSync(alice.path), "an older file past the bound, though named in output").toBe(false);
  });

  it("keeps the file of a call that timed out, whose output ends with such a name (pi 1.6)", async () => {
    const timedOut = await bash({ command: "seq 1 20000; echo pi-bash-0123456789abcdef.log; sleep 60", timeout: 3 }, "mallory");
    expect(timedOut.isError).toBe(true);
    expect(timedOut.text).toContain("Command timed out");
    expect(existsSync(timedOut.path), "the call's own file").toBe(true);
    expect(readdirSync(dirname(dirname(timedOut.path))).flatMap((session) => readdirSync(join(dirname(dirname(timedOut.path)), session)))).toEqual([
      basename(timedOut.path),
    ]);
  });
});
