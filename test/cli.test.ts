import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

import { supportsPi16 } from "toolpool";

import { warnSkippedPi16 } from "./support/pi16.js";
import { runCli as runCliIn, type CliRun } from "./support/cli.js";
import { textOf } from "./support/helpers.js";

warnSkippedPi16("test/cli.test.ts");

// The CLI runs for real, from the build (`npm run build` comes first): its
// worker threads cannot load TypeScript, and the bin is what users run.
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const FIXTURES = "test/fixtures/cli";
const fixture = (name: string): string => `${FIXTURES}/${name}`;

interface JsonEvent {
  type: string;
  toolCallId?: string;
  durationMs?: number;
  toolName?: string;
  isError?: boolean;
  message?: ToolResult;
  messages?: ToolResult[];
  terminate?: boolean;
}

interface ToolResult {
  toolCallId: string;
  toolName: string;
  content: { type: string; text?: string }[];
  isError: boolean;
  durationMs?: number;
}

/** The CLI, run from the repository's root (the fixtures' paths are relative to it). */
function runCli(args: readonly string[], input?: string): Promise<CliRun> {
  return runCliIn(args, { cwd: ROOT, input });
}

/** Parses `--ndjson` output, failing on any line that is not one JSON object. */
function parseNdjson(stdout: string): JsonEvent[] {
  expect(stdout.endsWith("\n")).toBe(true);
  return stdout
    .slice(0, -1)
    .split("\n")
    .map((line) => {
      const event = JSON.parse(line) as unknown;
      expect(typeof event === "object" && event !== null && !Array.isArray(event)).toBe(true);
      return event as JsonEvent;
    });
}

function batchEnd(events: JsonEvent[]): JsonEvent {
  const last = events.at(-1);
  expect(last?.type).toBe("batch_end");
  return last!;
}

