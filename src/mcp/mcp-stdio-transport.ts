/** The stdio transport of `toolpool mcp`: the end of its input does not lose the answers owed. */
import type { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js";

import type { McpRefusal } from "./mcp-refusal.js";

/** Knows the requests in flight, so a client that closed its end of the pipe still gets their answers ({@link McpStdioTransport.drain}). */
export class McpStdioTransport implements Transport {
  readonly #inner: StdioServerTransport;
  readonly #inFlight = new Set<RequestId>();
  #onAnswered: (() => void) | undefined;

  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  constructor(inner: StdioServerTransport) {
    this.#inner = inner;
    inner.onmessage = (message) => this.#receive(message);
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => this.onclose?.();
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  async start(): Promise<void> {
    await this.#inner.start();
  }

  async close(): Promise<void> {
    await this.#inner.close();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (!isJSONRPCResultResponse(message) && !isJSONRPCErrorResponse(message)) return this.#inner.send(message);
    // An error about no request in particular (a parse error) goes out as it is.
    if (message.id === undefined) return this.#inner.send(message);
    // Answered already by `drain`'s refusal: the late answer is wanted by nobody.
    if (!this.#inFlight.has(message.id)) return;
    await this.#inner.send(message);
    // Counted once written, so that `drain` ends only after the bytes went out.
    this.#inFlight.delete(message.id);
    this.#onAnswered?.();
  }

  /** Resolves (to the number refused) once all are answered, or after `timeoutMs` refuses and cancels those left. */
  async drain(timeoutMs: number, refusal: McpRefusal): Promise<number> {
    if (this.#inFlight.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.#onAnswered = () => {
          if (this.#inFlight.size > 0) return;
          clearTimeout(timer);
          resolve();
        };
      });
      this.#onAnswered = undefined;
    }
    const left = [...this.#inFlight];
    this.#inFlight.clear();
    for (const id of left) {
      await this.#inner.send(refusal.toResponse(id));
      this.onmessage?.({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: refusal.message } });
    }
    return left.length;
  }

  #receive(message: JSONRPCMessage): void {
    if (isJSONRPCRequest(message)) this.#inFlight.add(message.id);
    else if (isJSONRPCNotification(message) && message.method === "notifications/cancelled") {
      // The client wants no answer, and the SDK's server will send none.
      const id = (message.params as { requestId?: RequestId } | undefined)?.requestId;
      if (id !== undefined && this.#inFlight.delete(id)) this.#onAnswered?.();
    }
    this.onmessage?.(message);
  }
}
