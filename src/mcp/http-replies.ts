/**
 * The MCP HTTP server's own answers (those the SDK's transport never sees).
 *
 * @module
 */
import type { ServerResponse } from "node:http";

/** A JSON-RPC error answering no particular request (`id: null`). */
export function jsonRpcError(code: number, message: string): unknown {
  return { jsonrpc: "2.0", error: { code, message }, id: null };
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { ...headers, "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
  response.end(text);
}
