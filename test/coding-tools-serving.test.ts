// What `serve` and `mcp --http` require before serving pi's coding tools
// (src/cli/coding-tools-serving.ts): a token when the tools run commands or
// write, a --root for serve, and each session's share of the coding-io pool.
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

import { supportsPi16 } from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

import { defaultIoThreads } from "./support/built.js";
import { until } from "./support/helpers.js";
import { warnSkippedPi16 } from "./support/pi16.js";
import { spawnServe, spawnToolpool } from "./support/serve-process.js";
import { assistantMessage, batchEndOf, postBatch, readSse, type SseEvent } from "./support/server-client.js";

warnSkippedPi16("test/coding-tools-serving.test.ts");

const base = join(tmpdir(), `toolpool-coding-serving-${process.pid}`);
const children: ChildProcess[] = [];

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
  rmSync(base, { recursive: true, force: true });
});

function freshRoot(name: string): string {
  const root = join(base, name);
  mkdirSync(root, { recursive: true });
  return root;
}

/**
 * Runs `toolpool ARGS` until it exits or prints where it listens (then it is
 * killed: it should not have started); its exit code, or "listening", and stderr.
 */
async function runUntilExit(args: string[]): Promise<{ code: number | "listening"; stderr: string }> {
  const { child, stderr, exited } = spawnToolpool(args, { children });
  const listening = once(createInterface({ input: child.stdout! }), "line").then(() => "listening" as const);
  const code = await Promise.race([exited.then(([code]) => code as number), listening]);
  if (code === "listening") child.kill("SIGKILL");
  await exited;
  return { code, stderr: stderr() };
}

/** `toolpool mcp --http ARGS`, once listening: its URL and stderr so far. */
async function spawnMcpHttp(args: string[]): Promise<{ url: string; stderr: () => string; child: ChildProcess }> {
  const { child, stderr } = spawnToolpool(["mcp", "--http", "127.0.0.1:0", ...args], { children });
  const [line] = (await once(createInterface({ input: child.stdout! }), "line")) as [string];
  return { url: /^listening on (\S+)$/.exec(line)![1]!, stderr, child };
}

/** The generated token that the server printed on stderr, once it has. */
async function printedToken(child: ChildProcess, stderr: () => string): Promise<string> {
  for (;;) {
    const match = /Authorization: Bearer (\S+)/.exec(stderr());
    if (match !== null) return match[1]!;
    await once(child.stderr!, "data");
  }
}

describe("serve and mcp refuse what serving coding tools cannot do without", () => {
  it("serve --coding-tools without --root exits 2 naming --root", async () => {
    const { code, stderr } = await runUntilExit(["serve", "--port", "0", "--coding-tools", "--token", "t0k"]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/--coding-tools needs --root DIR/);
  }, 60_000);

  it("refuses --unsafe-no-token beside a token, without bash, edit or write, and on mcp's stdio (exit 2)", async () => {
    const root = freshRoot("refusals");
    for (const [args, message] of [
      [["serve", "--port", "0", "--coding-tools", "--root", root, "--token", "t0k", "--unsafe-no-token"], /contradict/],
      [["serve", "--port", "0", "--coding-tools", "read,grep", "--root", root, "--unsafe-no-token"], /applies only with --coding-tools/],
      [["serve", "--port", "0", "--unsafe-no-token"], /applies only with --coding-tools/],
      [["mcp", "--coding-tools", "--root", root, "--unsafe-no-token"], /--unsafe-no-token needs --http/],
      [["serve", "--port", "0", "--coding-threads-per-session", "2"], /--coding-threads-per-session needs --coding-tools/],
    ] as const) {
      const { code, stderr } = await runUntilExit([...args]);
      expect({ args, code }).toEqual({ args, code: 2 });
      expect(stderr).toMatch(message);
    }
  }, 120_000);
});