describe("toolpool run --ndjson", () => {
  it("prints each event as one JSON line: starts before ends, messages in call order, batch_end last", async () => {
    const { code, stdout, stderr } = await runCli(["run", fixture("builtin-batch.json"), "--threads", "2", "--ndjson"]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const events = parseNdjson(stdout);
    const callOrder = ["call_hash", "call_diff", "call_grep", "call_missing"];
    const indexOf = (type: string, id: string): number =>
      events.findIndex((event) => event.type === type && (event.toolCallId ?? event.message?.toolCallId) === id);

    for (const id of callOrder) {
      expect(indexOf("tool_execution_start", id)).toBeGreaterThanOrEqual(0);
      expect(indexOf("tool_execution_start", id)).toBeLessThan(indexOf("tool_execution_end", id));
      expect(indexOf("tool_execution_end", id)).toBeLessThan(indexOf("message_start", id));
      expect(indexOf("message_start", id) + 1).toBe(indexOf("message_end", id));
    }
    const messageEvents = events.filter((event) => event.type === "message_start" || event.type === "message_end");
    expect(messageEvents.map((event) => `${event.type}:${event.message?.toolCallId}`)).toEqual(
      callOrder.flatMap((id) => [`message_start:${id}`, `message_end:${id}`]),
    );
    expect(events.filter((event) => event.type === "batch_end")).toHaveLength(1);
    const end = batchEnd(events);
    expect(end.messages?.map((message) => message.toolCallId)).toEqual(callOrder);
    expect(end.terminate).toBe(false);
  });

  it("has the built-in tools without --tools: hash of a text is node:crypto's digest", async () => {
    const { code, stdout } = await runCli(["run", fixture("builtin-batch.json"), "--threads", "2", "--ndjson"]);
    expect(code).toBe(0);
    const messages = batchEnd(parseNdjson(stdout)).messages ?? [];
    const hash = messages.find((message) => message.toolCallId === "call_hash");
    expect(hash?.isError).toBe(false);
    expect(textOf(hash)).toContain(createHash("sha256").update("toolpool").digest("hex"));
    const grep = messages.find((message) => message.toolCallId === "call_grep");
    expect(textOf(grep)).toContain("block-hash-hooks.mjs");
    const missing = messages.find((message) => message.toolCallId === "call_missing");
    expect(missing?.isError).toBe(true);
  });

  it("confines the built-in tools to --root, and lets patch write only with --allow-write", async () => {
    const batch = JSON.stringify({
      role: "assistant",
      content: [
        { type: "toolCall", id: "inside", name: "grep", arguments: { pattern: "BLOCK_REASON", path: "." } },
        { type: "toolCall", id: "outside", name: "hash", arguments: { path: "../../../package.json" } },
        { type: "toolCall", id: "absolute", name: "hash", arguments: { path: join(ROOT, "package.json") } },
        { type: "toolCall", id: "write", name: "patch", arguments: { patch: "@@ -1 +1 @@\n-a\n+b\n", path: "builtin-batch.json", write: true } },
      ],
    });
    const { code, stdout } = await runCli(["run", "-", "--root", "test/fixtures/cli", "--threads", "1", "--ndjson"], batch);
    expect(code).toBe(0);
    const messages = batchEnd(parseNdjson(stdout)).messages ?? [];
    expect(messages.map((message) => [message.toolCallId, message.isError])).toEqual([
      ["inside", false],
      ["outside", true],
      ["absolute", true],
      ["write", true],
    ]);
    expect(textOf(messages[0])).toContain("block-hash-hooks.mjs");
    expect(textOf(messages[1])).toMatch(/^hash: path "\.\.\/\.\.\/\.\.\/package\.json" is outside the workspace root /);
    expect(textOf(messages[3])).toMatch(/^patch: writing files is not allowed here/);
    const missingRoot = await runCli(["run", "-", "--root", "test/no-such-dir"], batch);
    expect(missingRoot.code).toBe(2);
    expect(missingRoot.stderr).toMatch(/^toolpool: Expected `root` to be an existing directory/);
  });

  it("shows a call blocked by the --hooks module as an error result with the hook's reason", async () => {
    const { code, stdout } = await runCli([
      "run",
      fixture("builtin-batch.json"),
      "--hooks",
      fixture("block-hash-hooks.mjs"),
      "--threads",
      "2",
      "--ndjson",
    ]);
    expect(code).toBe(0);
    const events = parseNdjson(stdout);
    const hashEnd = events.find((event) => event.type === "tool_execution_end" && event.toolCallId === "call_hash");
    expect(hashEnd?.isError).toBe(true);
    const hash = batchEnd(events).messages?.find((message) => message.toolCallId === "call_hash");
    expect(hash?.isError).toBe(true);
    expect(textOf(hash)).toBe("hashing is disabled by policy");
    const diff = batchEnd(events).messages?.find((message) => message.toolCallId === "call_diff");
    expect(diff?.isError).toBe(false);
  });

  it("runs the inline and worker tools of a --tools module instead of the built-in ones", async () => {
    const { code, stdout } = await runCli(["run", fixture("custom-batch.json"), "--tools", fixture("tools.mjs"), "--threads", "2", "--ndjson"]);
    expect(code).toBe(0);
    const messages = batchEnd(parseNdjson(stdout)).messages ?? [];
    expect(messages.map((message) => [message.toolCallId, message.isError, textOf(message)])).toEqual([
      ["call_shout", false, "HELLO POOL"],
      ["call_count", false, "4 words"],
    ]);

    const withoutBuiltins = await runCli(["run", fixture("builtin-batch.json"), "--tools", fixture("tools.mjs"), "--ndjson"]);
    const hash = batchEnd(parseNdjson(withoutBuiltins.stdout)).messages?.[0];
    expect(hash?.isError).toBe(true);
  });

  it("runs calls one after another with --mode sequential", async () => {
    const { code, stdout } = await runCli(["run", fixture("builtin-batch.json"), "--mode", "sequential", "--threads", "2", "--ndjson"]);
    expect(code).toBe(0);
    const executionEvents = parseNdjson(stdout).filter((event) => event.type.startsWith("tool_execution_"));
    expect(executionEvents.map((event) => `${event.type.slice("tool_execution_".length)}:${event.toolCallId}`)).toEqual([
      "start:call_hash",
      "end:call_hash",
      "start:call_diff",
      "end:call_diff",
      "start:call_grep",
      "end:call_grep",
      "start:call_missing",
      "end:call_missing",
    ]);
  });

  it('reads { "assistantMessage", "context" } from standard input with "-"', async () => {
    const { code, stdout } = await runCli(
      ["run", "-", "--threads", "1", "--ndjson"],
      await readFile(join(ROOT, fixture("wrapped-batch.json")), "utf8"),
    );
    expect(code).toBe(0);
    const result = batchEnd(parseNdjson(stdout)).messages?.[0];
    expect(textOf(result)).toContain(createHash("md5").update("a").digest("hex"));
  });
});

describe("toolpool run (view for people)", () => {
  it("shows each call as it ends, the results in call order and a summary", async () => {
    const { code, stdout, stderr } = await runCli(["run", fixture("builtin-batch.json"), "--threads", "2"]);
    expect(code).toBe(0);
    for (const name of ["hash", "diff", "grep", "no_such_tool"]) {
      expect(stdout).toContain(name);
      expect(stderr).toContain(name);
    }
    // Not a TTY under test: plain progress lines, one per ended call.
    expect(stderr.trimEnd().split("\n")).toHaveLength(4);
    expect(stderr).toMatch(/^\[1\/4\] [✓✗] /m);
    expect(stderr).toMatch(/^\[4\/4\] [✓✗] /m);
    const positions = ["call_hash", "call_diff", "call_grep", "call_missing"].map((id) => stdout.indexOf(id));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(stdout).toContain("Tool no_such_tool not found");
    expect(stdout).toMatch(/^4 calls, 1 error, terminate: false, wall time \d/m);
  });
});

describe("toolpool usage errors", () => {
  it.each([
    ["a missing batch file", ["run", fixture("missing.json")], /no such file/],
    ["invalid JSON", ["run", fixture("invalid.json")], /invalid JSON/],
    ["JSON that is not an assistant message", ["run", fixture("user-message.json")], /not an assistant message/],
    ["a bad --mode", ["run", fixture("builtin-batch.json"), "--mode", "eager"], /--mode/],
    ["--threads 0", ["run", fixture("builtin-batch.json"), "--threads", "0"], /--threads/],
    ['--threads "x"', ["run", fixture("builtin-batch.json"), "--threads", "x"], /--threads/],
    [
      "a --tools module whose default export is not an array",
      ["run", fixture("builtin-batch.json"), "--tools", fixture("not-array-tools.mjs")],
      /not-array-tools\.mjs.*array/,
    ],
    ["a --tools module that fails to import", ["run", fixture("builtin-batch.json"), "--tools", fixture("broken-tools.mjs")], /broken on purpose/],
    [
      "tools the runtime rejects (two tools share a name)",
      ["run", fixture("custom-batch.json"), "--tools", fixture("tools.mjs"), "--tools", fixture("tools.mjs")],
      /shout/,
    ],
    ["an unknown option", ["run", fixture("builtin-batch.json"), "--fast"], /unknown option '--fast'/],
    ["a missing batch argument", ["run"], /missing required argument/],
    ["no command", [], /missing command/],
    [
      "a fleet node name the node refuses",
      ["node", "--redis", "redis://127.0.0.1:1", "--name", "a:b"],
      /Expected the node's name to hold only letters/,
    ],
  ])("exits 2 with one line on stderr for %s", async (_case, args, message) => {
    const { code, stdout, stderr } = await runCli(args);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^toolpool: [^\n]+\n$/);
    expect(stderr).toMatch(message);
  });

  it("exits 0 for --help and --version", async () => {
    const help = await runCli(["run", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("--tools <module>");
    const version = await runCli(["--version"]);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe("toolpool --pi", () => {
  // Each command stops before it listens or connects: the redis URL leads nowhere, and stdin is closed.
  const commands: [string, string[]][] = [
    ["run", ["run", fixture("builtin-batch.json"), "--threads", "1"]],
    ["serve", ["serve", "--port", "0"]],
    ["mcp", ["mcp"]],
    ["node", ["node", "--redis", "redis://127.0.0.1:1", "--threads", "1"]],
  ];

  it.each(commands)("%s refuses a --pi other than 0.73 or 1.6: exit 2, one line naming the choices", async (_command, args) => {
    const { code, stdout, stderr } = await runCli([...args, "--pi", "1.7"]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^toolpool: option '--pi <version>' argument '1\.7' is invalid\. Allowed choices are 0\.73, 1\.6\.\n$/);
  });

  it("runs the batch by pi 0.73's rules with --pi 0.73: no durationMs anywhere", async () => {
    const { code, stdout } = await runCli(["run", fixture("builtin-batch.json"), "--pi", "0.73", "--threads", "1", "--ndjson"]);
    expect(code).toBe(0);
    const events = parseNdjson(stdout);
    expect(batchEnd(events).messages?.map((message) => message.toolCallId)).toEqual(["call_hash", "call_diff", "call_grep", "call_missing"]);
    expect(stdout).not.toContain("durationMs");
  });

  it("says in every command's help that the default is 0.73 and that 1.6 needs Node >= 22.19", async () => {
    for (const command of ["run", "serve", "mcp", "node"]) {
      const { code, stdout } = await runCli([command, "--help"]);
      expect(code).toBe(0);
      const help = stdout.replace(/\s+/g, " ");
      expect(help).toMatch(/--pi <version> .*1\.6 .*needs Node >= 22\.19\.0.*\(default: 0\.73\) \(choices: "0\.73", "1\.6"\)/);
    }
  });

  describe.skipIf(supportsPi16())("on a Node older than 22.19", () => {
    // Named without "pi 1.6": the tests that need pi 1.6's Node carry that string.
    it.each(commands)("%s exits 2 when --pi asks for 1.6, with one line naming the Node it needs", async (_command, args) => {
      const { code, stdout, stderr } = await runCli([...args, "--pi", "1.6"]);
      expect(code).toBe(2);
      expect(stdout).toBe("");
      expect(stderr).toMatch(/^toolpool: [^\n]+\n$/);
      expect(stderr).toContain(`\`pi: "1.6"\` needs Node >= 22.19.0, as pi 1.6 does; this is Node ${process.versions.node}`);
    });
  });
});

describe.skipIf(!supportsPi16())("toolpool run --pi 1.6 (pi 1.6, Node >= 22.19)", () => {
  it("runs the batch by pi 1.6's rules: calls that executed carry durationMs, the unknown tool none", async () => {
    const { code, stdout } = await runCli(["run", fixture("builtin-batch.json"), "--pi", "1.6", "--threads", "1", "--ndjson"]);
    expect(code).toBe(0);
    const events = parseNdjson(stdout);
    const ends = events.filter((event) => event.type === "tool_execution_end");
    expect(ends.map((event) => [event.toolCallId, Number.isInteger(event.durationMs)]).sort()).toEqual([
      ["call_diff", true],
      ["call_grep", true],
      ["call_hash", true],
      ["call_missing", false],
    ]);
    const messages = batchEnd(events).messages ?? [];
    expect(messages.map((message) => [message.toolCallId, message.isError, Number.isInteger(message.durationMs)])).toEqual([
      ["call_hash", false, true],
      ["call_diff", false, true],
      ["call_grep", false, true],
      ["call_missing", true, false],
    ]);
    expect(textOf(messages[3])).toBe("Tool no_such_tool not found");
  });
});

describe("toolpool demo", () => {
  it("runs the built-in tools over the repository, with exactly one error result", async () => {
    const { code, stdout, stderr } = await runCli(["demo", "--ndjson", "--threads", "2"]);
    expect(code).toBe(0);
    expect(stderr).toMatch(/^toolpool demo: /);
    const events = parseNdjson(stdout);
    expect(events.filter((event) => event.type === "tool_execution_end").length).toBeGreaterThanOrEqual(6);
    const messages = batchEnd(events).messages ?? [];
    expect(messages.filter((message) => message.isError)).toHaveLength(1);
  });
});
