import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, describe, expect, it } from "vitest";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = join(ROOT, "dist", "cli", "main.js");
const LOAD_TOOLS = join(ROOT, "test", "fixtures", "mcp", "load-tools.mjs");
const PROTOCOL_VERSION = "2025-06-18";

/** A `toolpool mcp --http` child process serving the load tools. */
interface McpProcess {
  url: URL;
  child: ChildProcess;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  /** Resolves once stderr matches `pattern`. */
  untilStderr(pattern: TextMatch): Promise<string>;
}

const children: ChildProcess[] = [];
const clients: Client[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => {})));
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

/** What a test waits for in a child's output: a pattern, or any test of the text so far. */
type TextMatch = RegExp | { test(text: string): boolean };

function watchText(stream: NodeJS.ReadableStream): (pattern: TextMatch) => Promise<string> {
  let text = "";
  const waiters: { pattern: TextMatch; resolve: (text: string) => void }[] = [];
  stream.on("data", (chunk: Buffer | string) => {
    text += chunk.toString();
    for (const waiter of waiters.splice(0)) {
      if (waiter.pattern.test(text)) waiter.resolve(text);
      else waiters.push(waiter);
    }
  });
  return (pattern) => (pattern.test(text) ? Promise.resolve(text) : new Promise((resolve) => waiters.push({ pattern, resolve })));
}

async function startMcp(args: string[], nodeArgs: string[] = []): Promise<McpProcess> {
  const child = spawn(process.execPath, [...nodeArgs, CLI, "mcp", "--http", "127.0.0.1:0", "--tools", LOAD_TOOLS, ...args], {
    cwd: ROOT,
    env: { ...process.env, TOOLPOOL_TOKEN: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const untilStderr = watchText(child.stderr!);
  const untilStdout = watchText(child.stdout!);
  const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
  const listening = await Promise.race([
    untilStdout(/listening on \S+\n/),
    exited.then(async () => {
      throw new Error(`toolpool mcp exited before listening: ${await untilStderr(/^/)}`);
    }),
  ]);
  const url = /listening on (\S+)/.exec(listening)![1]!;
  return { url: new URL(url), child, exited, untilStderr };
}

async function stop(server: McpProcess): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGTERM");
  await server.exited;
}

async function connect(server: McpProcess): Promise<Client> {
  const client = new Client({ name: "load-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(server.url));
  clients.push(client);
  return client;
}

/** Calls a tool; `timeout` only guards against a hang (the SDK's default is 60 s). */
const callTool = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 }) as Promise<CallToolResult>;

/** `gates` (see fixtures/mcp/load-tools.mjs): waits, opens, counts inside the server process. */
async function gates(client: Client, args: Record<string, unknown>): Promise<number | null> {
  const result = await callTool(client, "gates", args);
  expect(result.isError).toBe(false);
  return (result.structuredContent as { details: { count: number | null } }).details.count;
}

const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** A raw `initialize`: the HTTP status, the session id and the headers. */
async function initialize(server: McpProcess): Promise<{ status: number; sessionId: string | null; retryAfter: string | null; body: unknown }> {
  const response = await fetch(server.url, {
    method: "POST",
    headers,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    }),
  });
  const text = await response.text();
  const body: unknown = response.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text;
  return { status: response.status, sessionId: response.headers.get("mcp-session-id"), retryAfter: response.headers.get("retry-after"), body };
}

/** A JSON-RPC message as it arrives on a POST's event stream. */
type Message = {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: CallToolResult;
  error?: { code: number; message: string; data?: Record<string, unknown> };
};

/** A raw POST to a session whose event stream is read message by message (or not read at all). */
interface RawPost {
  request: ClientRequest;
  response: Promise<IncomingMessage>;
  /** Every message so far. */
  messages: Message[];
  /** Resolves once a message matches. */
  until(match: (message: Message) => boolean): Promise<Message>;
  /** Resolves once the stream ended. */
  ended: Promise<void>;
}

