/**
 * `toolpool mcp --http` child processes serving the MCP load tools
 * (fixtures/mcp/load-tools.mjs), and raw Streamable HTTP requests to them,
 * for the MCP load and memory tests. A test file clears `children` and
 * `clients` in its own hooks (see `closeClients`, `killChildren`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { expect } from "vitest";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const CLI = join(ROOT, "dist", "cli", "main.js");
export const LOAD_TOOLS = join(ROOT, "test", "fixtures", "mcp", "load-tools.mjs");
export const PROTOCOL_VERSION = "2025-06-18";

/** A `toolpool mcp --http` child process serving the load tools. */
export interface McpProcess {
  url: URL;
  child: ChildProcess;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  /** Resolves once stderr matches `pattern`. */
  untilStderr(pattern: TextMatch): Promise<string>;
}

export const children: ChildProcess[] = [];
export const clients: Client[] = [];

/** What a test waits for in a child's output: a pattern, or any test of the text so far. */
export type TextMatch = RegExp | { test(text: string): boolean };

export function watchText(stream: NodeJS.ReadableStream): (pattern: TextMatch) => Promise<string> {
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

export async function startMcp(args: string[], nodeArgs: string[] = []): Promise<McpProcess> {
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

export async function stop(server: McpProcess): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGTERM");
  await server.exited;
}

export async function connect(server: McpProcess): Promise<Client> {
  const client = new Client({ name: "load-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(server.url));
  clients.push(client);
  return client;
}

/** Calls a tool; `timeout` only guards against a hang (the SDK's default is 60 s). */
export const callTool = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 }) as Promise<CallToolResult>;

/** `gates` (see fixtures/mcp/load-tools.mjs): waits, opens, counts inside the server process. */
export async function gates(client: Client, args: Record<string, unknown>): Promise<number | null> {
  const result = await callTool(client, "gates", args);
  expect(result.isError).toBe(false);
  return (result.structuredContent as { details: { count: number | null } }).details.count;
}

export const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** A raw `initialize`: the HTTP status, the session id and the headers. */
export async function initialize(
  server: McpProcess,
): Promise<{ status: number; sessionId: string | null; retryAfter: string | null; body: unknown }> {
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
export type Message = {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: CallToolResult;
  error?: { code: number; message: string; data?: Record<string, unknown> };
};

/** A raw POST to a session whose event stream is read message by message (or not read at all). */
export interface RawPost {
  request: ClientRequest;
  response: Promise<IncomingMessage>;
  /** Every message so far. */
  messages: Message[];
  /** Resolves once a message matches. */
  until(match: (message: Message) => boolean): Promise<Message>;
  /** Resolves once the stream ended. */
  ended: Promise<void>;
}

export function post(server: McpProcess, sessionId: string, body: unknown, options: { paused?: boolean } = {}): RawPost {
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

export const toolCall = (id: number, name: string, args: Record<string, unknown>, progressToken?: number) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args, ...(progressToken === undefined ? {} : { _meta: { progressToken } }) },
});

/** The toolpool code of a JSON-RPC error as the SDK's client throws it. */
export async function refusalOf(call: Promise<unknown>): Promise<{ code: unknown; message: string; data: Record<string, unknown> }> {
  const error = await call.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(McpError);
  const { code, message, data } = error as McpError;
  return { code, message, data: data as Record<string, unknown> };
}

/** For a test file's `afterEach`: closes the clients it connected. */
export async function closeClients(): Promise<void> {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => {})));
}

/** For a test file's `afterAll`: kills the servers still running. */
export function killChildren(): void {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}
