import { spawn } from "node:child_process";
import { once } from "node:events";
import { request as httpRequest } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ProgressNotificationSchema, type CallToolResult, type ProgressNotification } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { createRuntime, supportsPi16, ToolpoolError, type AgentTool, type Runtime } from "toolpool";
import { checkBrowserGuard, createMcpServer, McpHttpServer } from "toolpool/mcp";

import { warnSkippedPi16 } from "./support/pi16.js";
import { textOf } from "./support/helpers.js";

warnSkippedPi16("test/mcp.test.ts");

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = join(ROOT, "dist", "cli", "main.js");
const TOOLS = join(ROOT, "test", "fixtures", "mcp", "tools.mjs");
const HOOKS = join(ROOT, "test", "fixtures", "mcp", "hooks.mjs");
const TOKEN = "mcp-test-token";

/** A client connected to a `toolpool mcp` process, and what the process wrote on stderr. */
interface McpSession {
  client: Client;
  /**
   * Receives every progress notification as it comes off the wire. Not
   * through `onprogress`: SDK 1.x's client dispatches notifications a
   * microtask late but a response at once, so a notification read in the
   * same chunk as the response finds its `onprogress` retired and is dropped
   * (modelcontextprotocol/typescript-sdk#2580), a client-side race no server
   * can prevent. Handlers queued before the response still run before
   * `callTool` resolves, so this sees exactly what the server sent, in order.
   */
  progressListeners: Set<(params: ProgressNotification["params"]) => void>;
  /** Resolves once the server's stderr matches `pattern`. */
  untilStderr(pattern: RegExp): Promise<string>;
  close(): Promise<void>;
}

/** Collects a stream's text and lets a test wait for a line, without sleeping. */
function watchText(stream: NodeJS.ReadableStream | null): (pattern: RegExp) => Promise<string> {
  let text = "";
  const waiters: { pattern: RegExp; resolve: (text: string) => void }[] = [];
  stream?.on("data", (chunk: Buffer | string) => {
    text += chunk.toString();
    for (const waiter of waiters.splice(0)) {
      if (waiter.pattern.test(text)) waiter.resolve(text);
      else waiters.push(waiter);
    }
  });
  return (pattern) => (pattern.test(text) ? Promise.resolve(text) : new Promise((resolve) => waiters.push({ pattern, resolve })));
}

async function startStdio(args: string[]): Promise<McpSession> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp", ...args], cwd: ROOT, stderr: "pipe" });
  const untilStderr = watchText(transport.stderr as NodeJS.ReadableStream | null);
  const client = new Client({ name: "toolpool-test", version: "1.0.0" });
  const progressListeners = listenToProgress(client);
  await client.connect(transport);
  return { client, progressListeners, untilStderr, close: () => client.close() };
}

async function startHttp(args: string[]): Promise<McpSession> {
  const child = spawn(process.execPath, [CLI, "mcp", "--http", "127.0.0.1:0", "--token", TOKEN, ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const untilStderr = watchText(child.stderr);
  const untilStdout = watchText(child.stdout);
  const exited = once(child, "exit");
  const url = /listening on (\S+)/.exec(await untilStdout(/listening on \S+\n/))![1]!;
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
  });
  const client = new Client({ name: "toolpool-test", version: "1.0.0" });
  const progressListeners = listenToProgress(client);
  await client.connect(transport);
  return {
    client,
    progressListeners,
    untilStderr,
    close: async () => {
      await transport.terminateSession().catch(() => {});
      await client.close();
      child.kill("SIGTERM");
      await exited;
    },
  };
}

function listenToProgress(client: Client): McpSession["progressListeners"] {
  const listeners: McpSession["progressListeners"] = new Set();
  client.setNotificationHandler(ProgressNotificationSchema, ({ params }) => {
    for (const listener of listeners) listener(params);
  });
  return listeners;
}

/** Options of a call that asks for progress: with `onprogress`, the client sends a progressToken. */
const withProgress = { onprogress: () => {} };

