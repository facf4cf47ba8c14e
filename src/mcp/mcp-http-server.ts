/** MCP over Streamable HTTP, behind the protections of toolpool's HTTP server, checked before the SDK sees a byte. */
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { isIP } from "node:net";

import type { Server } from "@modelcontextprotocol/sdk/server/index.js";

import { BearerAuth } from "../http/bearer-auth.js";
import { checkBrowserGuard } from "../http/browser-guard.js";
import { ConnectionGuard } from "../http/connection-guard.js";
import { refuseUnknownOptions } from "../option-checks.js";
import { jsonRpcError, sendJson } from "./http-replies.js";
import { McpSessions, type McpSessionLimits } from "./mcp-sessions.js";
import { mcpHttpServerOptionNames } from "./mcp-option-names.js";

/** Options of {@link McpHttpServer}; the limits of its sessions and load are {@link McpSessionLimits}'s. */
export interface McpHttpServerOptions extends McpSessionLimits {
  /** Address to listen on. @default "127.0.0.1" */
  host?: string;
  /** TCP port; 0 picks a free one. @default 0 */
  port?: number;
  /** Bearer token every request must carry (visible ASCII only). @default undefined (only loopback Host values are answered) */
  token?: string;
  /** `Host` values accepted besides the loopback names on a tokenless server. @default [] */
  allowedHosts?: readonly string[];
  /** `Origin` values accepted; any other Origin is refused. @default [] */
  allowedOrigins?: readonly string[];
  /** Largest request body, in bytes. @default 1048576 */
  maxBodyBytes?: number;
  /** Most TCP connections open at once, as `createServer`'s `maxConnections`. @default 1024 */
  maxConnections?: number;
  /** Most TCP connections from one IPv4 address or IPv6 /64, as `createServer`'s `maxConnectionsPerAddress`. @default 256 */
  maxConnectionsPerAddress?: number;
  /** Milliseconds from a connection's opening until its first request's headers must be complete (then 408). @default 5000 */
  headersTimeoutMs?: number;
}

export const MCP_PATH = "/mcp";

/** A client that sends its headers, or its whole request, slower than these is cut off. */
const headersTimeoutMs = 10_000;
const requestTimeoutMs = 30_000;

/**
 * MCP's Streamable HTTP transport at `/mcp`, one MCP session (an SDK `Server`) per client, in front of one runtime.
 * Checks in order: Host and Origin (403), bearer token (401), body size (413), then session and load (`McpSessions`).
 */
export class McpHttpServer {
  readonly #host: string;
  readonly #port: number;
  readonly #auth: BearerAuth | undefined;
  readonly #guard: { allowedHosts: readonly string[]; allowedOrigins: readonly string[]; hasToken: boolean };
  readonly #maxBodyBytes: number;
  readonly #sessions: McpSessions;
  readonly #http: HttpServer;
  #url: string | undefined;

  /** @param createServer Makes the MCP server of one session (see `createMcpServer`). */
  constructor(createServer: () => Server, options: McpHttpServerOptions = {}) {
    refuseUnknownOptions(options, mcpHttpServerOptionNames);
    this.#host = options.host ?? "127.0.0.1";
    this.#port = options.port ?? 0;
    this.#auth = options.token === undefined ? undefined : new BearerAuth(options.token);
    this.#guard = {
      allowedHosts: options.allowedHosts ?? [],
      allowedOrigins: options.allowedOrigins ?? [],
      hasToken: options.token !== undefined,
    };
    this.#maxBodyBytes = options.maxBodyBytes ?? 1_048_576;
    this.#sessions = new McpSessions(createServer, options);
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

  get url(): string | undefined {
    return this.#url;
  }

  get sessionCount(): number {
    return this.#sessions.size;
  }

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

  /** Closes every session (requests in flight get `TP_ERR_CLOSED` and are cancelled), then the HTTP server; not the runtime. */
  async close(): Promise<void> {
    await this.#sessions.close();
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
    return this.#sessions.handle(request, response, body);
  }
}

type BodyRead = { kind: "ok"; value: unknown } | { kind: "too-large" } | { kind: "invalid"; message: string };

/** Stops reading at the limit, leaving the rest to the 413's lingering close. */
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
