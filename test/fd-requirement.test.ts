/**
 * pi's find passes `--no-require-git` to fd outside a git repository, which
 * fd knows since 8.7.0. With an older fd, codingTools says so when it is
 * made, and the find calls that fd cannot serve answer with the same words;
 * the others, and every call with a recent fd, give pi's results.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { runToolCall as piRunToolCall } from "@earendil-works/pi-agent-core";
import { codingTools, createRuntime, supportsPi16, type Runtime } from "toolpool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { which, writeOldFd } from "./support/coding-trees.js";
import { fdMinimumVersion, fdShortfallOf, isFindRefused } from "./support/built.js";
import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/fd-requirement.test.ts");

const base = join(tmpdir(), `toolpool-fd-${process.pid}`);
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** A workspace outside any git repository with a `.gitignore`, and a git repository inside it. */
function writeWorkspace(root: string): void {
  mkdirSync(join(root, "plain", "deep"), { recursive: true });
  mkdirSync(join(root, "repo", ".git"), { recursive: true });
  mkdirSync(join(root, "repo", "sub"), { recursive: true });
  for (const file of ["top.txt", "skipped.txt", "plain/a.txt", "plain/deep/b.txt", "repo/c.txt", "repo/hidden.txt", "repo/sub/d.txt"]) {
    writeFileSync(join(root, file), `${file}\n`);
  }
  writeFileSync(join(root, ".gitignore"), "skipped.txt\n");
  writeFileSync(join(root, "repo", ".gitignore"), "hidden.txt\n");
}

/** pi's own find, in process, on the same call: its result as the agent loop gives it. */
async function piFind(workspace: string, args: Record<string, unknown>): Promise<{ content: unknown; isError: boolean }> {
  const { createFindTool } = (await import("@earendil-works/pi-coding-agent")) as unknown as {
    createFindTool: (cwd: string) => unknown;
  };
  const tools = [createFindTool(workspace)];
  const toolCall = { type: "toolCall", id: "pi", name: "find", arguments: args };
  const outcome = (await piRunToolCall(toolCall as never, {
    tools: tools as never,
    context: { systemPrompt: "", messages: [], tools } as never,
    assistantMessage: { role: "assistant", content: [toolCall], stopReason: "toolUse" } as never,
  })) as { result: { content: unknown }; isError: boolean };
  return { content: outcome.result.content, isError: outcome.isError };
}

/**
 * pi's agent folder for this file, whose `bin/fd` pi's find runs before any
 * fd on PATH. pi reads the folder once per thread, when it loads (the
 * runtime's threads start with each runtime), so each part of the file
 * writes its own fd there rather than naming another folder.
 */
const agentDir = join(base, "agent");
const savedAgentDir = process.env.PI_CODING_AGENT_DIR;
process.env.PI_CODING_AGENT_DIR = agentDir;
afterAll(() => {
  if (savedAgentDir === undefined) delete process.env.PI_CODING_AGENT_DIR;
  else process.env.PI_CODING_AGENT_DIR = savedAgentDir;
});

/**
 * Before the part's tests: pi's `bin/fd` linked to `fd`, a fresh workspace and a runtime of find on it,
 * with the process's warnings recorded from just before the runtime is made.
 */
function findRuntimeWith(fd: () => string, workspace: string): { warnings: Error[]; runtime: () => Runtime } {
  const recorded = { warnings: [] as Error[] };
  const onWarning = (warning: Error) => recorded.warnings.push(warning);
  let runtime: Runtime | undefined;
  beforeAll(async () => {
    linkFd(fd());
    process.on("warning", onWarning);
    writeWorkspace(workspace);
    runtime = createRuntime({ pi: "1.6", tools: codingTools({ workspace, tools: ["find"] }), pool: { maxThreads: 1 } });
    // process.emitWarning reports on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
  });
  afterAll(async () => {
    process.off("warning", onWarning);
    await runtime?.close();
  });
  return { warnings: recorded.warnings, runtime: () => runtime! };
}

/** An fd that takes `--no-require-git`: `TOOLPOOL_TEST_FD`, else fd or fdfind on PATH when it does. */
const recentFd = [process.env.TOOLPOOL_TEST_FD, which(["fd", "fdfind"])].find(
  (fd) => fd !== undefined && fd !== "" && spawnSync(fd, ["--no-require-git", "--version"], { stdio: "ignore" }).status === 0,
);
if (supportsPi16() && recentFd === undefined) {
  console.warn(`SKIPPED: find with an fd >= ${fdMinimumVersion}: none here (set TOOLPOOL_TEST_FD to one).`);
}
const oldFd = writeOldFd(join(base, "old-fd"));
const fdPath = join(agentDir, "bin", "fd");