const call = (session: McpSession, name: string, args: Record<string, unknown>) =>
  session.client.callTool({ name, arguments: args }) as Promise<CallToolResult>;

let channelCount = 0;
const rendezvousChannel = () => `mcp-rendezvous-${process.pid}-${++channelCount}`;

describe.each([
  ["stdio", startStdio],
  // One session, which may hold both threads (over HTTP a session holds half a pool's threads by default).
  ["Streamable HTTP", (args: string[]) => startHttp([...args, "--max-session-running", "2"])],
] as const)("toolpool mcp over %s", (_transport, start) => {
  let session: McpSession;
  beforeAll(async () => {
    session = await start(["--tools", TOOLS, "--hooks", HOOKS, "--threads", "2"]);
  });
  afterAll(async () => {
    await session?.close();
  });

  it("lists the tools with their JSON schemas", async () => {
    const { tools } = await session.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["work", "fault", "rendezvous"]);
    const rendezvous = tools.find((tool) => tool.name === "rendezvous")!;
    expect(rendezvous.description).toBe("Waits until `parties` calls on `channel` run at once.");
    expect(rendezvous.inputSchema).toMatchObject({
      type: "object",
      properties: { channel: { type: "string" }, parties: { type: "integer", minimum: 1 } },
      required: ["channel", "parties"],
    });
  });

  it("calls a tool: its content, and its details as structured content", async () => {
    const result = await call(session, "work", { text: "hello over mcp" });
    expect(result.isError).toBe(false);
    expect(textOf(result)).toBe("hello over mcp");
    expect(result.structuredContent).toMatchObject({ details: { args: { text: "hello over mcp" } } });
  });

  it("answers invalid arguments with an error result naming the problem", async () => {
    const result = await call(session, "work", { count: "many" });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('Validation failed for tool "work"');
    expect(textOf(result)).toContain("count");
  });

  it("runs the runtime's hooks: a blocked call is an error result with the hook's reason", async () => {
    const result = await call(session, "work", { text: "blocked" });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe("blocked by the hook");
  });

  it("sends the tool's partial results as progress notifications, in order, before the result", async () => {
    const progress: { progress: number; message?: string; partial: unknown }[] = [];
    const onProgress = (params: ProgressNotification["params"]) => {
      const meta = params._meta as Record<string, unknown> | undefined;
      progress.push({ progress: params.progress, message: params.message, partial: meta?.["toolpool/partialResult"] });
    };
    session.progressListeners.add(onProgress);
    let result: CallToolResult;
    try {
      result = (await session.client.callTool(
        { name: "work", arguments: { updates: ["one", "two", "three"], text: "done" } },
        undefined,
        withProgress,
      )) as CallToolResult;
    } finally {
      session.progressListeners.delete(onProgress);
    }
    expect(textOf(result)).toBe("done");
    expect(progress.map((entry) => [entry.progress, entry.message])).toEqual([
      [1, "one"],
      [2, "two"],
      [3, "three"],
    ]);
    expect(progress[2]!.partial).toEqual({ content: [{ type: "text", text: "three" }], details: { update: "three" } });
  });

  it("turns a crashing tool into an error result with the fault's code, and keeps serving", async () => {
    const result = await call(session, "fault", { fault: "crash" });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ code: "TP_ERR_WORKER_CRASH" });
    expect(textOf(result)).toContain("crashed its worker");
    const next = await call(session, "work", { text: "still serving" });
    expect(textOf(next)).toBe("still serving");
  });

  it("runs concurrent calls in parallel on the pool", async () => {
    const channel = rendezvousChannel();
    const results = await Promise.all([call(session, "rendezvous", { channel, parties: 2 }), call(session, "rendezvous", { channel, parties: 2 })]);
    // Each call waited until it saw the other one running.
    expect(results.map((result) => result.structuredContent)).toEqual([{ details: { met: true, seen: 2 } }, { details: { met: true, seen: 2 } }]);
  });

  it("cancels a call that honours its signal cooperatively", async () => {
    const controller = new AbortController();
    const onProgress = () => controller.abort();
    session.progressListeners.add(onProgress);
    // Says it started, then waits at a gate nobody opens, listening to its signal.
    const cancelled = session.client.callTool({ name: "work", arguments: { updates: ["started"], gate: "never-opened" } }, undefined, {
      ...withProgress,
      signal: controller.signal,
    });
    await expect(cancelled).rejects.toThrow(/abort/i);
    session.progressListeners.delete(onProgress);
    // It stopped by itself (the tool's own error), before any termination.
    await session.untilStderr(/\(work\) cancelled by the client; it ended with an error\n/);
  });

  it("cancels a CPU-bound call that ignores its signal by terminating its worker", async () => {
    const controller = new AbortController();
    // The tool's first partial says it is spinning: cancel then.
    const onProgress = () => controller.abort();
    session.progressListeners.add(onProgress);
    const cancelled = session.client.callTool({ name: "fault", arguments: { fault: "stubborn" } }, undefined, {
      ...withProgress,
      signal: controller.signal,
    });
    await expect(cancelled).rejects.toThrow(/abort/i);
    session.progressListeners.delete(onProgress);
    // The call ignored the abort: after the grace period its worker was terminated.
    await session.untilStderr(/cancelled by the client; it ended with an error \(TP_ERR_ABORTED\)/);
    // Both threads serve again (the terminated one was replaced): two calls meet.
    const channel = rendezvousChannel();
    const results = await Promise.all([call(session, "rendezvous", { channel, parties: 2 }), call(session, "rendezvous", { channel, parties: 2 })]);
    expect(results.map((result) => (result.structuredContent as { details: { met: boolean } }).details.met)).toEqual([true, true]);
  });
});

