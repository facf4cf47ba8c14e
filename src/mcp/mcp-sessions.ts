/** The MCP HTTP server's sessions: how many may be open, which makes room for a new client, when load is shed, how they end. */
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";

import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest, isJSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";

import { invalidOption } from "../option-checks.js";
import { jsonRpcError, sendJson } from "./http-replies.js";
import { integerOption } from "./mcp-options.js";
import { McpPressure, type McpPressureLimits } from "./mcp-pressure.js";
import { cancelReasons, McpRefusal } from "./mcp-refusal.js";
import { McpSession, type McpEarlyRefusals } from "./mcp-session.js";

/** The limits of an MCP HTTP server's sessions and load. */
export interface McpSessionLimits extends McpPressureLimits {
  /**
   * Most sessions open at once. An `initialize` beyond it closes the idle session used least recently (its client gets
   * 404 and initializes anew), or gets 503 `TP_ERR_TOO_MANY_SESSIONS` while every session has work under way. @default 64
   */
  maxSessions?: number;
  /** Milliseconds a session may go without a request, and none in flight, before it is closed. @default 600000 */
  sessionIdleMs?: number;
  /** Seconds in the `Retry-After` of a 503 (no free session, overload) and in a refused call's `data.retryAfterSeconds`. @default 1 */
  retryAfterSeconds?: number;
  /**
   * Milliseconds a response may stay full (its client reading nothing) while progress waits; then the connection is
   * reset and the client treated as gone (its calls are cancelled). @default 30000
   */
  stalledResponseMs?: number;
  /** Receives one line per notable event (a client gone with requests in flight); must not throw. @default none */
  log?: (line: string) => void;
  /**
   * Refuses `tools/call` requests as their POST arrives, before the SDK's server handles them, so that a flood past the
   * gate's limits stays cheap. Give it the gate's verdict, as `toolpool mcp --http` does:
   * `gate.refusalsOf(sessionKey, tools.map((name) => mcpToolPools(runtime).get(name) ?? false))`. @default none (every call reaches the SDK's server)
   */
  earlyRefusals?: McpEarlyRefusals;
}

/** How long `close()` lets its answers to cut-short requests go out before connections are closed. */
const closeFlushMs = 5000;

/** Each session an SDK `Server` and its transport; handles every request after the HTTP checks. */
export class McpSessions {
  readonly #createServer: () => Server;
  readonly #sessions = new Map<string, McpSession>();
  readonly #maxSessions: number;
  readonly #sessionIdleMs: number;
  readonly #retryAfterSeconds: number;
  readonly #stalledResponseMs: number;
  readonly #log: ((line: string) => void) | undefined;
  readonly #earlyRefusals: McpEarlyRefusals | undefined;
  readonly #pressure: McpPressure;
  readonly #sweeper: NodeJS.Timeout;
  /** Sessions being created hold a place until their `initialize` is answered. */
  #opening = 0;
  #isClosing = false;

  constructor(createServer: () => Server, limits: McpSessionLimits = {}) {
    this.#createServer = createServer;
    this.#maxSessions = integerOption(limits.maxSessions, "maxSessions", 1, 64);
    this.#sessionIdleMs = integerOption(limits.sessionIdleMs, "sessionIdleMs", 1, 600_000);
    this.#retryAfterSeconds = integerOption(limits.retryAfterSeconds, "retryAfterSeconds", 0, 1);
    this.#stalledResponseMs = integerOption(limits.stalledResponseMs, "stalledResponseMs", 1, 30_000);
    this.#log = limits.log;
    if (limits.earlyRefusals !== undefined && typeof limits.earlyRefusals !== "function") {
      throw invalidOption("earlyRefusals", "a function", limits.earlyRefusals);
    }
    this.#earlyRefusals = limits.earlyRefusals;
    this.#pressure = new McpPressure(limits);
    this.#sweeper = setInterval(() => this.#closeIdleSessions(), Math.min(this.#sessionIdleMs, 60_000));
    this.#sweeper.unref();
  }

  get size(): number {
    return this.#sessions.size;
  }

