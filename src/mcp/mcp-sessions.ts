/**
 * The MCP HTTP server's sessions: how many may be open, which one makes
 * room for a new client, when load is shed, and how sessions end.
 *
 * @module
 */
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
   * Most MCP sessions open at once. An `initialize` beyond it closes the
   * idle session (no request in flight) used least recently, whose client
   * gets 404 and initializes anew; when every session has requests in
   * flight it is refused: 503 `TP_ERR_TOO_MANY_SESSIONS` with
   * `Retry-After`. A session with work under way is never closed for room.
   * @default 64
   */
  maxSessions?: number;
  /** Milliseconds a session may go without a request, and with none in flight, before it is closed. @default 600000 (10 minutes) */
  sessionIdleMs?: number;
  /** Seconds in the `Retry-After` of a 503 (no free session, overload) and in a refused call's `data.retryAfterSeconds`. @default 1 */
  retryAfterSeconds?: number;
  /**
   * Milliseconds a response may stay full (its client reading nothing)
   * while a call's progress waits to go out; then its connection is closed
   * (reset, dropping what the kernel still held for it) and the client is
   * treated as gone (its calls are cancelled).
   * @default 30000
   */
  stalledResponseMs?: number;
  /** Receives one line per notable event (a client gone with requests in flight); must not throw. @default none */
  log?: (line: string) => void;
  /**
   * Refuses `tools/call` requests as their POST arrives, before the SDK's
   * server handles them: each refused one is answered with its JSON-RPC
   * error on the POST's stream and never reaches a handler. Give it the
   * call gate's verdict (`gate.refusalsOf(sessionKey, tools.map((name) =>
   * mcpToolPools(runtime).get(name) ?? false))`, as `toolpool mcp --http`
   * does): a flood of calls past the gate's limits then costs a fraction of
   * the memory traffic, which a server otherwise keeps as resident set.
   * @default none (every call reaches the SDK's server)
   */
  earlyRefusals?: McpEarlyRefusals;
}

/** How long `close()` lets the answers it sent to cut-short requests go out before connections are closed. */
const closeFlushMs = 5000;

/**
 * The open sessions of an MCP HTTP server, each an SDK `Server` and its
 * transport. Handles every request after the HTTP checks (browser guard,
 * token, body size).
 */
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
  /** Sessions being created: they hold a place until their `initialize` is answered. */
  #opening = 0;
  #isClosing = false;

  /** @param createServer Makes the MCP server of one session (see `createMcpServer`). */
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

  /** Sessions open now. */
  get size(): number {
    return this.#sessions.size;
  }

  /** Handles a request to the MCP endpoint; `body` is a POST's parsed JSON. */
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

  /**
   * Ends every session: each request in flight is answered with a JSON-RPC
   * error (`data.code` `TP_ERR_CLOSED`) where its client can still receive
   * it, and cancelled; new requests get 503. Resolves once those answers
   * went out (at most 5 s).
   */
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

  /**
   * Whether a new session fits: below `maxSessions`, or once the idle
   * session used least recently is closed. A session with requests in
   * flight is never closed here.
   */
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

  /** 503 `TP_ERR_OVERLOADED` with `Retry-After` while the server is past a pressure limit; true if it answered. */
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

/** Whether a POST's body holds a request (not only notifications, such as a cancellation, or responses). */
function carriesRequests(body: unknown): boolean {
  return Array.isArray(body) ? body.some((message) => isJSONRPCRequest(message)) : isJSONRPCRequest(body);
}
