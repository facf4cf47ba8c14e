/**
 * Clients for the connection edge's tests: floods of connections that never
 * finish their headers or sit idle after one request, raw requests from a
 * chosen loopback address, and a `toolpool mcp --http` child process.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(ROOT, "dist", "cli", "main.js");

/** Connections held open by a test: unfinished (see {@link floodConnections}) or idle (see {@link holdIdleConnections}). */
export interface Flood {
  readonly sockets: readonly Socket[];
  /** Indexes of the sockets the server closed, in the order it closed them. */
  readonly closed: readonly number[];
  /** Resolves once the server has closed `count` of them. */
  whenClosed(count: number): Promise<void>;
  /** Closes every socket still open. */
  end(): void;
}

/**
 * Opens `count` connections from `localAddress`, one after the other, each
 * sending `GET PATH HTTP/1.1`, a Host header and the start of another header.
 * Each resolves once connected, so that the server accepts them in this order.
 */
export function floodConnections(port: number, count: number, localAddress: string, path = "/healthz"): Promise<Flood> {
  return holdConnections(port, count, localAddress, async (socket) => {
    // Whatever the server answers is read and dropped, so that its close arrives.
    socket.resume();
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `);
  });
}

/**
 * Opens `count` connections from `localAddress`, one after the other, each
 * sending one complete keep-alive `GET PATH` (no token) and reading its whole
 * answer, then nothing more: connections a keep-alive client would hold
 * idle. Resolves once every one has its answer, so that the server saw
 * them go idle in this order. Rejects if an answer is not `status`.
 */
export function holdIdleConnections(port: number, count: number, localAddress: string, path = "/healthz", status = 200): Promise<Flood> {
  return holdConnections(port, count, localAddress, async (socket) => {
    let text = "";
    socket.setEncoding("latin1");
    const answered = new Promise<void>((resolve, reject) => {
      const onData = (chunk: string): void => {
        text += chunk;
        const end = text.indexOf("\r\n\r\n");
        if (end === -1) return;
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1] ?? Number.NaN);
        if (text.length < end + 4 + length) return;
        // Later bytes (a 408, a close) are still read and dropped, so that the server's close arrives.
        socket.off("data", onData).resume();
        if (!text.startsWith(`HTTP/1.1 ${status} `) || /\r\nconnection: *close/i.test(text.slice(0, end))) {
          reject(new Error(`expected a kept-alive ${status} answer, got ${JSON.stringify(text.slice(0, end))}`));
        } else {
          resolve();
        }
      };
      socket.on("data", onData);
      socket.once("close", () => reject(new Error(`the connection closed before its answer: ${JSON.stringify(text)}`)));
    });
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    await answered;
  });
}

/** Opens `count` connections from `localAddress` one after the other, running `start` on each once connected. */
async function holdConnections(port: number, count: number, localAddress: string, start: (socket: Socket) => Promise<void>): Promise<Flood> {
  const sockets: Socket[] = [];
  const closed: number[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const flood: Flood = {
    sockets,
    closed,
    whenClosed: (wanted) => (closed.length >= wanted ? Promise.resolve() : new Promise((resolve) => waiters.push({ count: wanted, resolve }))),
    end: () => {
      for (const socket of sockets) socket.destroy();
    },
  };
  try {
    for (let index = 0; index < count; index++) {
      const socket = connect({ port, host: "127.0.0.1", localAddress });
      socket.on("error", () => {});
      socket.once("close", () => {
        closed.push(index);
        for (const waiter of waiters.splice(0)) {
          if (closed.length >= waiter.count) waiter.resolve();
          else waiters.push(waiter);
        }
      });
      sockets.push(socket);
      await once(socket, "connect");
      await start(socket);
    }
  } catch (error) {
    flood.end();
    throw error;
  }
  return flood;
}

/** An answer, or how the connection failed. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One request on a fresh connection from `localAddress`. */
export function requestFrom(
  localAddress: string,
  url: string,
  { method = "GET", headers = {}, body }: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method, headers, localAddress, agent: false }, (response) => {
      let text = "";
      response.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
      response.on("end", () => resolve({ status: response.statusCode!, headers: response.headers, text }));
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end(body);
  });
}

/** A `toolpool mcp --http` process that has printed where it listens. */
export interface McpHttpProcess {
  child: ChildProcess;
  /** `http://127.0.0.1:PORT/mcp` */
  url: string;
  port: number;
}

/** Spawns `toolpool mcp --http 127.0.0.1:0 ARGS`; resolves once it listens. The child goes into `children`. */
export async function spawnMcpHttp(args: string[], children: ChildProcess[]): Promise<McpHttpProcess> {
  const child = spawn(process.execPath, [CLI, "mcp", "--http", "127.0.0.1:0", ...args], {
    cwd: ROOT,
    env: { ...process.env, TOOLPOOL_TOKEN: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = once(child, "exit");
  const lines = createInterface({ input: child.stdout! });
  const first = await Promise.race([
    once(lines, "line").then(([line]) => line as string),
    exited.then(([code]) => {
      throw new Error(`toolpool mcp exited with ${String(code)} before listening: ${stderr}`);
    }),
  ]);
  const match = /^listening on (http:\/\/127\.0\.0\.1:(\d+)\/mcp)$/.exec(first);
  if (match === null) throw new Error(`toolpool mcp printed ${JSON.stringify(first)} instead of where it listens`);
  return { child, url: match[1]!, port: Number(match[2]) };
}

/** The JSON-RPC `initialize` request of an MCP client. */
export const initializeBody = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "edge-test", version: "1" } },
});

/** The headers an MCP client sends with a POST. */
export const mcpPostHeaders = { "content-type": "application/json", accept: "application/json, text/event-stream" };