describe("toolpool mcp with the built-in tools", () => {
  it("annotates grep, hash and diff as read-only, and patch as destructive only with --allow-write", async () => {
    const readOnly = await startStdio(["--threads", "1"]);
    try {
      const { tools } = await readOnly.client.listTools();
      expect(tools.find((tool) => tool.name === "patch")?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    } finally {
      await readOnly.close();
    }
    const session = await startStdio(["--threads", "1", "--allow-write"]);
    try {
      const { tools } = await session.client.listTools();
      const hints = Object.fromEntries(tools.map((tool) => [tool.name, tool.annotations]));
      for (const name of ["grep", "hash", "diff"]) expect(hints[name]).toMatchObject({ readOnlyHint: true, destructiveHint: false });
      expect(hints.patch).toMatchObject({ readOnlyHint: false, destructiveHint: true });
      const result = (await session.client.callTool({ name: "hash", arguments: { text: "abc" } })) as CallToolResult;
      expect(textOf(result)).toContain("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    } finally {
      await session.close();
    }
  });

  it("confines the built-in tools to --root", async () => {
    const session = await startStdio(["--threads", "1", "--root", "test/fixtures"]);
    try {
      const outside = (await session.client.callTool({ name: "hash", arguments: { path: "/etc/passwd" } })) as CallToolResult;
      expect(outside.isError).toBe(true);
      expect(textOf(outside)).toContain("outside the workspace root");
      const inside = (await session.client.callTool({ name: "hash", arguments: { path: "cli/invalid.json" } })) as CallToolResult;
      expect(inside.isError).toBe(false);
    } finally {
      await session.close();
    }
  });
});

describe.skipIf(!supportsPi16())("toolpool mcp --pi 1.6 (pi 1.6, Node >= 22.19)", () => {
  it("serves the tools: a call runs, and invalid arguments are an error result", async () => {
    const session = await startStdio(["--tools", TOOLS, "--threads", "1", "--pi", "1.6"]);
    try {
      const { tools } = await session.client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(["work", "fault", "rendezvous"]);
      const result = await call(session, "work", { text: "hello from pi 1.6" });
      expect(result.isError).toBe(false);
      expect(textOf(result)).toBe("hello from pi 1.6");
      const invalid = await call(session, "work", { count: "many" });
      expect(invalid.isError).toBe(true);
      expect(textOf(invalid)).toContain('Validation failed for tool "work"');
    } finally {
      await session.close();
    }
  });
});

describe("checkBrowserGuard", () => {
  it("on a tokenless server, answers only loopback Host values (with or without port) and allowed hosts", () => {
    for (const host of ["localhost", "localhost:8080", "127.0.0.1", "127.0.0.1:1", "[::1]", "[::1]:9000", "LOCALHOST:1"]) {
      expect(checkBrowserGuard(host, undefined, { hasToken: false }), host).toEqual({ kind: "allow" });
    }
    for (const host of [undefined, "evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil:80", "10.0.0.1"]) {
      expect(checkBrowserGuard(host, undefined, { hasToken: false }), String(host)).toMatchObject({
        kind: "deny",
        status: 403,
        code: "TP_ERR_FORBIDDEN",
      });
    }
    expect(checkBrowserGuard("tools.internal:8080", undefined, { hasToken: false, allowedHosts: ["tools.internal:8080"] })).toEqual({
      kind: "allow",
    });
    // With a token any Host is fine: a rebinding page cannot have the token.
    expect(checkBrowserGuard("evil.example", undefined, { hasToken: true })).toEqual({ kind: "allow" });
  });

  it("refuses every Origin not allowed, on every server", () => {
    for (const hasToken of [false, true]) {
      expect(checkBrowserGuard("localhost", "http://evil.example", { hasToken })).toMatchObject({ kind: "deny", code: "TP_ERR_FORBIDDEN" });
      expect(checkBrowserGuard("localhost", "http://localhost:3000", { hasToken })).toMatchObject({ kind: "deny" });
      expect(checkBrowserGuard("localhost", "http://localhost:3000", { hasToken, allowedOrigins: ["http://localhost:3000"] })).toEqual({
        kind: "allow",
      });
    }
  });
});

describe("McpHttpServer protections", () => {
  const echo: AgentTool = {
    name: "echo",
    label: "Echo",
    description: "echoes",
    parameters: { type: "object", properties: { text: { type: "string" } } },
    execute: async (_id, args: { text?: string }) => ({ content: [{ type: "text", text: args.text ?? "" }], details: {} }),
  };
  let runtime: Runtime;
  const servers: McpHttpServer[] = [];
  beforeAll(() => {
    runtime = createRuntime({ tools: [echo] });
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
    await runtime.close();
  });
  const startServer = async (options: ConstructorParameters<typeof McpHttpServer>[1]) => {
    const server = new McpHttpServer(() => createMcpServer(runtime), options);
    servers.push(server);
    return new URL(await server.listen());
  };
  const initialize = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  });
  /** A raw POST, so that Host and Origin can be anything. */
  const post = (url: URL, headers: Record<string, string>, body = initialize) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = httpRequest(
        url,
        { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers } },
        (response) => {
          let text = "";
          response.on("data", (chunk: Buffer) => (text += chunk.toString()));
          response.on("end", () => resolve({ status: response.statusCode ?? 0, body: text }));
        },
      );
      request.on("error", reject);
      request.end(body);
    });

  it("without a token: refuses a foreign Host or Origin with 403 TP_ERR_FORBIDDEN, serves localhost", async () => {
    const url = await startServer({});
    const foreignHost = await post(url, { host: "evil.example" });
    expect(foreignHost.status).toBe(403);
    expect(JSON.parse(foreignHost.body)).toMatchObject({ code: "TP_ERR_FORBIDDEN" });
    const foreignOrigin = await post(url, { origin: "http://evil.example" });
    expect(foreignOrigin.status).toBe(403);
    expect(JSON.parse(foreignOrigin.body).message).toContain("http://evil.example");
    const local = await post(url, { host: `localhost:${url.port}` });
    expect(local.status).toBe(200);
  });

  it("with a token: 401 without it or with a wrong one, and the Origin check still holds", async () => {
    const url = await startServer({ token: "s3cret" });
    expect((await post(url, {})).status).toBe(401);
    expect((await post(url, { authorization: "Bearer wrong" })).status).toBe(401);
    expect((await post(url, { authorization: "Bearer s3cret", origin: "http://evil.example" })).status).toBe(403);
    const ok = await post(url, { authorization: "Bearer s3cret", host: "tools.example.com" });
    expect(ok.status).toBe(200);
  });

  it("refuses a token no client can send (beyond visible ASCII) with TP_ERR_INVALID_OPTION, before it listens", () => {
    for (const token of ["secret€token", "two words", ""]) {
      let thrown: unknown;
      try {
        new McpHttpServer(() => createMcpServer(runtime), { token });
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(token)).toBeInstanceOf(ToolpoolError);
      expect((thrown as ToolpoolError).code).toBe("TP_ERR_INVALID_OPTION");
      expect((thrown as Error).message).toMatch(/^Expected `token` to be visible ASCII characters \(0x21–0x7E\)/);
    }
  });

  it("refuses an earlyRefusals that is not a function with TP_ERR_INVALID_OPTION", () => {
    expect(() => new McpHttpServer(() => createMcpServer(runtime), { earlyRefusals: "gate" as never })).toThrow(
      expect.objectContaining({ code: "TP_ERR_INVALID_OPTION", message: expect.stringMatching(/^Expected `earlyRefusals` to be a function/) }),
    );
  });

  it("answers a body past maxBodyBytes with 413, and a request outside a session with 400", async () => {
    const url = await startServer({ maxBodyBytes: 64 });
    expect((await post(url, {}, JSON.stringify({ padding: "x".repeat(100) }))).status).toBe(413);
    const notInitialize = await post(url, {}, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
    expect(notInitialize.status).toBe(400);
  });

  it("never locks new clients out: past maxSessions the least recently used session is closed", async () => {
    const url = await startServer({ maxSessions: 2 });
    const sessionIds: string[] = [];
    for (let index = 0; index < 3; index++) {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: initialize,
      });
      expect(response.status).toBe(200);
      await response.body?.cancel();
      sessionIds.push(response.headers.get("mcp-session-id")!);
    }
    const ping = (id: string) =>
      post(url, { "mcp-session-id": id, "mcp-protocol-version": "2025-06-18" }, JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" }));
    // The first session was used least recently: it is gone, the others serve.
    expect((await ping(sessionIds[0]!)).status).toBe(404);
    expect((await ping(sessionIds[2]!)).status).toBe(200);
  });

  it("serves a full session to the SDK's client", async () => {
    const url = await startServer({ token: "s3cret" });
    const client = new Client({ name: "in-process", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: "Bearer s3cret" } } }));
    try {
      const result = (await client.callTool({ name: "echo", arguments: { text: "in process" } })) as CallToolResult;
      expect(textOf(result)).toBe("in process");
    } finally {
      await client.close();
    }
  });
});

describe("toolpool mcp: usage errors", () => {
  const runCli = (args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [CLI, "mcp", ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.on("exit", (code) => resolve({ code, stdout, stderr }));
    });

  it.each([
    [["--http", "nope"], /--http.*Expected PORT or HOST:PORT/],
    [["--http", "0.0.0.0:0"], /not a loopback address: set --token or TOOLPOOL_TOKEN/],
    [["--root", "/no/such/dir"], /Expected `root` to be an existing directory/],
    [["--max-session-running", "2"], /--max-session-running needs --http/],
    [["--http", "127.0.0.1:0", "--token", "two words"], /the bearer token holds whitespace/],
    [["--http", "127.0.0.1:0", "--token", "secret€token"], /the bearer token holds U\+20AC at character 7, outside visible ASCII \(0x21–0x7E\)/],
    [["--http", "127.0.0.1:0", "--token-file", "/no/such/token"], /cannot read --token-file/],
  ])("exits 2 with one line for %j", async (args, message) => {
    const { code, stdout, stderr } = await runCli(args);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(message);
  });
});
