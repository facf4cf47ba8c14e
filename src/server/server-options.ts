/**
 * The options of {@link createServer}: validated once against a JSON Schema,
 * defaults applied from the schema, frozen.
 *
 * @module
 */
import { BlockList, isIP } from "node:net";

import type { ErrorObject } from "ajv";

import { compiledValidator } from "../compiled-validators.js";
import { describeValue, ToolpoolError } from "../errors.js";
import { invalidOption, invalidOptionFromSchema, maxTimerMs } from "../option-checks.js";
import { checkBearerToken } from "../http/bearer-auth.js";

/** Options of `createServer`. */
export interface ServerOptions {
  /**
   * The address to listen on. Anything but a loopback address (`127.0.0.0/8`,
   * `::1`, `localhost`) requires a `token`.
   * @default "127.0.0.1"
   */
  host?: string;
  /**
   * The TCP port to listen on; `0` picks a free one (read it from `listen()`'s URL).
   * @default 8080
   */
  port?: number;
  /**
   * Bearer token every request but `GET /healthz` (and the live view's
   * page) must present (`Authorization: Bearer TOKEN`). Required when `host`
   * is not loopback. Visible ASCII only (0x21–0x7E), the characters clients
   * send in a header: any other is refused with `TP_ERR_INVALID_OPTION`.
   * @default undefined (no authentication, loopback only)
   */
  token?: string;
  /**
   * Largest request body accepted, in bytes; a larger one is answered 413.
   * @default 1048576 (1 MiB)
   */
  maxBodyBytes?: number;
  /**
   * Most milliseconds one request may take: Node answers 408 when the request
   * itself takes longer to arrive, and a batch still running at this deadline
   * is aborted (its calls end with error results, which are still delivered).
   * Counted on the runtime's clock from the batch's start.
   * @default 300000 (5 minutes)
   */
  requestTimeoutMs?: number;
  /**
   * Milliseconds `close()` lets in-flight batches finish before it aborts
   * them; `close({ graceMs })` overrides it per call.
   * @default 10000
   */
  shutdownGraceMs?: number;
  /**
   * Seconds sent in the `Retry-After` header of a 429 (the pool's queue is
   * full) and of a 503 under pressure.
   * @default 1
   */
  retryAfterSeconds?: number;
  /**
   * `Host` values accepted besides the loopback names, as clients send them
   * (`name` or `name:port`, compared without case). A server without a token
   * answers only requests whose `Host` is `localhost`, `127.0.0.1` or
   * `[::1]` (any port) or is listed here; others get 403 `TP_ERR_FORBIDDEN`
   * before anything runs. A server with a token accepts any `Host`: the
   * token is what a rebinding page cannot have.
   * @default [] (loopback names only, on a server without a token)
   */
  allowedHosts?: string[];
  /**
   * Browser origins (`https://app.example`) whose requests are accepted. A
   * request with any other `Origin` header gets 403 `TP_ERR_FORBIDDEN`;
   * requests without one (SDKs, curl) are not affected.
   * @default [] (no browser origin)
   */
  allowedOrigins?: string[];
  /**
   * Most tool calls one batch may hold; a larger batch is answered 400
   * `TP_ERR_INVALID_BATCH` before any call runs.
   * @default 256
   */
  maxCallsPerBatch?: number;
  /**
   * Most TCP connections open at once. Past it, a new connection takes the
   * place of one with no request in flight: one being closed after a
   * refusal, else the one idle longest (a kept-alive connection whose
   * requests are all answered), else the oldest that has not completed a
   * request yet; when every connection has a request in flight, the new
   * one is closed at once.
   * @default 1024
   */
  maxConnections?: number;
  /**
   * Most TCP connections open at once from one IPv4 address or one IPv6
   * /64, with the same rule as `maxConnections` past it, within that
   * address. Behind a reverse proxy every connection comes from the proxy:
   * raise it to `maxConnections` there.
   * @default 256
   */
  maxConnectionsPerAddress?: number;
  /**
   * Milliseconds from a connection's opening until its first request's
   * headers must be complete; past it the connection is answered 408
   * `TP_ERR_HEADERS_TIMEOUT` and closed.
   * @default 5000
   */
  headersTimeoutMs?: number;
  /**
   * Whether SSE `tool_execution_update` frames carry the call's `args`, as
   * pi's event does. `false` leaves them out: a call's arguments are already
   * in its `tool_execution_start`, and repeating large ones in every update
   * multiplies the stream's size.
   * @default true
   */
  updateArgs?: boolean;
  /**
   * Whether the server serves the live view: the page at `GET /ui` and the
   * pool's event stream at `GET /v1/pool/events` (behind the token, like
   * every route but the page's files and `/healthz`). `false` answers both 404.
   * @default true
   */
  ui?: boolean;
  /**
   * Milliseconds a watcher of `GET /v1/pool/events` may leave what the
   * server wrote to it waiting, its socket taking none of it (the watcher
   * reading nothing, the kernel's buffers for it full), before its
   * connection is reset, which gives its place (one of `maxWatchers`) back
   * and frees what the kernel queued for it. However little waits: the
   * clock starts, on the runtime's clock, with the first write the socket
   * leaves waiting, and restarts each time it takes one.
   * @default 30000
   */
  stalledWatcherMs?: number;
  /**
   * Most watchers of `GET /v1/pool/events` at once; one more is answered
   * 503 `TP_ERR_OVERLOADED` with `Retry-After`. Each holds at most a few
   * MiB (see docs/http-api.md, "Live view").
   * @default 32
   */
  maxWatchers?: number;
  /**
   * Mean event-loop delay (ms, sampled every second) past which requests get
   * 503 `TP_ERR_OVERLOADED` with `Retry-After` (`GET /healthz` excepted);
   * 0 turns the check off.
   * @default 1000
   */
  maxEventLoopDelayMs?: number;
  /**
   * Heap bytes in use past which requests get 503 `TP_ERR_OVERLOADED`
   * (`GET /healthz` excepted); 0 turns the check off.
   * @default 0 (off)
   */
  maxHeapUsedBytes?: number;
  /**
   * Resident set size in bytes past which requests get 503
   * `TP_ERR_OVERLOADED` (`GET /healthz` excepted); 0 turns the check off.
   * @default 0 (off)
   */
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
 * Validates `createServer`'s options, applies defaults and freezes the result.
 * Never mutates the caller's object. Throws `TP_ERR_INVALID_OPTION` naming
 * the option, what was expected and what arrived — also when `host` is not
 * loopback and no `token` is set.
 */
export function resolveServerOptions(options: ServerOptions | undefined): ResolvedServerOptions {
  if (options === undefined) options = {};
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw invalidOption("options", "an object", options);
  }
  // Copied so that ajv's defaults never land in the caller's object; options
  // that are `undefined` count as absent.
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

/**
 * Whether `host` names only this machine: `localhost`, `127.0.0.0/8`, `::1`
 * (or `127.x` written as an IPv4-mapped IPv6 address). `0.0.0.0` and `::`
 * listen on every interface, so they are not loopback.
 */
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
