/** The options of {@link createServer}: validated once against a JSON Schema, defaults from the schema, frozen. */
import { BlockList, isIP } from "node:net";

import type { ErrorObject } from "ajv";

import { compiledValidator } from "../compiled-validators.js";
import { describeValue, ToolpoolError } from "../errors.js";
import { invalidOption, invalidOptionFromSchema, maxTimerMs } from "../option-checks.js";
import { checkBearerToken } from "../http/bearer-auth.js";

/** Options of `createServer`. */
export interface ServerOptions {
  /**
   * The address to listen on; anything but loopback (`127.0.0.0/8`, `::1`, `localhost`) requires a `token`. @default "127.0.0.1"
   */
  host?: string;
  /** The TCP port; `0` picks a free one (read it from `listen()`'s URL). @default 8080 */
  port?: number;
  /**
   * Bearer token every request but `GET /healthz` and the live view's page must present; required off loopback.
   * Visible ASCII only (0x21–0x7E), as clients send in a header. @default undefined (no authentication, loopback only)
   */
  token?: string;
  /** Largest request body accepted, in bytes; a larger one is answered 413. @default 1048576 */
  maxBodyBytes?: number;
  /**
   * Most milliseconds one request may take, on the runtime's clock from the batch's start: a slower request body gets
   * 408, a batch still running is aborted (its error results are still delivered). @default 300000
   */
  requestTimeoutMs?: number;
  /** Milliseconds `close()` lets in-flight batches finish before aborting them; `close({ graceMs })` overrides it. @default 10000 */
  shutdownGraceMs?: number;
  /** Seconds in the `Retry-After` header of a 429 (the pool's queue is full) and of a 503 under pressure. @default 1 */
  retryAfterSeconds?: number;
  /**
   * `Host` values (`name` or `name:port`, no case) accepted besides the loopback names by a server without a token;
   * others get 403 `TP_ERR_FORBIDDEN` (DNS rebinding). With a token any `Host` passes: a rebinding page cannot have it. @default []
   */
  allowedHosts?: string[];
  /**
   * Browser origins (`https://app.example`) accepted; any other `Origin` gets 403 `TP_ERR_FORBIDDEN`. Requests
   * without one (SDKs, curl) are not affected. @default []
   */
  allowedOrigins?: string[];
  /** Most tool calls one batch may hold; a larger batch is answered 400 `TP_ERR_INVALID_BATCH`. @default 256 */
  maxCallsPerBatch?: number;
  /**
   * Most TCP connections open at once. Past it a new one replaces one with no request in flight (closing, idle
   * longest, or oldest without a request); when all are busy the new one is closed. @default 1024
   */
  maxConnections?: number;
  /**
   * Most connections from one IPv4 address or IPv6 /64, with the same rule. Behind a reverse proxy raise it to
   * `maxConnections`: every connection comes from the proxy. @default 256
   */
  maxConnectionsPerAddress?: number;
  /** Milliseconds until a connection's first request headers are complete; then 408 `TP_ERR_HEADERS_TIMEOUT`. @default 5000 */
  headersTimeoutMs?: number;
  /**
   * Whether SSE `tool_execution_update` frames carry `args`, as pi's do; `false` saves repeating large arguments
   * already in `tool_execution_start`. @default true
   */
  updateArgs?: boolean;
  /** Whether to serve the live view (`GET /ui`, and `GET /v1/pool/events` behind the token); `false` answers 404. @default true */
  ui?: boolean;
  /**
   * Milliseconds a pool-events watcher's socket may take nothing of what waits for it before its connection is reset,
   * giving back its place and the kernel's buffers. Restarts each time the socket takes a write. @default 30000
   */
  stalledWatcherMs?: number;
  /** Most watchers of `GET /v1/pool/events` at once; one more gets 503 `TP_ERR_OVERLOADED`. @default 32 */
  maxWatchers?: number;
  /** Event-loop delay (ms) past which requests get 503 `TP_ERR_OVERLOADED` (`/healthz` excepted); 0 is off. @default 1000 */
  maxEventLoopDelayMs?: number;
  /** Heap bytes in use past which requests get 503 `TP_ERR_OVERLOADED` (`/healthz` excepted); 0 is off. @default 0 */
  maxHeapUsedBytes?: number;
  /** Resident set size in bytes past which requests get 503 `TP_ERR_OVERLOADED`; 0 is off. @default 0 */
  maxRssBytes?: number;
}

/** Server options after validation and defaults; frozen. */
export interface ResolvedServerOptions {
  readonly host: string;
  readonly port: number;
  readonly token: string | undefined;
  readonly maxBodyBytes: number;
  readonly requestTimeoutMs: number;
  readonly shutdownGraceMs: number;
  readonly retryAfterSeconds: number;
  readonly allowedHosts: readonly string[];
  readonly allowedOrigins: readonly string[];
  readonly maxCallsPerBatch: number;
  readonly maxConnections: number;
  readonly maxConnectionsPerAddress: number;
  readonly headersTimeoutMs: number;
  readonly updateArgs: boolean;
  readonly ui: boolean;
  readonly stalledWatcherMs: number;
  readonly maxWatchers: number;
  readonly maxEventLoopDelayMs: number;
  readonly maxHeapUsedBytes: number;
  readonly maxRssBytes: number;
}

