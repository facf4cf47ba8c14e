/**
 * How toolpool's MCP server says no to a request, or ends one early: a
 * JSON-RPC error whose `data.code` is a stable toolpool code.
 *
 * @module
 */
import type { JSONRPCErrorResponse, RequestId } from "@modelcontextprotocol/sdk/types.js";

import type { ErrorCode } from "../errors.js";

/** The JSON-RPC error code of every refusal: the first of the range JSON-RPC keeps for servers' own errors. */
export const refusalErrorCode = -32000;

/** What a refusal's JSON-RPC error carries as `data`. */
export interface McpRefusalData {
  /** The toolpool code: match it, not the message. */
  code: ErrorCode;
  /** When the refusal is about load: seconds to wait before trying again. */
  retryAfterSeconds?: number;
}

/**
 * A request refused or cut short. Thrown from a request handler, the SDK
 * answers it as the JSON-RPC error `{ code: -32000, message, data }`.
 */
export class McpRefusal extends Error {
  /** The JSON-RPC error code (the SDK reads it from a thrown error). */
  readonly code = refusalErrorCode;
  readonly data: McpRefusalData;

  constructor(code: ErrorCode, message: string, extra: { retryAfterSeconds?: number } = {}) {
    super(message);
    this.name = "McpRefusal";
    this.data = { code, ...extra };
  }

  /** The JSON-RPC error response to request `id` (`null` when no request could be read). */
  toResponse(id: RequestId | null): JSONRPCErrorResponse {
    return { jsonrpc: "2.0", id: id as RequestId, error: { code: this.code, message: this.message, data: this.data } };
  }
}

/**
 * The reasons toolpool cancels a request with, itself, in the SDK's server
 * (as `notifications/cancelled` would): a call's log line tells them apart
 * from a client's own cancellation.
 */
export const cancelReasons = {
  /** The connection of the POST that carried the request closed: no answer can reach its client. */
  clientGone: "the client went away before the response",
  /** The client closed its session (DELETE) while the request was in flight. */
  sessionClosed: "The MCP session was closed by its client while the request was in flight; it was cancelled",
  /** On stdio: the server's input ended, and the request was still running when the time left to finish it ran out. */
  inputEnded: "The server's input ended and the request did not end within the drain timeout; it was cancelled",
  /** The server is shutting down. */
  serverClosing: "The server is shutting down: the request was cancelled",
} as const;

/** Every value of {@link cancelReasons}. */
export const serverCancelReasons: ReadonlySet<string> = new Set(Object.values(cancelReasons));