describe.skipIf(!supportsPi16())("serving coding tools: tokens, roots and each session's share (pi 1.6)", () => {
  it("serve --coding-tools without a token generates one, prints it on stderr, and refuses requests without it", async () => {
    const root = freshRoot("token-serve");
    const served = await spawnServe(["--coding-tools", "--root", root], {}, children);
    expect((await fetch(`${served.url}/v1/tools`)).status).toBe(401);
    const token = await printedToken(served.child, served.stderr);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(served.stderr()).toContain(`Send it to ${served.url}`);
    expect(served.stderr()).toMatch(/bash, edit, write run commands or write files/);
    const withToken = await fetch(`${served.url}/v1/tools`, { headers: { authorization: `Bearer ${token}` } });
    expect(withToken.status).toBe(200);
    served.child.kill("SIGTERM");
    expect((await served.exited)[0]).toBe(0);
  }, 120_000);

  it("serve keeps a loopback server of read-only coding tools, and one run with --unsafe-no-token, tokenless", async () => {
    const root = freshRoot("tokenless-serve");
    for (const args of [
      ["--coding-tools", "read,grep,find,ls", "--root", root],
      ["--coding-tools", "--root", root, "--unsafe-no-token"],
    ]) {
      const served = await spawnServe(args, {}, children);
      expect((await fetch(`${served.url}/v1/tools`)).status).toBe(200);
      served.child.kill("SIGTERM");
      expect((await served.exited)[0]).toBe(0);
      expect(served.stderr()).not.toMatch(/Bearer/);
    }
  }, 120_000);

  it("mcp --http --coding-tools bash without a token generates one and refuses requests without it", async () => {
    const root = freshRoot("token-mcp");
    const mcp = await spawnMcpHttp(["--coding-tools", "bash", "--root", root]);
    const initialize = (headers: Record<string, string>) =>
      fetch(mcp.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "t", version: "1" } },
        }),
      });
    expect((await initialize({})).status).toBe(401);
    const token = await printedToken(mcp.child, mcp.stderr);
    const answered = await initialize({ authorization: `Bearer ${token}` });
    expect(answered.status).toBe(200);
    await answered.body?.cancel();
    mcp.child.kill("SIGTERM");
    expect((await once(mcp.child, "exit"))[0]).toBe(0);
  }, 120_000);

  it("one session's bash calls on every coding-io thread leave another session's call a thread (the servers' default share)", async () => {
    const root = freshRoot("share");
    const threads = defaultIoThreads();
    const share = Math.max(1, Math.floor(threads / 2));
    // --threads as many as the coding-io pool has: every one of its threads is
    // started with the server, so that each of alice's calls gets one at once
    // unless the share holds it back.
    const served = await spawnServe(["--coding-tools", "bash", "--root", root, "--token", "t0k", "--threads", String(threads)], {}, children);
    const auth = { authorization: "Bearer t0k" };
    // Each of alice's calls marks that it runs, then waits until released (for at most 30 s).
    const hold = (id: string) => `touch started-${id}; for i in $(seq 300); do [ -e release ] && break; sleep 0.1; done; echo ${id}`;
    const ids = Array.from({ length: threads }, (_, index) => `hold${index}`);
    const alice = readSse(
      await postBatch(
        served.url,
        { assistantMessage: assistantMessage(ids.map((id) => ({ id, name: "bash", arguments: { command: hold(id) } }))) },
        {
          ...auth,
          "x-toolpool-session": "alice",
        },
      ),
    );
    const aliceEvents: SseEvent[] = [];
    const aliceDone = (async () => {
      for await (const event of alice) aliceEvents.push(event);
    })();
    const aliceFolder = join(root, "alice");
    const started = () => (existsSync(aliceFolder) ? readdirSync(aliceFolder).filter((name) => name.startsWith("started-")).length : 0);
    // Bounded by alice's calls: each marks its start within its first command.
    await until(
      () => started() >= share,
      () => `${share} of alice's calls started (${started()} so far)`,
      { limitMs: 60_000 },
    );
    const bob = await postBatch(
      served.url,
      { assistantMessage: assistantMessage([{ id: "hi", name: "bash", arguments: { command: "echo hi" } }]) },
      { ...auth, "x-toolpool-session": "bob", accept: "application/json" },
    );
    const bobBody = (await bob.json()) as { messages: { content: { text: string }[]; isError: boolean }[] };
    // bob's call ended while alice's were all still held: none of hers had ended.
    const aliceEnded = aliceEvents.filter((event) => event.event === "tool_execution_end");
    const startedWhenBobEnded = started();
    writeFileSync(join(aliceFolder, "release"), "");
    await aliceDone;
    expect(bobBody.messages[0]).toMatchObject({ isError: false, content: [{ text: "hi\n" }] });
    expect(aliceEnded).toEqual([]);
    expect(startedWhenBobEnded).toBe(share);
    const outcome = batchEndOf(aliceEvents);
    expect(outcome.messages.map((message) => [message.toolCallId, message.isError])).toEqual(ids.map((id) => [id, false]));
    served.child.kill("SIGTERM");
    expect((await served.exited)[0]).toBe(0);
  }, 180_000);
});
