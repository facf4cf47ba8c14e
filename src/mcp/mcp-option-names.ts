/**
 * The option names of MCP's public parts, each refusing any other with the closest known name, so that a misspelt
 * option never leaves its default in force. Typed against the interfaces: an option missing here fails the typecheck.
 */
import type { McpCallGateOptions } from "./mcp-call-gate.js";
import type { McpHttpServerOptions } from "./mcp-http-server.js";
import type { McpServerOptions } from "./mcp-server.js";
import type { builtinToolAnnotations } from "./mcp-tools.js";

export const mcpServerOptionNames = Object.keys({
  name: true,
  version: true,
  annotations: true,
  log: true,
  callGate: true,
} satisfies Record<keyof McpServerOptions, true>);

export const mcpHttpServerOptionNames = Object.keys({
  host: true,
  port: true,
  token: true,
  allowedHosts: true,
  allowedOrigins: true,
  maxBodyBytes: true,
  maxConnections: true,
  maxConnectionsPerAddress: true,
  headersTimeoutMs: true,
  maxSessions: true,
  sessionIdleMs: true,
  retryAfterSeconds: true,
  stalledResponseMs: true,
  log: true,
  maxEventLoopDelayMs: true,
  maxHeapUsedBytes: true,
  maxRssBytes: true,
  earlyRefusals: true,
} satisfies Record<keyof McpHttpServerOptions, true>);

export const mcpCallGateOptionNames = Object.keys({
  maxRunning: true,
  pools: true,
  maxSessionRunning: true,
  maxQueue: true,
  maxSessionCalls: true,
  retryAfterSeconds: true,
} satisfies Record<keyof McpCallGateOptions, true>);

export const builtinToolAnnotationsOptionNames = Object.keys({ allowWrite: true } satisfies Record<
  keyof Parameters<typeof builtinToolAnnotations>[0],
  true
>);
