/** How a runtime's tools and results look in MCP: `tools/list` entries and `tools/call` results. */
import type { CallToolResult, Tool, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";

import { refuseUnknownOptions } from "../option-checks.js";
import type { AgentTool, AgentToolResult, ToolResultMessage } from "../types.js";
import { builtinToolAnnotationsOptionNames } from "./mcp-option-names.js";

/** Hints to MCP clients (read-only, destructive, …) by tool name. */
export type McpToolAnnotations = Readonly<Record<string, ToolAnnotations>>;

/** `patch` is destructive when writes are allowed, read-only otherwise; the others only read. */
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

/** pi's text and image blocks are MCP's; the details go in `structuredContent`, a fault's code as `structuredContent.code`. */
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
