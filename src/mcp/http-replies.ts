/** The MCP HTTP server's own answers (those the SDK's transport never sees). */
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

/**
 * Writes `messages` as the first events (`event: message`) of the stream, once the transport has sent a
 * `200 text/event-stream` head; an error answer gets none. A head with a `content-length` is lengthened by theirs.
 */
export function prependSseEvents(response: ServerResponse, messages: readonly unknown[]): void {
  const events = Buffer.from(messages.map((message) => `event: message\ndata: ${JSON.stringify(message)}\n\n`).join(""));
  const writeHead = response.writeHead;
  const wrapped = function (this: ServerResponse, status: number, ...rest: unknown[]): ServerResponse {
    response.writeHead = writeHead;
    const headers = rest.find((arg): arg is Record<string, unknown> => typeof arg === "object" && arg !== null && !Array.isArray(arg));
    const type = headers === undefined ? undefined : headerOf(headers, "content-type");
    const isStream = status === 200 && typeof type === "string" && type.startsWith("text/event-stream");
    if (isStream && headers !== undefined) {
      const lengthKey = Object.keys(headers).find((key) => key.toLowerCase() === "content-length");
      if (lengthKey !== undefined) headers[lengthKey] = Number(headers[lengthKey]) + events.length;
    }
    const result = (writeHead as (...args: unknown[]) => ServerResponse).call(this, status, ...rest);
    if (isStream) response.write(events);
    return result;
  };
  response.writeHead = wrapped as typeof response.writeHead;
}

function headerOf(headers: Record<string, unknown>, name: string): unknown {
  for (const key of Object.keys(headers)) if (key.toLowerCase() === name) return headers[key];
  return undefined;
}
