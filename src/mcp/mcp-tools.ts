/**
 * How a runtime's tools and results look in MCP: `tools/list` entries with
 * their JSON Schemas and annotations, and `tools/call` results.
 *
 * @module
 */
import type { CallToolResult, Tool, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";

import { refuseUnknownOptions } from "../option-checks.js";
import type { AgentTool, AgentToolResult, ToolResultMessage } from "../types.js";
import { builtinToolAnnotationsOptionNames } from "./mcp-option-names.js";

/** Annotations by tool name: hints to MCP clients (read-only, destructive, …). */
export type McpToolAnnotations = Readonly<Record<string, ToolAnnotations>>;

/**
 * The annotations of the built-in tools: `grep`, `hash` and `diff` only read;
 * `patch` writes a file when asked to (`write: true`), so it is destructive
 * when writes are allowed and read-only otherwise.
 */
export function builtinToolAnnotations(options: { allowWrite: boolean }): McpToolAnnotations {
  refuseUnknownOptions(options, builtinToolAnnotationsOptionNames);
  const readOnly: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, openWorldHint: false };
  return {
    grep: { title: "Grep", ...readOnly },
    hash: { title: "Hash", ...readOnly },
    diff: { title: "Diff", ...readOnly },
    patch: options.allowWrite
      ? { title: "Patch", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false }
      : { title: "Patch", ...readOnly },
  };
}

/** The `tools/list` entries of a runtime's tools, in registration order. */
export function toMcpTools(tools: readonly AgentTool[], annotations: McpToolAnnotations = {}): Tool[] {
  return tools.map((tool) => {
    const entry: Tool = {
      name: tool.name,
      title: tool.label,
      description: tool.description,
      // JSON round trip: TypeBox schemas carry symbol keys and MCP wants plain JSON.
      inputSchema: toInputSchema(tool.parameters),
    };
    const hints = annotations[tool.name];
    if (hints !== undefined) entry.annotations = { ...hints };
    return entry;
  });
}

function toInputSchema(parameters: Record<string, unknown>): Tool["inputSchema"] {
  const schema = JSON.parse(JSON.stringify(parameters)) as Record<string, unknown>;
  // MCP requires an object schema at the top; tool parameters are one.
  return { ...schema, type: "object" } as Tool["inputSchema"];
}

/**
 * A call's result message as a `tools/call` result: the content as it is
 * (pi's text and image blocks are MCP's), `isError`, and the details in
 * `structuredContent`, with toolpool's fault code, when there is one, as
 * `structuredContent.code`.
 */
export function toCallToolResult(message: ToolResultMessage): CallToolResult {
  const code = codeOf(message.details);
  const structuredContent: Record<string, unknown> = { details: message.details ?? null };
  if (code !== undefined) structuredContent.code = code;
  return {
    content: message.content.map((block) =>
      block.type === "text" ? { type: "text", text: block.text } : { type: "image", data: block.data, mimeType: block.mimeType },
    ),
    isError: message.isError,
    structuredContent,
  };
}

/** The text of a partial result, for a progress notification's `message`. */
export function textOfPartial(partial: AgentToolResult<unknown>): string {
  return partial.content
    .filter((block) => block.type === "text")
    .map((block) => (block as { text: string }).text)
    .join("\n");
}

function codeOf(details: unknown): string | undefined {
  const code = (details as { code?: unknown } | null | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}
