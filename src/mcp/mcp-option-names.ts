/**
 * The names of the options of MCP's public parts (`createMcpServer`,
 * `McpHttpServer`, `McpCallGate`, `builtinToolAnnotations`): each refuses a
 * name not listed here with `TP_ERR_INVALID_OPTION`, naming the closest
 * known one, so that a misspelt option never leaves its default in force.
 * The lists are typed against the options' interfaces: an option added
 * there and not here fails the typecheck.
 *
 * @module
 */
import type { McpCallGateOptions } from "./mcp-call-gate.js";
import type { McpHttpServerOptions } from "./mcp-http-server.js";
import type { McpServerOptions } from "./mcp-server.js";
import type { builtinToolAnnotations } from "./mcp-tools.js";

/** The options of `createMcpServer`. */
export const mcpServerOptionNames = Object.keys({
  name: true,
  version: true,
  annotations: true,
  log: true,
  callGate: true,
} satisfies Record<keyof McpServerOptions, true>);

/** The options of `McpHttpServer`, its sessions' and pressure limits included. */
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

/** The options of `McpCallGate`. */
export const mcpCallGateOptionNames = Object.keys({
  maxRunning: true,
  pools: true,
  maxSessionRunning: true,
  maxQueue: true,
  maxSessionCalls: true,
  retryAfterSeconds: true,
} satisfies Record<keyof McpCallGateOptions, true>);

/** The options of `builtinToolAnnotations`. */
export const builtinToolAnnotationsOptionNames = Object.keys({ allowWrite: true } satisfies Record<
  keyof Parameters<typeof builtinToolAnnotations>[0],
  true
>);
