/** `toolpool/mcp`: a runtime's tools over MCP; a subpath of its own, so that importing `toolpool` never loads the SDK. */
export { createMcpServer, PARTIAL_RESULT_META_KEY } from "./mcp-server.js";
export type { McpServerOptions } from "./mcp-server.js";
export { McpHttpServer, MCP_PATH } from "./mcp-http-server.js";
export type { McpHttpServerOptions } from "./mcp-http-server.js";
export { McpCallGate } from "./mcp-call-gate.js";
export type { McpCallGateOptions, McpCallGatePool, McpCallSlot } from "./mcp-call-gate.js";
export { mcpCallGatePools, mcpToolPools } from "./mcp-gate-pools.js";
export type { McpSessionLimits } from "./mcp-sessions.js";
export type { McpEarlyRefusals } from "./mcp-session.js";
export type { McpPressureLimits } from "./mcp-pressure.js";
export { McpRefusal, refusalErrorCode } from "./mcp-refusal.js";
export type { McpRefusalData } from "./mcp-refusal.js";
export { builtinToolAnnotations, toCallToolResult, toMcpTools } from "./mcp-tools.js";
export type { McpToolAnnotations } from "./mcp-tools.js";
export { checkBrowserGuard } from "../http/browser-guard.js";
export type { BrowserGuardOptions, BrowserGuardVerdict } from "../http/browser-guard.js";
