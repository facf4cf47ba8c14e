/**
 * The examples of examples/ run as a user runs them (`node examples/X.mjs`
 * from the repository, offline), and print what their comments and the docs
 * say they print.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { describe, expect, it } from "vitest";

import { supportsPi16 } from "toolpool";

import { warnSkippedPi16 } from "./support/pi16.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const run = promisify(execFile);

async function runExample(file: string): Promise<string[]> {
  const { stdout } = await run(process.execPath, [`examples/${file}`], {
    cwd: root,
    timeout: 60_000,
    env: { ...process.env, ANTHROPIC_API_KEY: "" },
  });
  return stdout.trimEnd().split("\n");
}

/** What both pi-agent examples print with their scripted model: two tool calls at once, their results, the answer. */
function expectAgentRun(lines: string[]): void {
  expect(lines.slice(0, 2)).toEqual(['→ grep {"pattern":"executeToolCalls\\\\(","path":"src","maxResults":5}', '→ hash {"text":"toolpool"}']);
  expect(lines).toContain("← hash: sha256 89e5e28640f698aeb8b7c29a94d553521dac158606e7c58a80cefbc9c916c4e7  (text)");
  expect(lines.find((line) => line.startsWith("← grep: "))).toMatch(/^← grep: [\w/.-]+\.ts:\d+: .*executeToolCalls\(/);
  expect(lines.at(-1)).toBe("assistant: Both tools ran on toolpool's worker threads; the results are above.");
}

describe("examples", () => {
  warnSkippedPi16("test/examples.test.ts");

  it("pi-agent.mjs: a pi 0.73 Agent on the pool", async () => {
    expectAgentRun(await runExample("pi-agent.mjs"));
  }, 90_000);

  it.runIf(supportsPi16())(
    "pi-agent-16.mjs: a pi 1.6 Agent on the pool (pi 1.6)",
    async () => {
      expectAgentRun(await runExample("pi-agent-16.mjs"));
    },
    90_000,
  );

  it("tracing.mjs: the tree of spans, one line each", async () => {
    const lines = await runExample("tracing.mjs");
    expect(lines[0]).toBe("agent turn");
    expect(lines[1]).toBe("  toolpool.batch                       toolpool.batch.tool_calls=4 toolpool.batch.errors=2");
    // One line per call, ordered by start (a validation failure starts first or last): here by call id.
    const calls = lines.slice(2).sort((a, b) => /call_\d/.exec(a)![0].localeCompare(/call_\d/.exec(b)![0]));
    expect(calls).toHaveLength(4);
    expect(calls[0]).toMatch(/^ {4}execute_tool hash {3}call_1 {9}queue_wait_ms=\d+\.\d +run_ms=\d+\.\d +thread\.id=\d+$/);
    expect(calls[1]).toMatch(/^ {4}execute_tool hash {3}call_2 {9}queue_wait_ms=\d+\.\d +run_ms=\d+\.\d +thread\.id=\d+$/);
    expect(calls[2]).toMatch(/^ {4}execute_tool grep {3}call_3 {9}queue_wait_ms=\d+\.\d +run_ms=\d+\.\d +thread\.id=\d+ error\.type=tool_error$/);
    expect(calls[3]).toBe("    execute_tool hash   call_4         execution=none                    error.type=tool_error");
  }, 90_000);
});
