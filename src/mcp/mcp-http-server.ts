/**
 * MCP over Streamable HTTP, with the protections of toolpool's HTTP server:
 * the browser guard (Host and Origin checks) and the bearer token, checked
 * before the SDK's transport sees a byte.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { isIP } from "node:net";

import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

import { BearerAuth } from "../server/bearer-auth.js";
import { checkBrowserGuard } from "../server/browser-guard.js";
import { ConnectionGuard } from "../server/connection-guard.js";

/** Options of {@link McpHttpServer}. */
export interface McpHttpServerOptions {
  /** Address to listen on. @default "127.0.0.1" */
  host?: string;
  /** TCP port; 0 picks a free one. @default 0 */
  port?: number;
  /** Bearer token every request must carry. @default undefined (none: then only loopback Host values are answered) */
  token?: string;
  /** `Host` values accepted besides the loopback names on a tokenless server. @default [] */
  allowedHosts?: readonly string[];
  /** `Origin` values accepted; any other Origin is refused. @default [] */
  allowedOrigins?: readonly string[];
  /** Largest request body, in bytes. @default 1048576 */
  maxBodyBytes?: number;
  /**
   * Most MCP sessions open at once. An `initialize` beyond it closes the
   * session used least recently (its client gets 404 and initializes anew),
   * so idle or abandoned sessions can never lock new clients out.
   * @default 64
   */
  maxSessions?: number;
  /** Milliseconds a session may go without a request before it is closed. @default 600000 (10 minutes) */
  sessionIdleMs?: number;
  /** Most TCP connections open at once, as `createServer`'s `maxConnections`. @default 1024 */
  maxConnections?: number;
  /** Most TCP connections from one IPv4 address or IPv6 /64, as `createServer`'s `maxConnectionsPerAddress`. @default 256 */
  maxConnectionsPerAddress?: number;
  /** Milliseconds from a connection's opening until its first request's headers must be complete (then 408). @default 5000 */
  headersTimeoutMs?: number;
}

/** The endpoint of the MCP server. */
export const MCP_PATH = "/mcp";

interface Session {
  transport: StreamableHTTPServerTransport;
  server: Server;
  /** When the session's last request came (`performance.now()`). */
  lastUsedAt: number;
}

/** Milliseconds to receive a request's headers, and the whole request: a client that sends slower is cut off. */
const headersTimeoutMs = 10_000;
const requestTimeoutMs = 30_000;

/**
 * An HTTP server carrying MCP's Streamable HTTP transport at `/mcp`, one MCP
 * session (an SDK `Server` and its transport) per client, all in front of the
 * same runtime. Requests are checked in this order: Host and Origin (403
 * `TP_ERR_FORBIDDEN`), bearer token (401 `TP_ERR_UNAUTHORIZED`), body size
 * (413), then the session.
 */
export class McpHttpServer {
  readonly #createServer: () => Server;
  readonly #host: string;
  readonly #port: number;
  readonly #auth: BearerAuth | undefined;
  readonly #guard: { allowedHosts: readonly string[]; allowedOrigins: readonly string[]; hasToken: boolean };
  readonly #maxBodyBytes: number;
  readonly #maxSessions: number;
  readonly #sessions = new Map<string, Session>();
  readonly #sessionIdleMs: number;
  readonly #sweeper: NodeJS.Timeout;
  readonly #http: HttpServer;
  #url: string | undefined;