  async handle(request: IncomingMessage, response: ServerResponse, body: unknown): Promise<void> {
    if (this.#isClosing) {
      return sendJson(response, 503, new McpRefusal("TP_ERR_CLOSED", "The server is shutting down").toResponse(null), { connection: "close" });
    }
    const sessionId = request.headers["mcp-session-id"];
    if (typeof sessionId === "string") {
      const session = this.#sessions.get(sessionId);
      if (session === undefined) return sendJson(response, 404, jsonRpcError(-32001, "Session not found"));
      if (request.method === "POST" && carriesRequests(body) && this.#refuseOverload(response)) return;
      return session.handleRequest(request, response, body);
    }
    if (request.method !== "POST" || !isInitializeRequest(body)) {
      return sendJson(response, 400, jsonRpcError(-32000, "Bad Request: no valid session id, and not an initialize request"));
    }
    if (this.#refuseOverload(response)) return;
    if (!this.#makeRoom()) {
      const refusal = new McpRefusal(
        "TP_ERR_TOO_MANY_SESSIONS",
        `Every MCP session (maxSessions ${this.#maxSessions}) has requests in flight; retry after ${this.#retryAfterSeconds} s`,
        { retryAfterSeconds: this.#retryAfterSeconds },
      );
      return sendJson(response, 503, refusal.toResponse(null), { "retry-after": String(this.#retryAfterSeconds) });
    }
    await this.#open(request, response, body);
  }

  /** New requests get 503; each one in flight gets `TP_ERR_CLOSED` where its client can still receive it, and is cancelled. */
  async close(): Promise<void> {
    this.#isClosing = true;
    clearInterval(this.#sweeper);
    this.#pressure.dispose();
    const sessions = [...this.#sessions.values()];
    const responses = sessions.flatMap((session) => session.openResponses);
    const refusal = new McpRefusal("TP_ERR_CLOSED", cancelReasons.serverClosing);
    for (const session of sessions) session.cutShort(refusal);
    this.#sessions.clear();
    await Promise.all(sessions.map((session) => session.close().catch(() => {})));
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), closeFlushMs);
    try {
      await Promise.all(
        responses.filter((response) => !response.destroyed).map((response) => once(response, "close", { signal: ac.signal }).catch(() => {})),
      );
    } finally {
      clearTimeout(timer);
    }
  }

  async #open(request: IncomingMessage, response: ServerResponse, body: unknown): Promise<void> {
    this.#opening += 1;
    let isOpening = true;
    const settle = () => {
      if (!isOpening) return;
      isOpening = false;
      this.#opening -= 1;
    };
    let session: McpSession | undefined;
    try {
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          this.#sessions.set(id, session!);
          settle();
        },
      });
      session = new McpSession(transport, {
        onClosed: (closed) => {
          const id = closed.sessionId;
          if (id !== undefined && this.#sessions.get(id) === closed) this.#sessions.delete(id);
        },
        stalledResponseMs: this.#stalledResponseMs,
        ...(this.#log === undefined ? {} : { log: this.#log }),
        ...(this.#earlyRefusals === undefined ? {} : { earlyRefusals: this.#earlyRefusals }),
      });
      await session.connect(this.#createServer());
      await session.handleRequest(request, response, body);
    } finally {
      // An initialize the transport refused leaves a session nobody can reach.
      if (isOpening) void session?.close().catch(() => {});
      settle();
    }
  }

  /** Closes the idle session used least recently when full; a session with requests in flight is never closed here. */
  #makeRoom(): boolean {
    if (this.#sessions.size + this.#opening < this.#maxSessions) return true;
    let oldest: McpSession | undefined;
    for (const session of this.#sessions.values()) {
      if (!session.isBusy && (oldest === undefined || session.lastUsedAt < oldest.lastUsedAt)) oldest = session;
    }
    if (oldest === undefined) return false;
    this.#closeSession(oldest);
    return true;
  }

  #refuseOverload(response: ServerResponse): boolean {
    const overload = this.#pressure.overload();
    if (overload === undefined) return false;
    const refusal = new McpRefusal("TP_ERR_OVERLOADED", `The server is overloaded (${overload}); retry after ${this.#retryAfterSeconds} s`, {
      retryAfterSeconds: this.#retryAfterSeconds,
    });
    sendJson(response, 503, refusal.toResponse(null), { "retry-after": String(this.#retryAfterSeconds) });
    return true;
  }

  #closeSession(session: McpSession): void {
    const id = session.sessionId;
    if (id !== undefined) this.#sessions.delete(id);
    void session.close().catch(() => {});
  }

  #closeIdleSessions(): void {
    const cutoff = performance.now() - this.#sessionIdleMs;
    for (const session of [...this.#sessions.values()]) if (!session.isBusy && session.lastUsedAt < cutoff) this.#closeSession(session);
  }
}

function carriesRequests(body: unknown): boolean {
  return Array.isArray(body) ? body.some((message) => isJSONRPCRequest(message)) : isJSONRPCRequest(body);
}