function post(server: McpProcess, sessionId: string, body: unknown, options: { paused?: boolean } = {}): RawPost {
  const messages: Message[] = [];
  const waiters: { match: (message: Message) => boolean; resolve: (message: Message) => void }[] = [];
  let resolveEnded!: () => void;
  const ended = new Promise<void>((resolve) => (resolveEnded = resolve));
  const request = httpRequest(server.url, {
    method: "POST",
    headers: { ...headers, "mcp-session-id": sessionId, "mcp-protocol-version": PROTOCOL_VERSION },
  });
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    request.on("error", reject);
    request.on("response", (incoming) => {
      if (options.paused === true) incoming.pause();
      let buffer = "";
      incoming.setEncoding("utf8");
      incoming.on("data", (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = event
            .split("\n")
            .filter((line) => line.startsWith("data: "))
            .map((line) => line.slice(6))
            .join("\n");
          if (data === "") continue;
          const message = JSON.parse(data) as Message;
          messages.push(message);
          for (const waiter of waiters.splice(0)) {
            if (waiter.match(message)) waiter.resolve(message);
            else waiters.push(waiter);
          }
        }
      });
      incoming.on("end", resolveEnded);
      incoming.on("close", resolveEnded);
      resolve(incoming);
    });
  });
  request.on("error", () => {});
  request.end(JSON.stringify(body));
  return {
    request,
    response,
    messages,
    ended,
    until: (match) => {
      const found = messages.find(match);
      return found !== undefined ? Promise.resolve(found) : new Promise((resolve) => waiters.push({ match, resolve }));
    },
  };
}

const toolCall = (id: number, name: string, args: Record<string, unknown>, progressToken?: number) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args, ...(progressToken === undefined ? {} : { _meta: { progressToken } }) },
});

/** The toolpool code of a JSON-RPC error as the SDK's client throws it. */
async function refusalOf(call: Promise<unknown>): Promise<{ code: unknown; message: string; data: Record<string, unknown> }> {
  const error = await call.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(McpError);
  const { code, message, data } = error as McpError;
  return { code, message, data: data as Record<string, unknown> };
}

describe("toolpool mcp --http: sessions", () => {
  it("never closes a session with a call in flight: a new initialize gets 503 with Retry-After, and every call is answered", async () => {
    const server = await startMcp(["--threads", "3", "--max-sessions", "3"]);
    try {
      const sessions = [await connect(server), await connect(server), await connect(server)];
      const calls = sessions.map((client, index) => callTool(client, "hold", { key: `busy-${index}` }));
      await gates(sessions[0]!, { waitForCount: { prefix: "started:busy-", count: 3 } });

      const refused = await initialize(server);
      expect(refused.status).toBe(503);
      expect(refused.retryAfter).toBe("1");
      expect(refused.body).toMatchObject({ jsonrpc: "2.0", error: { code: -32000, data: { code: "TP_ERR_TOO_MANY_SESSIONS" } } });
      expect((refused.body as { error: { message: string } }).error.message).toContain("maxSessions 3");

      await gates(sessions[0]!, { openPrefix: "busy-" });
      const results = await Promise.all(calls);
      expect(results.map((result) => (result.content[0] as { text: string }).text)).toEqual(["held busy-0", "held busy-1", "held busy-2"]);
      // Idle now: the session used least recently makes room.
      expect((await initialize(server)).status).toBe(200);
    } finally {
      await stop(server);
    }
  }, 120_000);

  it("answers a call cut short by its client closing the session with a JSON-RPC error, and aborts it", async () => {
    const server = await startMcp(["--threads", "2"]);
    try {
      const [owner, control] = [await connect(server), await connect(server)];
      const refused = refusalOf(callTool(owner, "hold", { key: "closed-1" }));
      await gates(control, { waitFor: ["started:closed-1"] });
      await (owner.transport as StreamableHTTPClientTransport).terminateSession();
      const refusal = await refused;
      expect(refusal.code).toBe(-32000);
      expect(refusal.data).toEqual({ code: "TP_ERR_SESSION_CLOSED" });
      expect(refusal.message).toContain("closed by its client");
      // The tool saw its signal: it stopped waiting at its gate.
      await server.untilStderr(/call mcp-\d+ \(hold\) cancelled \(The MCP session was closed by its client[^)]*\); it ended with an error/);
    } finally {
      await stop(server);
    }
  }, 120_000);

  it("answers the calls in flight with a JSON-RPC error when the server shuts down", async () => {
    const server = await startMcp(["--threads", "2"]);
    const [owner, control] = [await connect(server), await connect(server)];
    const refusals = ["term-1", "term-2"].map((key) => refusalOf(callTool(owner, "hold", { key })));
    await gates(control, { waitForCount: { prefix: "started:term-", count: 2 } });
    server.child.kill("SIGTERM");
    for (const refused of refusals) {
      const refusal = await refused;
      expect(refusal.data).toEqual({ code: "TP_ERR_CLOSED" });
      expect(refusal.message).toContain("shutting down");
    }
    expect((await server.exited)[0]).toBe(0);
  }, 120_000);
});