  /** @param createServer Makes the MCP server of one session (see `createMcpServer`). */
  constructor(createServer: () => Server, options: McpHttpServerOptions = {}) {
    this.#createServer = createServer;
    this.#host = options.host ?? "127.0.0.1";
    this.#port = options.port ?? 0;
    this.#auth = options.token === undefined ? undefined : new BearerAuth(options.token);
    this.#guard = {
      allowedHosts: options.allowedHosts ?? [],
      allowedOrigins: options.allowedOrigins ?? [],
      hasToken: options.token !== undefined,
    };
    this.#maxBodyBytes = options.maxBodyBytes ?? 1_048_576;
    this.#maxSessions = options.maxSessions ?? 64;
    this.#sessionIdleMs = options.sessionIdleMs ?? 600_000;
    this.#sweeper = setInterval(() => this.#closeIdleSessions(), Math.min(this.#sessionIdleMs, 60_000));
    this.#sweeper.unref();
    this.#http = createHttpServer({ headersTimeout: headersTimeoutMs, requestTimeout: requestTimeoutMs }, (request, response) => {
      this.#handle(request, response).catch((error: unknown) => {
        if (!response.headersSent) sendJson(response, 500, jsonRpcError(-32603, `Internal error: ${String(error)}`));
        else response.destroy();
      });
    });
    new ConnectionGuard(this.#http, {
      maxConnections: options.maxConnections ?? 1024,
      maxConnectionsPerAddress: options.maxConnectionsPerAddress ?? 256,
      headersTimeoutMs: options.headersTimeoutMs ?? 5000,
    });
  }

  /** `http://HOST:PORT/mcp` once listening. */
  get url(): string | undefined {
    return this.#url;
  }

  /** MCP sessions open now. */
  get sessionCount(): number {
    return this.#sessions.size;
  }

  /** Starts listening; resolves to the endpoint's URL. */
  async listen(): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.#http.once("error", reject);
      this.#http.listen(this.#port, this.#host, () => {
        this.#http.off("error", reject);
        resolve();
      });
    });
    const address = this.#http.address() as AddressInfo;
    const host = isIP(this.#host) === 0 ? this.#host : address.address;
    this.#url = `http://${isIP(host) === 6 ? `[${host}]` : host}:${address.port}${MCP_PATH}`;
    return this.#url;
  }

  /** Closes every session, then the HTTP server. The runtime stays the caller's to close. */
  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.all(sessions.map((session) => session.server.close().catch(() => {})));
    await new Promise<void>((resolve) => {
      this.#http.close(() => resolve());
      this.#http.closeAllConnections();
    });
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? "/").split("?", 1)[0];
    const verdict = checkBrowserGuard(request.headers.host, request.headers.origin, this.#guard);
    // A refused client keeps no connection (its body is drained, within bounds).
    if (verdict.kind === "deny") {
      response.setHeader("connection", "close");
      return sendJson(response, verdict.status, { code: verdict.code, message: verdict.reason });
    }
    if (this.#auth !== undefined && !this.#auth.isAuthorized(request.headers.authorization)) {
      response.setHeader("www-authenticate", 'Bearer realm="toolpool"').setHeader("connection", "close");
      return sendJson(response, 401, { code: "TP_ERR_UNAUTHORIZED", message: "Missing or invalid bearer token (Authorization: Bearer TOKEN)" });
    }
    if (path !== MCP_PATH) return sendJson(response, 404, { code: "FST_ERR_NOT_FOUND", message: `Route ${request.method ?? ""}:${path} not found` });

    const sessionId = request.headers["mcp-session-id"];
    let body: unknown;
    if (request.method === "POST") {
      const read = await readJsonBody(request, this.#maxBodyBytes);
      if (read.kind === "too-large") {
        response.setHeader("connection", "close");
        return sendJson(response, 413, jsonRpcError(-32600, `Request body is larger than ${this.#maxBodyBytes} bytes`));
      }
      if (read.kind === "invalid") return sendJson(response, 400, jsonRpcError(-32700, `Parse error: ${read.message}`));
      body = read.value;
    }
    if (typeof sessionId === "string") {
      const session = this.#sessions.get(sessionId);
      if (session === undefined) return sendJson(response, 404, jsonRpcError(-32001, "Session not found"));
      session.lastUsedAt = performance.now();
      return session.transport.handleRequest(request, response, body);
    }
    if (request.method !== "POST" || !isInitializeRequest(body)) {
      return sendJson(response, 400, jsonRpcError(-32000, "Bad Request: no valid session id, and not an initialize request"));
    }
    if (this.#sessions.size >= this.#maxSessions) this.#closeLeastRecentlyUsed();
    const server = this.#createServer();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        this.#sessions.set(id, { transport, server, lastUsedAt: performance.now() });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) this.#sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(request, response, body);
  }

  #closeSession(id: string, session: Session): void {
    this.#sessions.delete(id);
    void session.server.close().catch(() => {});
  }

  #closeLeastRecentlyUsed(): void {
    let oldest: [string, Session] | undefined;
    for (const entry of this.#sessions) if (oldest === undefined || entry[1].lastUsedAt < oldest[1].lastUsedAt) oldest = entry;
    if (oldest !== undefined) this.#closeSession(...oldest);
  }

  #closeIdleSessions(): void {
    const cutoff = performance.now() - this.#sessionIdleMs;
    for (const [id, session] of [...this.#sessions]) if (session.lastUsedAt < cutoff) this.#closeSession(id, session);
  }
}


type BodyRead = { kind: "ok"; value: unknown } | { kind: "too-large" } | { kind: "invalid"; message: string };

/** Reads a JSON body of at most `maxBytes`; stops reading at the limit, leaving the rest to the 413's lingering close. */
async function readJsonBody(request: IncomingMessage, maxBytes: number): Promise<BodyRead> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) return { kind: "too-large" };
    chunks.push(chunk);
  }
  try {
    return { kind: "ok", value: JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown };
  } catch (error) {
    return { kind: "invalid", message: error instanceof Error ? error.message : String(error) };
  }
}

function jsonRpcError(code: number, message: string): unknown {
  return { jsonrpc: "2.0", error: { code, message }, id: null };
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
  response.end(text);
}
