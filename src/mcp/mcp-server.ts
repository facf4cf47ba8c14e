/** An MCP server (the SDK's low-level `Server`): `tools/call` runs as a batch of one, so every stage, hook and validation applies. */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type ServerNotification } from "@modelcontextprotocol/sdk/types.js";

import type { BatchEvent } from "../events.js";
import type { ExecuteOptions, Runtime } from "../runtime.js";
import type { AssistantMessage } from "../types.js";
import { refuseUnknownOptions } from "../option-checks.js";
import type { McpCallGate } from "./mcp-call-gate.js";
import { mcpToolPools } from "./mcp-gate-pools.js";
import { mcpServerOptionNames } from "./mcp-option-names.js";
import { serverCancelReasons } from "./mcp-refusal.js";
import { textOfPartial, toCallToolResult, toMcpTools, type McpToolAnnotations } from "./mcp-tools.js";

/** The `_meta` key of a progress notification that holds the tool's partial result as it sent it. */
export const PARTIAL_RESULT_META_KEY = "toolpool/partialResult";

/** Options of {@link createMcpServer}. */
export interface McpServerOptions {
  /** The server's name in `initialize`. @default "toolpool" */
  name?: string;
  /** The server's version in `initialize`. @default "0.0.0" */
  version?: string;
  /** Hints per tool name for `tools/list` (see `builtinToolAnnotations`). @default {} */
  annotations?: McpToolAnnotations;
  /** Receives one line per notable event (a call cancelled by the client); must not throw. @default none */
  log?: (line: string) => void;
  /**
   * Where calls wait for a place on their pool, shared by every session (see {@link McpCallGate}): a refused call gets
   * its JSON-RPC error, and one cancelled while it waits never starts. @default none (every call goes to the runtime at once)
   */
  callGate?: McpCallGate;
}

/**
 * Creates an MCP server for `runtime`; the runtime stays the caller's to close. Failures come back as `isError`
 * results, as in pi. With a `progressToken` each partial result becomes a `notifications/progress`, in order;
 * `notifications/cancelled` aborts the call's signal.
 * @example
 * import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
 * await createMcpServer(runtime).connect(new StdioServerTransport());
 */
export function createMcpServer(runtime: Runtime, options: McpServerOptions = {}): Server {
  refuseUnknownOptions(options, mcpServerOptionNames);
  const server = new Server(
    { name: options.name ?? "toolpool", version: options.version ?? "0.0.0" },
    { capabilities: { tools: { listChanged: false } } },
  );
  const tools = toMcpTools(runtime.agentTools(), options.annotations);
  // Only worker tools wait for a place, on their own pool's; an inline tool runs on the main thread at once.
  const toolPools = mcpToolPools(runtime);
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name, arguments: args = {} } = request.params;
    const toolCallId = `mcp-${String(extra.requestId)}`;
    const progressToken = request.params._meta?.progressToken;
    let progress = 0;
    const emit =
      progressToken === undefined
        ? undefined
        : async (event: BatchEvent): Promise<void> => {
            if (event.type !== "tool_execution_update") return;
            progress += 1;
            const notification: ServerNotification = {
              method: "notifications/progress",
              params: {
                progressToken,
                progress,
                message: textOfPartial(event.partialResult),
                _meta: { [PARTIAL_RESULT_META_KEY]: event.partialResult },
              },
            };
            // A client gone away must not fail the call: the batch still ends cleanly.
            await extra.sendNotification(notification).catch(() => {});
          };
    const assistantMessage: AssistantMessage = {
      role: "assistant",
      content: [{ type: "toolCall", id: toolCallId, name, arguments: args }],
    };
    // An MCP session is the batch's session: its spans name it, and scheduling takes turns by it.
    const executeOptions: ExecuteOptions & { sessionKey?: string } = { signal: extra.signal };
    if (emit !== undefined) executeOptions.emit = emit;
    if (extra.sessionId !== undefined) executeOptions.sessionKey = `mcp:${extra.sessionId}`;
    const slot = await options.callGate?.acquire(executeOptions.sessionKey ?? "", extra.signal, toolPools.get(name) ?? false);
    // Cancelled while it waited: it never started, and the SDK answers nothing.
    if (options.callGate !== undefined && slot === undefined) throw new Error(`call ${toolCallId} was cancelled before it started`);
    let result: CallToolResult;
    try {
      const { messages } = await runtime.executeToolCalls(assistantMessage, executeOptions);
      result = toCallToolResult(messages[0]!);
    } finally {
      slot?.release();
    }
    if (extra.signal.aborted) {
      const code = result.structuredContent?.code;
      const reason: unknown = extra.signal.reason;
      const by = typeof reason === "string" && serverCancelReasons.has(reason) ? `(${reason})` : "by the client";
      options.log?.(
        `call ${toolCallId} (${name}) cancelled ${by}; it ended ${result.isError ? `with an error${code === undefined ? "" : ` (${String(code)})`}` : "normally"}`,
      );
    }
    return result;
  });
  return server;
}
