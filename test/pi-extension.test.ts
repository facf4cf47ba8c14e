import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
  // What pi's bash tells a command of its session (the id is random: only whether it is there).
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's parameter expansions
  { name: "bash", arguments: { command: 'echo "$PI_PROVIDER/$PI_MODEL/${PI_REASONING_LEVEL-none}/${PI_SESSION_ID:+id}/${PI_SESSION_FILE-nofile}"' } },
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

interface PiRun {
  events: Record<string, unknown>[];
  /** The system messages of each request pi made to the model: the system prompt and the tool declarations. */
  requests: unknown[];
  stats?: { completed: number; threads: number; calls: Record<string, number> };
  stderr: string;
}

interface PiRunOptions {
  withToolpool: boolean;
  /** pi's arguments after the extensions. */
  args?: readonly string[];
  /** The tool calls of the model's first answer. */
  calls?: readonly { name: string; arguments: Record<string, unknown> }[];
  /** pi's global settings (`settings.json` of its agent folder). */
  settings?: Record<string, unknown>;
  /** Variables of pi's environment, over the test's own. */
  env?: Record<string, string>;
}

/** Runs the real pi CLI once, non-interactively, on a fresh copy of the tree, in a home of its own; returns what it did. */
async function runPi({ withToolpool, args = [], calls = script, settings, env = {} }: PiRunOptions): Promise<PiRun> {
  const run = join(base, `run-${runs++}`);
  const home = join(run, "home");
  // One tree path for every run: pi's system prompt names its working folder.
  const tree = join(base, "tree");
  const statsFile = join(run, "stats.json");
  const requestsFile = join(run, "requests.jsonl");
  mkdirSync(join(home, ".pi", "agent"), { recursive: true });
  if (settings !== undefined) writeFileSync(join(home, ".pi", "agent", "settings.json"), JSON.stringify(settings));
  writeTree(tree);
  const argv = [PI_CLI, "--mode", "json", "--no-session", "-e", SCRIPTED_MODEL];
  if (withToolpool) argv.push("-e", ROOT, "--toolpool-stats", statsFile);
  // pi's parser takes the word after a flag it does not know as that flag's value, a boolean's too: the prompt goes after an option of pi's.
  argv.push(...args, "--provider", "scripted", "--model", "script", "go");
  const child = spawn(process.execPath, argv, {
    cwd: tree,
    env: {
      ...process.env,
      HOME: home,
      PI_CODING_AGENT_DIR: join(home, ".pi", "agent"),
      PI_OFFLINE: "1",
      TOOLPOOL_SCRIPT: JSON.stringify(calls),
      TOOLPOOL_REQUESTS: requestsFile,
      ...env,
    },
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
  const requests = readFileSync(requestsFile, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => withoutTimes(JSON.parse(line)));
  return { events, requests, stderr, ...(existsSync(statsFile) ? { stats: JSON.parse(readFileSync(statsFile, "utf8")) } : {}) };
}
let runs = 0;

/** `value` without its timing fields. */
function withoutTimes(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (key, field) => (key === "timestamp" || key === "durationMs" ? undefined : field));
}

/** The session's messages, timing fields aside. */
function messagesOf(events: Record<string, unknown>[]): unknown[] {
  return events.filter((event) => event.type === "message_end").map((event) => withoutTimes(event.message));
}

type ToolResultMessage = { role: "toolResult"; toolName: string; isError: boolean; content: { type: string; text?: string }[]; details?: unknown };

function toolResultsOf(events: Record<string, unknown>[]): ToolResultMessage[] {
  return messagesOf(events).filter((message) => (message as { role: string }).role === "toolResult") as ToolResultMessage[];
}

/** The names of the tools declared to the model in a request's system messages. */
function declaredTools(request: unknown): string[] {
  return [...JSON.stringify(request).matchAll(/"name":"(\w+)"/g)].map((match) => match[1]!).sort();
}

describe.skipIf(!supportsPi16())("the toolpool pi extension, in the real pi CLI 1.6.0 (pi 1.6)", () => {
  it("runs pi's tool calls on the pool, and the session's messages and the model's requests equal a run without it", async () => {
    const args = ["--tools", "read,bash,edit,write,ls,grep", "--toolpool-threads", "2", "--toolpool-io-threads", "2"];
    const plain = await runPi({ withToolpool: false, args: ["--tools", "read,bash,edit,write,ls,grep"] });
    const pooled = await runPi({ withToolpool: true, args });
    const expected = messagesOf(plain.events);
    const actual = messagesOf(pooled.events);
    // The user's prompt, the model's calls, every tool result and the final answer.
    // On a mismatch, the pooled run's last message and pi's stderr tell what ended the session early.
    expect(actual.length, `${JSON.stringify(actual.at(-1))}\n${pooled.stderr}`).toBe(expected.length);
    expect(actual).toEqual(expected);
    // What the model was offered: the system prompt and each tool's declaration, both turns.
    expect(pooled.requests).toHaveLength(2);
    expect(pooled.requests).toEqual(plain.requests);
    expect(declaredTools(pooled.requests[0])).toEqual(["bash", "edit", "grep", "ls", "read", "write"]);
    const results = toolResultsOf(pooled.events);
    expect(results).toHaveLength(script.length);
    expect(results.filter((result) => result.isError).map((result) => result.toolName)).toEqual(["read", "bash", "edit"]);
    expect(
      results.find((result) => result.toolName === "bash" && !result.isError && result.content[0]!.text!.includes("/"))!.content[0]!.text,
    ).toMatch(/^scripted\/script\/[a-z]+\/id\/nofile\n?$/);
    // The pool's own count: every call ran on it, none in pi's process.
    expect(plain.stats).toBeUndefined();
    expect(pooled.stats).toEqual({
      completed: script.length,
      threads: expect.any(Number),
      calls: { read: 4, bash: 3, edit: 2, write: 1, ls: 1, grep: 1 },
    });
    expect(pooled.stats!.threads).toBeGreaterThan(0);
    // Both pools together: read, edit and write on one, bash, grep and ls on the other.
    expect(pooled.stats!.threads).toBeLessThanOrEqual(4);
  }, 180_000);

  it("offers the model pi's default tools only, and runs pi's settings of its tools and toolpool's own from settings.json", async () => {
    // No `--tools`: pi's default four; grep, find and ls, which toolpool registers too, stay inactive as in pi.
    const calls = [
      { name: "read", arguments: { path: "README.md" } },
      { name: "bash", arguments: { command: 'echo "prefix says $GREETING"' } },
      { name: "edit", arguments: { path: "src/edit-me.ts", edits: [{ oldText: "const b = 2;", newText: "const b = 3;" }] } },
      { name: "write", arguments: { path: "notes.txt", content: "a\nb\n" } },
    ];
    const settings = { shellCommandPrefix: "GREETING=hello", toolpool: { threads: 1, ioThreads: 1, bashTimeoutMs: 60_000 } };
    const plain = await runPi({ withToolpool: false, calls, settings });
    const pooled = await runPi({ withToolpool: true, calls, settings });
    expect(declaredTools(plain.requests[0])).toEqual(["bash", "edit", "read", "write"]);
    expect(pooled.requests).toEqual(plain.requests);
    expect(messagesOf(pooled.events)).toEqual(messagesOf(plain.events));
    // pi's `shellCommandPrefix` ran before the command, on the pool as in pi.
    expect(toolResultsOf(pooled.events)[1]!.content[0]!.text).toContain("prefix says hello");
    // `toolpool.threads` and `toolpool.ioThreads` from the settings: at most one thread in each pool.
    expect(pooled.stats).toEqual({ completed: 4, threads: expect.any(Number), calls: { read: 1, bash: 1, edit: 1, write: 1 } });
    expect(pooled.stats!.threads).toBeGreaterThan(0);
    expect(pooled.stats!.threads).toBeLessThanOrEqual(2);
  }, 180_000);

  it("ends a bash call at --toolpool-bash-timeout, its whole process tree with it", async () => {
    const marker = `toolpool-pi-extension-${process.pid}-${runs}`;
    // The shell ignores SIGTERM, and its child (named by the marker) sleeps far past the test's own timeout.
    const calls = [{ name: "bash", arguments: { command: `trap '' TERM; echo started; (exec -a ${marker} sleep 3600)` } }];
    const pooled = await runPi({ withToolpool: true, calls, args: ["--toolpool-bash-timeout", "1500"] });
    const [result] = toolResultsOf(pooled.events);
    expect(result!.isError).toBe(true);
    expect(result!.content[0]!.text).toContain("started");
    expect(result!.content[0]!.text).toContain("Command timed out after 1.5 seconds");
    expect(result!.details).toMatchObject({ code: "TP_ERR_TIMEOUT", deadline: "default", timeoutMs: 1500 });
    expect(processesWith(marker)).toEqual([]);
  }, 180_000);

  it("with --toolpool-confine, refuses a path outside pi's working folder, and reads one inside", async () => {
    mkdirSync(base, { recursive: true });
    writeFileSync(join(base, "outside.txt"), "secret\n");
    const calls = [
      { name: "read", arguments: { path: "../outside.txt" } },
      { name: "read", arguments: { path: "README.md" } },
    ];
    const pooled = await runPi({ withToolpool: true, calls, args: ["--toolpool-confine"] });
    const [outside, inside] = toolResultsOf(pooled.events);
    expect(outside!.isError).toBe(true);
    expect(outside!.content[0]!.text).toContain("../outside.txt");
    expect(outside!.content[0]!.text).not.toContain("secret");
    expect(inside!.isError).toBe(false);
    expect(inside!.content[0]!.text).toContain("A tree for pi.");
  }, 180_000);

  it("with --toolpool-sandbox bwrap where bwrap is not on PATH, refuses as the session starts, and every call is an error result saying why", async () => {
    const calls = [
      { name: "read", arguments: { path: "README.md" } },
      { name: "bash", arguments: { command: "echo ran" } },
    ];
    const pooled = await runPi({
      withToolpool: true,
      calls,
      args: ["--toolpool-sandbox", "bwrap", "--toolpool-status"],
      env: { PATH: join(base, "no-bwrap") },
    });
    expect(pooled.stderr).toMatch(
      /Extension error \([^)]+\): The bwrap sandbox that --toolpool-sandbox .* cannot run here: bwrap \(bubblewrap\) is not on PATH/,
    );
    expect(pooled.stderr).toMatch(/^sandbox: none, and no tool runs \(The bwrap sandbox that --toolpool-sandbox/m);
    const results = toolResultsOf(pooled.events);
    expect(results).toHaveLength(2);
    for (const result of results) {
      expect(result.isError).toBe(true);
      expect(result.content[0]!.text).toContain("bwrap (bubblewrap) is not on PATH");
      expect(result.content[0]!.text).not.toContain("ran");
    }
  }, 180_000);

  it("with --toolpool-sandbox bwrap where bwrap runs, says so in its status and runs the calls", async () => {
    const calls = [{ name: "bash", arguments: { command: "pwd" } }];
    const pooled = await runPi({ withToolpool: true, calls, args: ["--toolpool-sandbox", "bwrap", "--toolpool-status"] });
    expect(pooled.stderr).toMatch(/^sandbox: bwrap, each bash command in a sandbox of its own \(network off; bubblewrap \d/m);
    expect(pooled.stderr).not.toContain("Extension error");
    const [result] = toolResultsOf(pooled.events);
    expect(result).toMatchObject({ isError: false, content: [{ text: `${join(base, "tree")}\n` }] });
  }, 180_000);

  it("answers a flag it cannot use with an error result naming it", async () => {
    const calls = [{ name: "read", arguments: { path: "README.md" } }];
    const pooled = await runPi({ withToolpool: true, calls, args: ["--toolpool-threads", "many"] });
    const [result] = toolResultsOf(pooled.events);
    expect(result!.isError).toBe(true);
    expect(result!.content[0]!.text).toContain('Expected --toolpool-threads to be an integer from 1 to 256, got `"many"` (string)');
  }, 180_000);
});

/** The ids of live processes whose command line holds `marker`. */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const command = readFileSync(join("/proc", entry, "cmdline"), "utf8");
      if (command.includes(marker)) found.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}
