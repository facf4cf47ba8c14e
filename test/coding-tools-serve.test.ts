import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { supportsPi16 } from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

import { writeOldFd } from "./support/coding-trees.js";
import { warnSkippedPi16 } from "./support/pi16.js";
import { spawnServe, spawnToolpool } from "./support/serve-process.js";

warnSkippedPi16("test/coding-tools-serve.test.ts");

const base = join(tmpdir(), `toolpool-coding-serve-${process.pid}`);
const children: ChildProcess[] = [];

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
  rmSync(base, { recursive: true, force: true });
});

const batch = (command: string) => ({
  role: "assistant",
  content: [
    { type: "toolCall", id: "w", name: "bash", arguments: { command } },
    { type: "toolCall", id: "r", name: "read", arguments: { path: "/etc/hostname" } },
  ],
  stopReason: "toolUse",
});

describe.skipIf(!supportsPi16())("serve and mcp --coding-tools (pi 1.6)", () => {
  it("serve: each session's calls run in a folder of its own under --root, confined to it", async () => {
    const root = join(base, "serve");
    mkdirSync(root, { recursive: true });
    const served = await spawnServe(["--coding-tools", "--root", root, "--threads", "2", "--token", "t0k"], {}, children);
    const post = async (session: string | undefined, command: string) => {
      const response = await fetch(`${served.url}/v1/batches`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json",
          authorization: "Bearer t0k",
          ...(session === undefined ? {} : { "x-toolpool-session": session }),
        },
        body: JSON.stringify({ assistantMessage: batch(command) }),
      });
      expect(response.status).toBe(200);
      return (await response.json()) as { messages: { content: { text: string }[]; isError: boolean }[] };
    };
    const alice = await post("alice", "pwd; echo alice > who.txt");
    const bob = await post("bob", "pwd; echo bob > who.txt");
    const nobody = await post(undefined, "pwd");
    expect(alice.messages[0]!.content[0]!.text).toBe(`${join(root, "alice")}\n`);
    expect(bob.messages[0]!.content[0]!.text).toBe(`${join(root, "bob")}\n`);
    expect(nobody.messages[0]!.content[0]!.text).toBe(`${root}\n`);
    expect(readFileSync(join(root, "alice", "who.txt"), "utf8")).toBe("alice\n");
    expect(readFileSync(join(root, "bob", "who.txt"), "utf8")).toBe("bob\n");
    // Confined: a path outside the session's folder is an error result naming it.
    expect(alice.messages[1]).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining('Path "/etc/hostname" is outside the workspace') }],
    });
    served.child.kill("SIGTERM");
    expect((await served.exited)[0]).toBe(0);
  }, 120_000);

  it("mcp --http: each MCP session in a folder of its own", async () => {
    const root = join(base, "mcp");
    mkdirSync(root, { recursive: true });
    const { child } = spawnToolpool(["mcp", "--http", "127.0.0.1:0", "--coding-tools", "read,bash,ls", "--root", root, "--token", "t0k"], {
      children,
    });
    let stdout = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    while (!/listening on \S+\n/.test(stdout)) await once(child.stdout!, "data");
    const url = /listening on (\S+)/.exec(stdout)![1]!;
    const texts: string[] = [];
    for (const name of ["first", "second"]) {
      const client = new Client({ name, version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: "Bearer t0k" } } }));
      const listed = await client.listTools();
      expect(listed.tools.map((tool) => tool.name).sort()).toEqual(["bash", "ls", "read"]);
      const result = (await client.callTool({ name: "bash", arguments: { command: `pwd; echo ${name} > mine.txt` } })) as {
        content: { text: string }[];
      };
      texts.push(result.content[0]!.text);
      await client.close();
    }
    // Two sessions, two folders under the root, each holding its own file.
    expect(texts[0]).not.toBe(texts[1]);
    const folders = readdirSync(root);
    expect(folders).toHaveLength(2);
    for (const text of texts) expect(text.startsWith(root)).toBe(true);
    expect(folders.map((folder) => readFileSync(join(root, folder, "mine.txt"), "utf8")).sort()).toEqual(["first\n", "second\n"]);
    child.kill("SIGTERM");
    expect((await once(child, "exit"))[0]).toBe(0);
  }, 120_000);

  it.skipIf(writeOldFd(join(base, "old-fd")) === undefined)(
    "serve and mcp say when they start, before any call, which fd find needs where the one found is older",
    async () => {
      const root = join(base, "fd");
      mkdirSync(root, { recursive: true });
      // pi looks for its fd in the agent folder's bin/ before PATH: there, an fd that refuses --no-require-git, as fd 8.6 does.
      const env = { PI_CODING_AGENT_DIR: join(base, "old-fd") };
      const saysFd = /ToolpoolWarning: pi's find needs fd 8\.7\.0 or later outside a git repository.*\(fd 8\.6\.0\)/;
      const served = await spawnServe(["--coding-tools", "read,find", "--root", root, "--threads", "1"], env, children);
      while (!saysFd.test(served.stderr()) && served.child.exitCode === null) await once(served.child.stderr!, "data");
      expect(served.stderr()).toMatch(saysFd);
      served.child.kill("SIGTERM");
      expect((await served.exited)[0]).toBe(0);

      const { child: mcp, stderr } = spawnToolpool(["mcp", "--coding-tools", "find", "--root", root], { env, children, stdin: "pipe" });
      while (!saysFd.test(stderr()) && mcp.exitCode === null) await once(mcp.stderr!, "data");
      expect(stderr()).toMatch(saysFd);
      mcp.stdin!.end();
      mcp.kill("SIGTERM");
      await once(mcp, "exit");
    },
    60_000,
  );

  it("refuses --coding-tools with --pi 0.73, and --bash-timeout without --coding-tools (exit 2)", async () => {
    for (const args of [
      ["serve", "--port", "0", "--coding-tools", "--pi", "0.73"],
      ["serve", "--port", "0", "--bash-timeout", "1000"],
    ]) {
      const { stderr, exited } = spawnToolpool(args, { children });
      const [code] = await exited;
      expect(code).toBe(2);
      expect(stderr()).toMatch(/--coding-tools/);
    }
  }, 60_000);
});