describe("toolpool mcp --http: calls whose client is gone", () => {
  it("cancels the calls of a POST whose connection closed: those still waiting for a thread never start", async () => {
    const server = await startMcp(["--threads", "2"]);
    try {
      const control = await connect(server);
      const { sessionId } = await initialize(server);
      const batch = Array.from({ length: 20 }, (_, index) => toolCall(index + 1, "hold", { key: `drop-${index}` }));
      const dropped = post(server, sessionId!, batch);
      await dropped.response;
      // Two run (one per thread), eighteen wait.
      await gates(control, { waitForCount: { prefix: "started:drop-", count: 2 } });
      dropped.request.destroy();
      await server.untilStderr(/the client went away before 20 of its requests were answered; they were cancelled/);
      // Whatever is left of the batch may run to its end from now on.
      await gates(control, { openPrefix: "drop-" });
      // A later call of the same session waits behind any of them that would still start.
      const later = post(server, sessionId!, toolCall(100, "hold", { key: "later" }));
      await gates(control, { waitFor: ["started:later"], open: ["later"] });
      expect((await later.until((message) => message.id === 100)).result).toMatchObject({ isError: false });
      expect(await gates(control, { countPrefix: "started:drop-" })).toBe(2);
    } finally {
      await stop(server);
    }
  }, 120_000);

  it("holds a call's progress while its client reads nothing: the server keeps only the latest partials", async () => {
    const server = await startMcp(["--threads", "2"]);
    try {
      const control = await connect(server);
      const { sessionId } = await initialize(server);
      const count = 600;
      const slow = post(server, sessionId!, toolCall(1, "flood", { key: "slow", count, bytes: 256 * 1024 }, 1), { paused: true });
      const response = await slow.response;
      // The tool has sent every partial and returned while its client read nothing.
      await gates(control, { waitFor: ["flooded:slow"] });
      response.resume();
      const result = await slow.until((message) => message.id === 1);
      expect(result.result).toMatchObject({ isError: false, content: [{ type: "text", text: `sent ${count}` }] });
      const progress = slow.messages
        .filter((message) => message.method === "notifications/progress")
        .map((message) => Number(message.params!.message));
      // Without a bound the server would have held all 600 for the client (150 MiB).
      expect(progress.length).toBeLessThan(count / 2);
      expect(progress.at(-1)).toBe(count);
      expect(progress).toEqual([...progress].sort((a, b) => a - b));
    } finally {
      await stop(server);
    }
  }, 120_000);
});

