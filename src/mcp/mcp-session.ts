/** One MCP session over Streamable HTTP: the SDK's transport, knowing which requests are in flight and which response carries each. */
import type { IncomingMessage, ServerResponse } from "node:http";

import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js";

import { whenDrained } from "../http/stalled-response.js";
import { jsonRpcError, prependSseEvents, sendJson } from "./http-replies.js";
import { cancelReasons, McpRefusal, refusalErrorCode } from "./mcp-refusal.js";

/** The SDK transport's `MAX_BATCH_SIZE`: a larger batch is answered 400 whole, never taken apart by early refusals. */
const sdkMaxBatchSize = 100;

interface McpSessionHooks {
  onClosed(session: McpSession): void;
  log?: (line: string) => void;
  /** How long a response may stay full (its client reading nothing) before its connection is reset. */
  stalledResponseMs: number;
  earlyRefusals?: McpEarlyRefusals;
}

/** For the `tools/call` requests of one POST (tool names in order): each one's refusal, or `undefined`. */
export type McpEarlyRefusals = (sessionKey: string, tools: readonly string[]) => readonly (McpRefusal | undefined)[];

/**
 * The SDK's transport, plus: requests in flight are known (a busy session is never idle); one whose POST's connection
 * closed is cancelled (the SDK answers only there); progress `send` waits for the socket, so a slow reader slows its own calls.
 */
export class McpSession implements Transport {
  readonly #inner: StreamableHTTPServerTransport;
  readonly #hooks: McpSessionHooks;
  /** Requests received and not yet answered, with the response of the POST that carried each. */
  readonly #inFlight = new Map<RequestId, ServerResponse | undefined>();
  /** Requests of POSTs being handled, not yet passed on by the SDK's transport. */
  readonly #carriers = new Map<RequestId, ServerResponse>();
  /** Early refusals to answer as they come through, never reaching the SDK's server. */
  readonly #refused = new Map<RequestId, McpRefusal>();
  #server: Server | undefined;
  lastUsedAt = performance.now();

  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;

  constructor(inner: StreamableHTTPServerTransport, hooks: McpSessionHooks) {
    this.#inner = inner;
    this.#hooks = hooks;
    inner.onmessage = (message, extra) => this.#receive(message, extra);
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => {
      // Nothing in flight can be answered now; the SDK's server aborts every handler as it closes.
      this.#inFlight.clear();
      this.#carriers.clear();
      this.#hooks.onClosed(this);
      this.onclose?.();
    };
  }

  get sessionId(): string | undefined {
    return this.#inner.sessionId;
  }

  /** A busy session is never closed for being idle. */
  get isBusy(): boolean {
    return this.#inFlight.size > 0 || this.#carriers.size > 0;
  }

  /** The responses still owed an answer (a shutdown waits for them). */
  get openResponses(): ServerResponse[] {
    const responses = [...this.#inFlight.values()].filter(
      (response): response is ServerResponse => response !== undefined && !response.writableFinished,
    );
    return [...new Set(responses)];
  }

  async connect(server: Server): Promise<void> {
    this.#server = server;
    await server.connect(this);
  }

  async start(): Promise<void> {
    await this.#inner.start();
  }

  async close(): Promise<void> {
    if (this.#server !== undefined) {
      const server = this.#server;
      this.#server = undefined;
      await server.close();
    } else {
      await this.#inner.close();
    }
  }