/** Makes pi's `bin/fd` a link to `fd`. */
function linkFd(fd: string): void {
  mkdirSync(join(agentDir, "bin"), { recursive: true });
  rmSync(fdPath, { force: true });
  symlinkSync(fd, fdPath);
}

describe.skipIf(!supportsPi16() || oldFd === undefined)("codingTools' find with an fd older than 8.7 (pi 1.6)", () => {
  const workspace = join(base, "old");
  const recorded = findRuntimeWith(() => oldFd!, workspace);

  it("says when made, before any call, which fd find needs and which it found (pi 1.6)", () => {
    const mine = recorded.warnings.filter((warning) => warning.name === "ToolpoolWarning");
    expect(mine).toHaveLength(1);
    expect(mine[0]!.message).toContain(`fd ${fdMinimumVersion} or later outside a git repository`);
    expect(mine[0]!.message).toContain(`${fdPath} (fd 8.6.0)`);
    expect(mine[0]!.message).toContain("--no-require-git");
    expect(mine[0]!.message).toContain("https://github.com/sharkdp/fd/releases");
  });

  it("answers a find outside a git repository with that message, where pi's gives fd's usage error (pi 1.6)", async () => {
    const message = recorded.warnings.find((warning) => warning.name === "ToolpoolWarning")!.message;
    for (const args of [{ pattern: "*.txt" }, { pattern: "*.txt", path: "plain" }, { pattern: "**/*.txt", path: "plain/deep" }]) {
      const pi = await piFind(workspace, args);
      expect(pi.isError).toBe(true);
      expect(JSON.stringify(pi.content)).toContain("Found argument '--no-require-git' which wasn't expected");
      const outcome = await recorded.runtime().runToolCall({ type: "toolCall", id: "find", name: "find", arguments: args });
      expect(outcome.isError).toBe(true);
      expect(outcome.result.content).toEqual([{ type: "text", text: message }]);
    }
  }, 60_000);

  it("answers an already-aborted find as pi does, before it looks at fd (pi 1.6)", async () => {
    const controller = new AbortController();
    controller.abort();
    const find = recorded.runtime().agentTools()[0]!;
    await expect(find.execute("c1", { pattern: "*.txt" }, controller.signal)).rejects.toThrow(/^Operation aborted$/);
    const { createFindTool } = (await import("@earendil-works/pi-coding-agent")) as unknown as {
      createFindTool: (cwd: string) => { execute: (id: string, args: unknown, signal: AbortSignal) => Promise<unknown> };
    };
    await expect(createFindTool(workspace).execute("c1", { pattern: "*.txt" }, controller.signal)).rejects.toThrow(/^Operation aborted$/);
  }, 60_000);

  it("gives pi's results for a find inside a git repository (pi 1.6)", async () => {
    for (const args of [
      { pattern: "*.txt", path: "repo" },
      { pattern: "**/*.txt", path: "repo/sub" },
      { pattern: "nothing-*", path: "repo" },
    ]) {
      const pi = await piFind(workspace, args);
      const outcome = await recorded.runtime().runToolCall({ type: "toolCall", id: "find", name: "find", arguments: args });
      expect({ content: outcome.result.content, isError: outcome.isError }, JSON.stringify(args)).toEqual(pi);
    }
    const listed = await recorded
      .runtime()
      .runToolCall({ type: "toolCall", id: "find", name: "find", arguments: { pattern: "*.txt", path: "repo" } });
    expect((listed.result.content[0] as { text: string }).text.split("\n").sort()).toEqual(["c.txt", "sub/d.txt"]);
  }, 60_000);
});