describe("toolpool mcp --http: load limits", () => {
  it("refuses calls past --max-session-calls and --max-queue with JSON-RPC errors that say which limit", async () => {
    const server = await startMcp(["--threads", "1", "--max-queue", "1", "--max-session-calls", "2", "--retry-after", "3"]);
    try {
      const [control, other] = [await connect(server), await connect(server)];
      const { sessionId } = await initialize(server);
      const batch = post(
        server,
        sessionId!,
        [1, 2, 3].map((id) => toolCall(id, "hold", { key: `q-${id}` })),
      );
      // The first runs, the second waits, the third is one too many for the session.
      const third = await batch.until((message) => message.id === 3);
      expect(third.error).toMatchObject({ code: -32000, data: { code: "TP_ERR_QUEUE_FULL", retryAfterSeconds: 3 } });
      expect(third.error!.message).toContain("maxSessionCalls 2");
      await gates(control, { waitFor: ["started:q-1"] });
      // The queue holds one call already.
      const full = await refusalOf(callTool(other, "hold", { key: "q-4" }));
      expect(full.data).toEqual({ code: "TP_ERR_QUEUE_FULL", retryAfterSeconds: 3 });
      expect(full.message).toContain("maxQueue 1");
      await gates(control, { openPrefix: "q-" });
      expect((await batch.until((message) => message.id === 2)).result).toMatchObject({ isError: false });
      expect(await gates(control, { countPrefix: "started:q-" })).toBe(2);
    } finally {
      await stop(server);
    }
  }, 120_000);

  it("refuses requests with 503 TP_ERR_OVERLOADED and Retry-After past --max-rss", async () => {
    const server = await startMcp(["--max-rss", "1"]);
    try {
      const refused = await initialize(server);
      expect(refused.status).toBe(503);
      expect(refused.retryAfter).toBe("1");
      expect(refused.body).toMatchObject({ error: { code: -32000, data: { code: "TP_ERR_OVERLOADED", retryAfterSeconds: 1 } } });
      expect((refused.body as { error: { message: string } }).error.message).toMatch(/overloaded \(RSS \d+ bytes\)/);
    } finally {
      await stop(server);
    }
  }, 120_000);

  it("ends a worker call past --call-timeout with TP_ERR_TIMEOUT", async () => {
    const server = await startMcp(["--threads", "1", "--call-timeout", "200"]);
    try {
      const client = await connect(server);
      const result = await callTool(client, "hold", { key: "never-opened" });
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({ code: "TP_ERR_TIMEOUT" });
    } finally {
      await stop(server);
    }
  }, 120_000);
});

describe("toolpool mcp on stdio: the end of input", () => {
  /**
   * Pipes `messages` into a stdio `toolpool mcp` and closes its input at
   * once, as `cat requests | toolpool mcp` does; resolves once it exited.
   */
  async function pipeInto(args: string[], messages: unknown[]) {
    const child = spawn(process.execPath, [CLI, "mcp", "--tools", LOAD_TOOLS, ...args], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
    children.push(child);
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
    child.stdin!.end(messages.map((message) => `${JSON.stringify(message)}\n`).join(""));
    const [code] = await exited;
    const answers = new Map<number, Message>();
    for (const line of stdout.split("\n").filter((text) => text !== "")) {
      const message = JSON.parse(line) as Message;
      if (message.id !== undefined) answers.set(message.id, message);
    }
    return { code, answers, stderr };
  }

  const opening = [
    {
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "pipe", version: "1" } },
    },
    { jsonrpc: "2.0", method: "notifications/initialized" },
  ];

  it("answers every call read before its input ended, then exits 0", async () => {
    const { code, answers, stderr } = await pipeInto(
      ["--threads", "2"],
      [
        ...opening,
        toolCall(1, "hold", { key: "a" }),
        toolCall(2, "hold", { key: "b" }),
        // Opens both gates once both calls run: they end only after input has ended.
        toolCall(3, "gates", { waitFor: ["started:a", "started:b"], open: ["a", "b"] }),
      ],
    );
    expect(code).toBe(0);
    expect([...answers.keys()].sort()).toEqual([0, 1, 2, 3]);
    expect(answers.get(1)!.result).toMatchObject({ isError: false, content: [{ type: "text", text: "held a" }] });
    expect(answers.get(2)!.result).toMatchObject({ isError: false, content: [{ type: "text", text: "held b" }] });
    expect(answers.get(3)!.result).toMatchObject({ isError: false });
    expect(stderr).toContain("end of input: answering the 3 requests in flight before stopping");
  }, 120_000);

  it("answers a call still running past --drain-timeout with TP_ERR_CLOSED, then exits 0", async () => {
    const { code, answers, stderr } = await pipeInto(
      ["--threads", "1", "--drain-timeout", "1000"],
      [...opening, toolCall(1, "hold", { key: "never-opened" }), toolCall(2, "gates", { waitFor: ["started:never-opened"] })],
    );
    expect(code).toBe(0);
    expect([...answers.keys()].sort()).toEqual([0, 1, 2]);
    expect(answers.get(2)!.result).toMatchObject({ isError: false });
    expect(answers.get(1)!.error).toEqual({
      code: -32000,
      message: "The server's input ended and the request did not end within the drain timeout; it was cancelled",
      data: { code: "TP_ERR_CLOSED" },
    });
    expect(stderr).toContain("1 requests were still running and were answered TP_ERR_CLOSED");
  }, 120_000);
});

