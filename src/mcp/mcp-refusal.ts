/** How toolpool's MCP server refuses or cuts short a request: a JSON-RPC error whose `data.code` is a stable toolpool code. */
import type { JSONRPCErrorResponse, RequestId } from "@modelcontextprotocol/sdk/types.js";

import type { ErrorCode } from "../errors.js";

/** The first of the range JSON-RPC keeps for servers' own errors. */
export const refusalErrorCode = -32000;

export interface McpRefusalData {
  /** The toolpool code: match it, not the message. */
  code: ErrorCode;
  /** When the refusal is about load: seconds to wait before trying again. */
  retryAfterSeconds?: number;
}

/** Thrown from a request handler, the SDK answers it as the JSON-RPC error `{ code: -32000, message, data }`. */
export class McpRefusal extends Error {
  readonly code = refusalErrorCode;
  readonly data: McpRefusalData;

  constructor(code: ErrorCode, message: string, extra: { retryAfterSeconds?: number } = {}) {
    super(message);
    this.name = "McpRefusal";
    this.data = { code, ...extra };
  }

  /** `id` is `null` when no request could be read. */
  toResponse(id: RequestId | null): JSONRPCErrorResponse {
    return { jsonrpc: "2.0", id: id as RequestId, error: { code: this.code, message: this.message, data: this.data } };
  }
}

/** Reasons toolpool cancels a request itself with, so that a call's log line tells them from a client's cancellation. */
export const cancelReasons = {
  clientGone: "the client went away before the response",
  sessionClosed: "The MCP session was closed by its client while the request was in flight; it was cancelled",
  inputEnded: "The server's input ended and the request did not end within the drain timeout; it was cancelled",
  serverClosing: "The server is shutting down: the request was cancelled",
} as const;

export const serverCancelReasons: ReadonlySet<string> = new Set(Object.values(cancelReasons));