  async handleRequest(request: IncomingMessage, response: ServerResponse, body: unknown): Promise<void> {
    this.lastUsedAt = performance.now();
    const ids = request.method === "POST" ? requestIdsOf(body) : [];
    const reused = ids.find((id, index) => this.#inFlight.has(id) || this.#carriers.has(id) || ids.indexOf(id) !== index);
    if (reused !== undefined) {
      return sendJson(
        response,
        400,
        jsonRpcError(-32600, `Invalid Request: request id ${JSON.stringify(reused)} is already in flight in this session`),
      );
    }
    for (const id of ids) this.#carriers.set(id, response);
    const { forwarded, refused } = this.#refuseEarly(body, response);
    if (ids.length > 0) response.once("close", () => this.#onResponseClosed(response, ids));
    if (request.method === "DELETE") {
      this.cutShort(new McpRefusal("TP_ERR_SESSION_CLOSED", cancelReasons.sessionClosed));
    }
    try {
      await this.#inner.handleRequest(request, response, forwarded);
    } finally {
      // Requests the SDK's transport answered itself (a bad header) never came through.
      for (const id of ids) if (this.#carriers.get(id) === response) this.#carriers.delete(id);
      for (const id of refused) this.#refused.delete(id);
    }
  }

  /** Answers every request in flight with `refusal` where it can still be delivered, and cancels them all. */
  cutShort(refusal: McpRefusal): void {
    for (const [id] of [...this.#inFlight]) {
      this.#inFlight.delete(id);
      // Either way the SDK's transport lets go of the request.
      this.#release(refusal.toResponse(id));
      this.#cancel(id, refusal.message);
    }
    this.lastUsedAt = performance.now();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      // Not in flight: cut short (and answered) already, or cancelled, so wanted by nobody.
      if (message.id !== undefined && !this.#settle(message.id)) return;
      return this.#inner.send(message, options);
    }
    await this.#inner.send(message, options);
    const id = options?.relatedRequestId;
    const response = id === undefined ? undefined : this.#inFlight.get(id);
    if (response !== undefined) await this.#whenFlushed(response);
  }

  /**
   * Answers early-refused `tools/call`s at once (one JSON-RPC error each, not a handler run): prepended to the POST's
   * stream when other requests remain, else answered as the transport passes them on.
   */
  #refuseEarly(body: unknown, response: ServerResponse): { forwarded: unknown; refused: RequestId[] } {
    const none = { forwarded: body, refused: [] };
    if (this.#hooks.earlyRefusals === undefined || this.sessionId === undefined) return none;
    if (Array.isArray(body) && body.length > sdkMaxBatchSize) return none;
    const messages: unknown[] = Array.isArray(body) ? body : [body];
    const calls: { id: RequestId; name: string }[] = [];
    for (const message of messages) {
      if (!isJSONRPCRequest(message) || message.method !== "tools/call") continue;
      const name = (message.params as { name?: unknown } | undefined)?.name;
      if (typeof name === "string") calls.push({ id: message.id, name });
    }
    if (calls.length === 0) return none;
    const refusals = this.#hooks.earlyRefusals(
      `mcp:${this.sessionId}`,
      calls.map((call) => call.name),
    );
    const refused = new Map<RequestId, McpRefusal>();
    calls.forEach((call, index) => {
      const refusal = refusals[index];
      if (refusal !== undefined) refused.set(call.id, refusal);
    });
    if (refused.size === 0) return none;
    const rest = messages.filter((message) => !(refused.has((message as { id?: RequestId } | null)?.id as RequestId) && isJSONRPCRequest(message)));
    if (rest.some((message) => isJSONRPCRequest(message))) {
      prependSseEvents(
        response,
        [...refused].map(([id, refusal]) => refusal.toResponse(id)),
      );
      // Answered: their ids are free again, while the POST's other requests run on.
      for (const id of refused.keys()) this.#carriers.delete(id);
      return { forwarded: rest, refused: [] };
    }
    // No request left for the transport to open a stream for: it carries the refused ones.
    for (const [id, refusal] of refused) this.#refused.set(id, refusal);
    return { forwarded: body, refused: [...refused.keys()] };
  }

  #receive(message: JSONRPCMessage, extra: MessageExtraInfo | undefined): void {
    const refusal = isJSONRPCRequest(message) ? this.#refused.get(message.id) : undefined;
    if (refusal !== undefined) {
      const id = (message as { id: RequestId }).id;
      this.#refused.delete(id);
      this.#carriers.delete(id);
      // Answered on the POST's stream; the SDK's server never sees the request.
      void this.#inner.send(refusal.toResponse(id)).catch(() => {});
      return;
    }
    if (isJSONRPCRequest(message)) {
      const response = this.#carriers.get(message.id);
      this.#carriers.delete(message.id);
      this.#inFlight.set(message.id, response);
    } else if (isJSONRPCNotification(message) && message.method === "notifications/cancelled") {
      // The client wants no answer: the SDK will send none.
      const id = (message.params as { requestId?: RequestId } | undefined)?.requestId;
      if (id !== undefined) this.#settle(id);
    }
    this.onmessage?.(message, extra);
  }

  #settle(id: RequestId): boolean {
    if (!this.#inFlight.delete(id)) return false;
    if (this.#inFlight.size === 0) this.lastUsedAt = performance.now();
    return true;
  }

  #cancel(id: RequestId, reason: string): void {
    this.#settle(id);
    this.onmessage?.({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason } });
  }

  /** The SDK keeps a POST's ids, answers and stream until each request is answered: unanswered, they would stay for good. */
  #release(answer: JSONRPCErrorResponse): void {
    void this.#inner.send(answer).catch(() => {});
  }

  #onResponseClosed(response: ServerResponse, ids: RequestId[]): void {
    const unanswered = ids.filter((id) => this.#inFlight.get(id) === response);
    if (unanswered.length === 0) return;
    for (const id of unanswered) {
      this.#cancel(id, cancelReasons.clientGone);
      this.#release({ jsonrpc: "2.0", id, error: { code: refusalErrorCode, message: cancelReasons.clientGone } });
    }
    this.#hooks.log?.(
      `session ${this.sessionId ?? "?"}: the client went away before ${unanswered.length} of its requests were answered; they were cancelled`,
    );
  }

  /**
   * The HTTP layer drains the SDK's writes at the socket's pace: a tick moves what the socket takes, a full one means
   * `drain`. Full for `stalledResponseMs`, it is reset (`whenDrained`): its client counts as gone.
   */
  async #whenFlushed(response: ServerResponse): Promise<void> {
    while (!response.destroyed && !response.writableEnded) {
      await new Promise((resolve) => setImmediate(resolve));
      if (!response.writableNeedDrain) return;
      await whenDrained(response, this.#hooks.stalledResponseMs);
    }
  }
}

function requestIdsOf(body: unknown): RequestId[] {
  const messages = Array.isArray(body) ? body : [body];
  const ids: RequestId[] = [];
  for (const message of messages) {
    if (isJSONRPCRequest(message)) ids.push(message.id);
  }
  return ids;
}
