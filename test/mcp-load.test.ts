import { spawn } from "node:child_process";
import { once } from "node:events";

import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, afterEach, describe, expect, it } from "vitest";

import {
  CLI,
  callTool,
  children,
  closeClients,
  connect,
  gates,
  initialize,
  killChildren,
  LOAD_TOOLS,
  type Message,
  post,
  PROTOCOL_VERSION,
  refusalOf,
  ROOT,
  startMcp,
  stop,
  toolCall,
} from "./support/mcp-http.js";

afterEach(closeClients);
afterAll(killChildren);

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
    // One session, which may hold both threads.
    const server = await startMcp(["--threads", "2", "--max-session-running", "2"]);
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
    // One session, which may hold both threads.
    const server = await startMcp(["--threads", "2", "--max-session-running", "2"]);
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

  it("answers the calls of a POST refused as it arrives on the POST's stream, before its other answers, whatever else it carries", async () => {
    const server = await startMcp(["--threads", "1", "--max-queue", "0"]);
    try {
      const control = await connect(server);
      const held = callTool(control, "hold", { key: "r-held" });
      held.catch(() => {});
      await gates(control, { waitFor: ["started:r-held"] });
      const { sessionId } = await initialize(server);
      // The thread is taken and nothing may wait: the three calls are refused; tools/list is answered at once.
      const mixed = post(server, sessionId!, [
        { jsonrpc: "2.0", id: 1, method: "tools/list" },
        ...[2, 3, 4].map((id) => toolCall(id, "hold", { key: `r-${id}` })),
      ]);
      await mixed.ended;
      expect(mixed.messages.map((message) => message.id)).toEqual([2, 3, 4, 1]);
      for (const message of mixed.messages.slice(0, 3)) {
        expect(message.error).toMatchObject({ code: -32000, data: { code: "TP_ERR_QUEUE_FULL" } });
        expect(message.error!.message).toContain("maxQueue 0");
      }
      expect(mixed.messages[3]!.result).toHaveProperty("tools");
      // A POST whose every request is refused: each gets its error.
      const refused = post(
        server,
        sessionId!,
        [5, 6].map((id) => toolCall(id, "hold", { key: `r-${id}` })),
      );
      await refused.ended;
      expect(refused.messages.map((message) => [message.id, message.error?.data?.code])).toEqual([
        [5, "TP_ERR_QUEUE_FULL"],
        [6, "TP_ERR_QUEUE_FULL"],
      ]);
      expect(await gates(control, { countPrefix: "started:r-" })).toBe(1);
      await gates(control, { open: ["r-held"] });
      expect((await held).isError).toBe(false);
    } finally {
      await stop(server);
    }
  }, 120_000);

  it("leaves a batch past the SDK's 100 messages whole: the SDK answers it 400, and none of its calls starts", async () => {
    const server = await startMcp(["--threads", "1", "--max-session-calls", "1"]);
    try {
      const control = await connect(server);
      const { sessionId } = await initialize(server);
      // Past --max-session-calls but for the first: early refusal would answer 100 of them and hand on the rest.
      const batch = post(
        server,
        sessionId!,
        Array.from({ length: 101 }, (_, index) => toolCall(index + 1, "hold", { key: `big-${index + 1}` })),
      );
      expect((await batch.response).statusCode).toBe(400);
      await batch.ended;
      expect(await gates(control, { countPrefix: "started:big-" })).toBe(0);
    } finally {
      await stop(server);
    }
  }, 120_000);

  it("frees the id of a call refused as its POST arrives while the POST's other calls run: the client may send it again", async () => {
    const server = await startMcp(["--threads", "1", "--max-session-calls", "1"]);
    try {
      const control = await connect(server);
      const { sessionId } = await initialize(server);
      const mixed = post(server, sessionId!, [toolCall(1, "hold", { key: "id-1" }), toolCall(2, "hold", { key: "id-2" })]);
      expect((await mixed.until((message) => message.id === 2)).error?.data?.code).toBe("TP_ERR_QUEUE_FULL");
      await gates(control, { waitFor: ["started:id-1"] });
      // Id 2 was answered: sent again while call 1 runs, it is refused by the gate again, not as a request in flight.
      const again = post(server, sessionId!, toolCall(2, "hold", { key: "id-2" }));
      expect((await again.response).statusCode).toBe(200);
      expect((await again.until((message) => message.id === 2)).error?.data?.code).toBe("TP_ERR_QUEUE_FULL");
      await gates(control, { open: ["id-1"] });
      expect((await mixed.until((message) => message.id === 1)).result).toMatchObject({ isError: false });
    } finally {
      await stop(server);
    }
  }, 120_000);

  it("keeps one session's long calls from holding up another's: places counted per pool, one session's share bounded", async () => {
    // Two threads on the shared pool and two on the io pool: one session holds at most one of each.
    const server = await startMcp(["--threads", "2"]);
    try {
      const [control, a, b] = [await connect(server), await connect(server), await connect(server)];
      // Session a asks for both shared threads with calls that block (two `sleep 25` in bash): one runs, one waits.
      const held = [callTool(a, "hold", { key: "a-1" }), callTool(a, "hold", { key: "a-2" })];
      await gates(control, { waitForCount: { prefix: "started:a-", count: 1 } });
      // Session b's calls, on the idle io pool and on the shared pool where a is at its share, start and end meanwhile.
      const io = callTool(b, "hold-io", { key: "b-io" });
      const shared = callTool(b, "hold", { key: "b-shared" });
      await gates(control, { waitFor: ["started:b-io", "started:b-shared"], open: ["b-io", "b-shared"] });
      expect(await io).toMatchObject({ isError: false, content: [{ type: "text", text: "held b-io" }] });
      expect(await shared).toMatchObject({ isError: false, content: [{ type: "text", text: "held b-shared" }] });
      // a's calls are still held: one running, one waiting for its share.
      expect(await gates(control, { countPrefix: "started:a-" })).toBe(1);
      await gates(control, { openPrefix: "a-" });
      for (const result of await Promise.all(held)) expect(result.isError).toBe(false);
      expect(await gates(control, { countPrefix: "started:a-" })).toBe(2);
    } finally {
      await stop(server);
    }
  }, 120_000);

  it("lets one session hold every thread of a pool with --max-session-running", async () => {
    const server = await startMcp(["--threads", "2", "--max-session-running", "2"]);
    try {
      const [control, a] = [await connect(server), await connect(server)];
      const held = [callTool(a, "hold", { key: "all-1" }), callTool(a, "hold", { key: "all-2" })];
      await gates(control, { waitFor: ["started:all-1", "started:all-2"], openPrefix: "all-" });
      for (const result of await Promise.all(held)) expect(result.isError).toBe(false);
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
        // Opens both gates once both calls run and input has ended: none of the three ends before input does.
        toolCall(3, "gates", { waitFor: ["started:a", "started:b", "input-ended"], open: ["a", "b"] }),
      ],
    );
    expect(code).toBe(0);
    expect([...answers.keys()].sort()).toEqual([0, 1, 2, 3]);
    expect(answers.get(1)!.result).toMatchObject({ isError: false, content: [{ type: "text", text: "held a" }] });
    expect(answers.get(2)!.result).toMatchObject({ isError: false, content: [{ type: "text", text: "held b" }] });
    expect(answers.get(3)!.result).toMatchObject({ isError: false });
    // The three calls, and `initialize` where its answer was still being written when input ended.
    expect(stderr).toMatch(/end of input: answering the [34] requests in flight before stopping/);
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