describe("toolpool mcp --http: memory", () => {
  /** The server's memory after a full collection (see `memory` in fixtures/mcp/load-tools.mjs). */
  async function memoryOf(client: Client): Promise<{ rss: number; heapUsed: number }> {
    const result = await callTool(client, "memory", {});
    const details = (result.structuredContent as { details: { rss: number; heapUsed: number; hasGc: boolean } }).details;
    expect(details.hasGc).toBe(true);
    return details;
  }

  it("keeps nothing of refused calls whose POSTs were dropped: floods of 5,000 leave the heap where it was", async () => {
    // One thread, held by one call; ten calls may wait: of each POST's 100 calls, 90 are refused at once.
    const server = await startMcp(["--threads", "1", "--max-queue", "10"], ["--expose-gc"]);
    try {
      const control = await connect(server);
      const held = callTool(control, "hold", { key: "held" });
      held.catch(() => {});
      await gates(control, { waitFor: ["started:held"] });
      const { sessionId } = await initialize(server);
      let dropped = 0;
      /** `posts` POSTs of 100 calls (50: 5,000 calls), each dropped by its client once a refusal came. */
      const flood = async (posts = 50) => {
        for (let index = 0; index < posts; index++) {
          const first = dropped * 100 + 1;
          const batch = Array.from({ length: 100 }, (_, call) => toolCall(first + call, "hold", { key: `flood-${first + call}` }));
          const sent = post(server, sessionId!, batch);
          const refused = await sent.until((message) => message.error !== undefined);
          expect(refused.error).toMatchObject({ code: -32000, data: { code: "TP_ERR_QUEUE_FULL" } });
          sent.request.destroy();
          dropped += 1;
          // The server has seen the client go: the ten waiting calls of the POST are cancelled.
          await server.untilStderr({ test: (text) => text.split("went away before 10 of its requests").length > dropped });
        }
      };
      // One flood first: the server's first dropped POSTs compile code, and the first flood grows V8's
      // young generation to the size it keeps (committed, not used: on Node 22 and 26 the heap's
      // committed size rises by 25-40 MB while the heap in use after a collection stays within
      // 1 MB), which is RSS once, whatever comes after, and not what refused calls keep.
      await flood();
      const start = await memoryOf(control);
      await flood();
      const warmed = await memoryOf(control);
      // The bounds, over a flood on a warmed server.
      expect(warmed.rss - start.rss).toBeLessThan(60 * 1024 * 1024);
      expect(warmed.heapUsed - start.heapUsed).toBeLessThan(10 * 1024 * 1024);
      // Three more floods, 15,000 refused calls: refused calls add nothing.
      for (let round = 0; round < 3; round++) await flood();
      const after = await memoryOf(control);
      const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
      console.log(
        `a flood after a first one: RSS +${mb(warmed.rss - start.rss)} MB, heap after GC +${mb(warmed.heapUsed - start.heapUsed)} MB; three more: heap after GC +${mb(after.heapUsed - warmed.heapUsed)} MB`,
      );
      expect(after.heapUsed - warmed.heapUsed).toBeLessThan(1024 * 1024);
      await gates(control, { open: ["held"] });
      expect((await held).isError).toBe(false);
    } finally {
      await stop(server);
    }
  }, 300_000);
});