describe.skipIf(!supportsPi16() || recentFd === undefined)("codingTools' find with an fd that takes --no-require-git (pi 1.6)", () => {
  const workspace = join(base, "recent");
  const recorded = findRuntimeWith(() => recentFd!, workspace);

  it("says nothing when made, and gives pi's results outside a git repository, .gitignore files respected (pi 1.6)", async () => {
    expect(recorded.warnings.filter((warning) => warning.name === "ToolpoolWarning")).toEqual([]);
    for (const args of [{ pattern: "*.txt" }, { pattern: "**/*.txt", path: "plain" }, { pattern: "*.txt", path: "repo" }]) {
      const pi = await piFind(workspace, args);
      const outcome = await recorded.runtime().runToolCall({ type: "toolCall", id: "find", name: "find", arguments: args });
      expect({ content: outcome.result.content, isError: outcome.isError }, JSON.stringify(args)).toEqual(pi);
      expect(outcome.isError).toBe(false);
    }
    const listed = await recorded.runtime().runToolCall({ type: "toolCall", id: "find", name: "find", arguments: { pattern: "*.txt" } });
    expect((listed.result.content[0] as { text: string }).text.split("\n").sort()).toEqual([
      "plain/a.txt",
      "plain/deep/b.txt",
      "repo/c.txt",
      "repo/sub/d.txt",
      "top.txt",
    ]);
  }, 60_000);
});

describe.skipIf(!supportsPi16())("codingTools with an fd on PATH that never answers (pi 1.6)", () => {
  const folder = join(base, "hang");
  const savedPath = process.env.PATH;
  afterAll(() => {
    process.env.PATH = savedPath;
  });

  it("is made all the same, and says the fd did not answer (pi 1.6)", async () => {
    mkdirSync(folder, { recursive: true });
    // `exec`: the probe's kill ends the sleep itself, leaving nothing behind.
    writeFileSync(join(folder, "fd"), "#!/bin/sh\nexec /bin/sleep 600\n", { mode: 0o755 });
    rmSync(fdPath, { force: true });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    process.env.PATH = folder;
    try {
      const tools = codingTools({ workspace: base, tools: ["find"] });
      expect(tools.map((tool) => tool.name)).toEqual(["find"]);
    } finally {
      process.env.PATH = savedPath;
    }
    await new Promise((resolve) => setImmediate(resolve));
    process.off("warning", onWarning);
    const mine = warnings.filter((warning) => warning.name === "ToolpoolWarning");
    expect(mine).toHaveLength(1);
    expect(mine[0]!.message).toContain("the fd it runs, fd (which did not answer --version within 2000 ms)");
  }, 60_000);
});

describe("fdShortfallOf", () => {
  const saved = process.env.PI_OFFLINE;
  afterAll(() => {
    if (saved === undefined) delete process.env.PI_OFFLINE;
    else process.env.PI_OFFLINE = saved;
  });

  it("names the minimum version and pi's folder of tools when there is no fd and pi runs offline", () => {
    for (const offline of [undefined, "1", "true", "YES"]) {
      if (offline === undefined) delete process.env.PI_OFFLINE;
      else process.env.PI_OFFLINE = offline;
      const shortfall = fdShortfallOf(undefined, "/agent/bin");
      expect(shortfall?.scope, String(offline)).toBe("everywhere");
      expect(shortfall?.message).toContain(`fd ${fdMinimumVersion} or later, and there is none`);
      expect(shortfall?.message).toContain("/agent/bin/fd");
    }
  });

  it("finds nothing short without an fd where pi may download one (PI_OFFLINE set otherwise)", () => {
    for (const online of ["0", "", "false"]) {
      process.env.PI_OFFLINE = online;
      expect(fdShortfallOf(undefined, "/agent/bin"), JSON.stringify(online)).toBeUndefined();
    }
  });

  it.skipIf(oldFd === undefined)("limits an fd that refuses --no-require-git to searches outside a git repository", () => {
    expect(fdShortfallOf(oldFd, "/agent/bin")).toMatchObject({ scope: "outsideGitRepository", message: expect.stringContaining("(fd 8.6.0)") });
  });

  it.skipIf(recentFd === undefined)("finds nothing short in an fd that takes --no-require-git", () => {
    expect(fdShortfallOf(recentFd, "/agent/bin")).toBeUndefined();
  });
});

describe("isFindRefused", () => {
  const tree = join(base, "refused");
  beforeAll(() => writeWorkspace(tree));

  it("refuses searches outside a git repository only, as pi tells them apart (a .git in the folder or one above)", async () => {
    const old = { message: "m", scope: "outsideGitRepository" } as const;
    expect(await isFindRefused(old, tree)).toBe(true);
    expect(await isFindRefused(old, join(tree, "plain", "deep"))).toBe(true);
    expect(await isFindRefused(old, join(tree, "repo"))).toBe(false);
    expect(await isFindRefused(old, join(tree, "repo", "sub"))).toBe(false);
    expect(await isFindRefused(old, join(tree, "repo", "missing", "folder"))).toBe(false);
    expect(await isFindRefused({ message: "m", scope: "everywhere" }, join(tree, "repo"))).toBe(true);
  });
});