/** The schema of {@link ServerOptions} (compiled at build time: see compiled-validators.ts). */
export const serverOptionsSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    host: { type: "string", minLength: 1, default: "127.0.0.1" },
    port: { type: "integer", minimum: 0, maximum: 65_535, default: 8080 },
    token: { type: "string", minLength: 1 },
    maxBodyBytes: { type: "integer", minimum: 1, default: 1_048_576 },
    requestTimeoutMs: { type: "integer", minimum: 1, maximum: maxTimerMs, default: 300_000 },
    shutdownGraceMs: { type: "integer", minimum: 0, maximum: maxTimerMs, default: 10_000 },
    retryAfterSeconds: { type: "integer", minimum: 0, default: 1 },
    allowedHosts: { type: "array", items: { type: "string", minLength: 1 }, default: [] },
    allowedOrigins: { type: "array", items: { type: "string", minLength: 1 }, default: [] },
    maxCallsPerBatch: { type: "integer", minimum: 1, default: 256 },
    maxConnections: { type: "integer", minimum: 1, default: 1024 },
    maxConnectionsPerAddress: { type: "integer", minimum: 1, default: 256 },
    headersTimeoutMs: { type: "integer", minimum: 1, maximum: maxTimerMs, default: 5000 },
    updateArgs: { type: "boolean", default: true },
    ui: { type: "boolean", default: true },
    stalledWatcherMs: { type: "integer", minimum: 1, maximum: maxTimerMs, default: 30_000 },
    maxWatchers: { type: "integer", minimum: 1, default: 32 },
    maxEventLoopDelayMs: { type: "integer", minimum: 0, default: 1000 },
    maxHeapUsedBytes: { type: "integer", minimum: 0, default: 0 },
    maxRssBytes: { type: "integer", minimum: 0, default: 0 },
  },
} as const;

/**
 * Validates, applies defaults, freezes; never mutates the caller's object. Throws `TP_ERR_INVALID_OPTION`, also for a
 * non-loopback `host` without a `token`.
 */
export function resolveServerOptions(options: ServerOptions | undefined): ResolvedServerOptions {
  if (options === undefined) options = {};
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw invalidOption("options", "an object", options);
  }
  // A copy, so that ajv's defaults never land in the caller's object; `undefined` counts as absent.
  const data: Record<string, unknown> = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
  const validateOptions = compiledValidator("server-options");
  if (!validateOptions(data)) {
    throw invalidOptionFromSchema((validateOptions.errors as ErrorObject[])[0]!, options as Record<string, unknown>, "server option");
  }
  const resolved = data as unknown as Omit<ResolvedServerOptions, "token"> & { token?: string };
  // A token no client can send would make the server refuse everyone.
  if (resolved.token !== undefined) checkBearerToken(resolved.token);
  if (resolved.token === undefined && !isLoopbackHost(resolved.host)) {
    throw new ToolpoolError(
      "TP_ERR_INVALID_OPTION",
      `Expected \`token\` to be set when \`host\` is not a loopback address, got host ${describeValue(resolved.host)} and no token`,
    );
  }
  return Object.freeze({
    host: resolved.host,
    port: resolved.port,
    token: resolved.token,
    maxBodyBytes: resolved.maxBodyBytes,
    requestTimeoutMs: resolved.requestTimeoutMs,
    shutdownGraceMs: resolved.shutdownGraceMs,
    retryAfterSeconds: resolved.retryAfterSeconds,
    allowedHosts: Object.freeze([...resolved.allowedHosts]),
    allowedOrigins: Object.freeze([...resolved.allowedOrigins]),
    maxCallsPerBatch: resolved.maxCallsPerBatch,
    maxConnections: resolved.maxConnections,
    maxConnectionsPerAddress: resolved.maxConnectionsPerAddress,
    headersTimeoutMs: resolved.headersTimeoutMs,
    updateArgs: resolved.updateArgs,
    ui: resolved.ui,
    stalledWatcherMs: resolved.stalledWatcherMs,
    maxWatchers: resolved.maxWatchers,
    maxEventLoopDelayMs: resolved.maxEventLoopDelayMs,
    maxHeapUsedBytes: resolved.maxHeapUsedBytes,
    maxRssBytes: resolved.maxRssBytes,
  });
}

/** `localhost`, `127.0.0.0/8`, `::1` (or `127.x` IPv4-mapped); `0.0.0.0` and `::` listen everywhere, so are not loopback. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (bare.toLowerCase() === "localhost") return true;
  const family = isIP(bare);
  return family !== 0 && loopback.check(bare, family === 4 ? "ipv4" : "ipv6");
}

/** Node's BlockList matches IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`) against IPv4 rules too. */
const loopback = new BlockList();
loopback.addSubnet("127.0.0.0", 8, "ipv4");
loopback.addAddress("::1", "ipv6");
