import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { supportsPi16 } from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

import { png } from "./support/coding-trees.js";
import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/pi-extension.test.ts");

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const PI_CLI = join(ROOT, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "cli.js");
const SCRIPTED_MODEL = join(ROOT, "test", "fixtures", "pi-extension", "scripted-model.mjs");
const base = join(tmpdir(), `toolpool-pi-extension-${process.pid}`);

afterAll(() => rmSync(base, { recursive: true, force: true }));

/** The tool calls of the scripted model's first answer: each on files of its own, so that their order does not matter. */
const script = [
  { name: "read", arguments: { path: "README.md" } },
  { name: "read", arguments: { path: "src/long.txt", offset: 10, limit: 5 } },
  { name: "read", arguments: { path: "image.png" } },
  { name: "read", arguments: { path: "missing.txt" } },
  { name: "bash", arguments: { command: "{ echo out; echo err >&2; } 2>&1; cat README.md | wc -l" } },
  { name: "bash", arguments: { command: "exit 3" } },
  { name: "edit", arguments: { path: "src/edit-me.ts", edits: [{ oldText: "const a = 1;", newText: "const a = 2;" }] } },
  { name: "edit", arguments: { path: "src/keep.ts", edits: [{ oldText: "not there", newText: "x" }] } },
  { name: "write", arguments: { path: "out/new.txt", content: "written\n" } },
  { name: "ls", arguments: { path: "src" } },
  { name: "grep", arguments: { pattern: "line 4", path: "src/long.txt" } },
];

function writeTree(tree: string): void {
  rmSync(tree, { recursive: true, force: true });
  mkdirSync(join(tree, "src"), { recursive: true });
  writeFileSync(join(tree, "README.md"), "# demo\n\nA tree for pi.\n");
  writeFileSync(join(tree, "src", "long.txt"), Array.from({ length: 50 }, (_, index) => `line ${index + 1}`).join("\n"));
  writeFileSync(join(tree, "src", "edit-me.ts"), "const a = 1;\nconst b = 2;\n");
  writeFileSync(join(tree, "src", "keep.ts"), "export const keep = true;\n");
  let seed = 7;
  writeFileSync(
    join(tree, "image.png"),
    png(12, 9, () => (seed = (seed * 48271) % 2147483647) / 2147483647),
  );
}

/** Runs the real pi CLI once, non-interactively, on a fresh copy of the tree; returns its JSON events. */
async function runPi(withToolpool: boolean): Promise<{ events: Record<string, unknown>[]; stats?: Record<string, unknown>; stderr: string }> {
  const home = join(base, withToolpool ? "home-toolpool" : "home-pi");
  const tree = join(base, "tree");
  const statsFile = join(base, "stats.json");
  rmSync(statsFile, { force: true });
  mkdirSync(home, { recursive: true });
  writeTree(tree);
  const args = [PI_CLI, "--mode", "json", "--no-session", "-e", SCRIPTED_MODEL];
  if (withToolpool) args.push("-e", ROOT, "--toolpool-threads", "2", "--toolpool-stats", statsFile);
  args.push("--provider", "scripted", "--model", "script", "--tools", "read,bash,edit,write,ls,grep", "go");
  const child = spawn(process.execPath, args, {
    cwd: tree,
    env: { ...process.env, HOME: home, PI_OFFLINE: "1", TOOLPOOL_SCRIPT: JSON.stringify(script) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const [code] = await once(child, "exit");
  expect(code, stderr).toBe(0);
  const events = stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { events, stderr, ...(existsSync(statsFile) ? { stats: JSON.parse(readFileSync(statsFile, "utf8")) } : {}) };
}

/** The session's messages, timing fields aside. */
function messagesOf(events: Record<string, unknown>[]): unknown[] {
  return events
    .filter((event) => event.type === "message_end")
    .map((event) => JSON.parse(JSON.stringify(event.message), (key, value) => (key === "timestamp" || key === "durationMs" ? undefined : value)));
}

describe.skipIf(!supportsPi16())("the toolpool pi extension, in the real pi CLI 1.6.0 (pi 1.6)", () => {
  it("runs pi's tool calls on the pool, and the session's messages equal a run without it", async () => {
    const plain = await runPi(false);
    const pooled = await runPi(true);
    const expected = messagesOf(plain.events);
    const actual = messagesOf(pooled.events);
    // The system prompt, the model's calls, every tool result and the final answer.
    expect(actual.length).toBe(expected.length);
    expect(actual).toEqual(expected);
    const results = actual.filter((message) => (message as { role: string }).role === "toolResult") as { toolName: string; isError: boolean }[];
    expect(results).toHaveLength(script.length);
    expect(results.filter((result) => result.isError).map((result) => result.toolName)).toEqual(["read", "bash", "edit"]);
    // The pool's own count: every call ran on it, none in pi's process.
    expect(plain.stats).toBeUndefined();
    expect(pooled.stats).toEqual({
      completed: script.length,
      threads: expect.any(Number),
      calls: { read: 4, bash: 2, edit: 2, write: 1, ls: 1, grep: 1 },
    });
    expect((pooled.stats as { threads: number }).threads).toBeGreaterThan(0);
  }, 180_000);
});
