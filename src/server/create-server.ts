/** `createServer(runtime, options)`: an HTTP server (Fastify) in front of a runtime, with graceful shutdown. */
import type { AddressInfo } from "node:net";
import { isIP } from "node:net";

import type { FastifyInstance } from "fastify";

import { describeValue, ToolpoolError } from "../errors.js";
import { Runtime } from "../runtime.js";
import { BearerAuth } from "../http/bearer-auth.js";
import { checkBrowserGuard, type BrowserGuardOptions } from "../http/browser-guard.js";
import { addBatchRoute, sendDraining } from "./batch-route.js";
import { ConnectionGuard } from "../http/connection-guard.js";
import type { ErrorBody } from "../http/error-body.js";
import { handleError, sendError } from "../http/http-errors.js";
import { InFlightBatches } from "./in-flight-batches.js";
import { loadFastify, loadUnderPressure } from "./lazy-modules.js";
import type { FastifyApp } from "./fastify-app.js";
import { addInfoRoutes } from "./info-routes.js";
import { addLiveViewRoutes, publicLiveViewRoutes } from "./live-view/live-view-routes.js";
import { PoolEventHub, type PoolEventsDiagnosis } from "./live-view/pool-event-hub.js";
import { ServerMetrics } from "./server-metrics.js";
import { SocketTracker } from "./socket-tracker.js";
import { maxTimerMs } from "../option-checks.js";
import { resolveServerOptions, type ResolvedServerOptions, type ServerOptions } from "./server-options.js";

// The public types of the server, re-exported so that the package index names one module.
export type { BatchRequestBody } from "./batch-request.js";
export type { ErrorBody } from "../http/error-body.js";
export type {
  FastifyApp,
  FastifyInjectOptions,
  FastifyInjectResponse,
  FastifyRouteOptions,
  FastifyRouteReply,
  FastifyRouteRequest,
} from "./fastify-app.js";
export type { ToolsResponse } from "./tools-response.js";
export type { PoolEventsDiagnosis } from "./live-view/pool-event-hub.js";
export type { PoolEventClientState } from "./live-view/pool-event-client.js";
export type {
  PoolCallOutcome,
  PoolCallRecord,
  PoolCallsFrame,
  PoolEventFrame,
  PoolEventsHelloFrame,
  PoolFaultView,
  PoolRunningCall,
  PoolSessionView,
  PoolSnapshotFrame,
  PoolThreadState,
  PoolThreadView,
  PoolToolView,
} from "./live-view/pool-event-frames.js";
export type { ResolvedServerOptions, ServerOptions } from "./server-options.js";

/** Options of {@link ToolpoolServer.close}. */
export interface CloseServerOptions {
  /** Milliseconds in-flight batches get before they are aborted; a shorter second `close` shortens it. @default the server's `shutdownGraceMs` */
  graceMs?: number;
}

/**
 * An HTTP server in front of a runtime: {@link createServer}, then `listen()`, `close()`. Every batch runs in
 * the runtime's fixed `toolExecution` mode; a request asking for the other one is answered 400.
 */
export class ToolpoolServer {
  readonly #app: FastifyInstance;
  readonly #runtime: Runtime;
  readonly #options: ResolvedServerOptions;
  readonly #batches: InFlightBatches;
  readonly #metrics: ServerMetrics;
  readonly #sockets: SocketTracker;
  readonly #poolEvents: PoolEventHub | undefined;
  readonly #graceTimers: unknown[] = [];
  #isDraining = false;
  #closing: Promise<void> | undefined;
  #url: string | undefined;

  constructor(runtime: Runtime, options?: ServerOptions) {
    if (!(runtime instanceof Runtime) || runtime.isClosed) {
      throw new ToolpoolError("TP_ERR_INVALID_OPTION", `Expected \`runtime\` to be an open Runtime, got ${describeValue(runtime)}`);
    }
    this.#runtime = runtime;
    this.#options = resolveServerOptions(options);
    this.#batches = new InFlightBatches(runtime.options.clock, this.#options.requestTimeoutMs, destroyGraceMs(runtime));
    this.#metrics = new ServerMetrics(runtime, () => this.#batches.size);
    this.#app = loadFastify().fastify({
      logger: false,
      bodyLimit: this.#options.maxBodyBytes,
      requestTimeout: this.#options.requestTimeoutMs,
      // Report every problem of a body at once, never alter it (Fastify's defaults coerce and drop silently).
      ajv: { customOptions: { allErrors: true, coerceTypes: false, removeAdditional: false, useDefaults: false } },
    });
    new ConnectionGuard(this.#app.server, this.#options);
    this.#sockets = new SocketTracker(this.#app.server);
    this.#app.setErrorHandler(handleError);
    this.#app.setNotFoundHandler((request, reply) => sendError(reply, 404, "FST_ERR_NOT_FOUND", `Route ${request.method}:${request.url} not found`));
    const auth = this.#options.token === undefined ? undefined : new BearerAuth(this.#options.token);
    const guard: BrowserGuardOptions = {
      hasToken: auth !== undefined,
      allowedHosts: this.#options.allowedHosts,
      allowedOrigins: this.#options.allowedOrigins,
    };
    this.#app.addHook("onRequest", async (request, reply) => {
      if (this.#isDraining) return sendDraining(reply);
      // Before the token check: a web page must not learn even whether the server wants a token.
      // A refused client keeps no connection, so it cannot hold a slot past its refusal.
      const verdict = checkBrowserGuard(firstHeader(request.headers.host), firstHeader(request.headers.origin), guard);
      if (verdict.kind === "deny") return sendError(reply.header("connection", "close"), verdict.status, verdict.code, verdict.reason);
      // Load balancers' health checks hold no token; the live view's page holds no pool data (its stream needs the token).
      if (auth !== undefined && !this.#isPublicRoute(request.routeOptions.url) && !auth.isAuthorized(request.headers.authorization)) {
        reply.header("www-authenticate", 'Bearer realm="toolpool"').header("connection", "close");
        return sendError(reply, 401, "TP_ERR_UNAUTHORIZED", "Missing or invalid bearer token (Authorization: Bearer TOKEN)");
      }
      return undefined;
    });
    addBatchRoute(this.#app, {
      runtime,
      options: this.#options,
      batches: this.#batches,
      isDraining: () => this.#isDraining,
    });
    addInfoRoutes(this.#app, { runtime, metrics: this.#metrics });
    this.#poolEvents = this.#options.ui ? new PoolEventHub(runtime, this.#options) : undefined;
    if (this.#poolEvents !== undefined) addLiveViewRoutes(this.#app, this.#poolEvents, this.#options.retryAfterSeconds);
    this.#addPressureCheck();
  }

  /** Sheds load (503 `TP_ERR_OVERLOADED`) while the event loop lags or memory is past its limit; `/healthz` still answers. */
  #addPressureCheck(): void {
    const { maxEventLoopDelayMs, maxHeapUsedBytes, maxRssBytes, retryAfterSeconds } = this.#options;
    if (maxEventLoopDelayMs === 0 && maxHeapUsedBytes === 0 && maxRssBytes === 0) return;
    void this.#app.register(loadUnderPressure(), {
      maxEventLoopDelay: maxEventLoopDelayMs,
      maxHeapUsedBytes,
      maxRssBytes,
      pressureHandler: (request, reply, type, value) => {
        if (request.routeOptions.url === "/healthz") return undefined;
        reply.code(503).header("retry-after", String(retryAfterSeconds)).type("application/json; charset=utf-8");
        const body: ErrorBody = {
          statusCode: 503,
          error: "Service Unavailable",
          code: "TP_ERR_OVERLOADED",
          message: `The server is overloaded (${type} ${String(value ?? "")}); retry after ${retryAfterSeconds} s`,
        };
        // under-pressure sends what the handler returns (its types say void).
        return body as unknown as undefined;
      },
    });
  }

  #isPublicRoute(url: string | undefined): boolean {
    return url === "/healthz" || (this.#poolEvents !== undefined && url !== undefined && publicLiveViewRoutes.has(url));
  }

  /** The state of `GET /v1/pool/events` (listening, watchers); `undefined` with `ui: false`. */
  diagnosePoolEvents(): PoolEventsDiagnosis | undefined {
    return this.#poolEvents?.diagnose();
  }

  /**
   * The Fastify instance, for `inject()` or extra routes (add them before `listen()`). Typed as {@link FastifyApp}
   * so that toolpool's types need no fastify; cast to `FastifyInstance` for the rest of its API.
   */
  get fastify(): FastifyApp {
    return this.#app;
  }

  /** The validated options, defaults applied; frozen. */
  get options(): ResolvedServerOptions {
    return this.#options;
  }

  /** `http://HOST:PORT` once listening (the real port when `port` is 0). */
  get url(): string | undefined {
    return this.#url;
  }

  /** Whether `close()` has been called: new requests are answered 503. */
  get isDraining(): boolean {
    return this.#isDraining;
  }

  /** Starts listening on `host` and `port`; resolves to the server's URL. */
  async listen(): Promise<string> {
    if (this.#closing !== undefined) throw new ToolpoolError("TP_ERR_CLOSED", "listen() was called after close()");
    await this.#app.listen({ host: this.#options.host, port: this.#options.port });
    const address = this.#app.server.address() as AddressInfo;
    // A name (`localhost`) may be bound to several addresses: show it as given.
    const host = isIP(this.#options.host) === 0 ? this.#options.host : address.address;
    this.#url = `http://${isIP(host) === 6 ? `[${host}]` : host}:${address.port}`;
    return this.#url;
  }

  /**
   * Shuts down gracefully: new requests get 503 at once; in-flight batches get `graceMs`, then are aborted
   * (every stream still ends with `batch_end`); then the HTTP server closes, then the runtime. Idempotent.
   */
  close(options: CloseServerOptions = {}): Promise<void> {
    const graceMs = options.graceMs ?? this.#options.shutdownGraceMs;
    if (typeof graceMs !== "number" || !Number.isInteger(graceMs) || graceMs < 0 || graceMs > maxTimerMs) {
      return Promise.reject(
        new ToolpoolError("TP_ERR_INVALID_OPTION", `Expected \`graceMs\` to be an integer from 0 to ${maxTimerMs}, got ${describeValue(graceMs)}`),
      );
    }
    this.#isDraining = true;
    // A watcher's stream never ends by itself: it would hold the server open.
    this.#poolEvents?.close();
    const clock = this.#runtime.options.clock;
    const reason = new DOMException("The server is shutting down", "AbortError");
    this.#graceTimers.push(clock.setTimeout(() => this.#batches.abortAll(reason), graceMs));
    // A batch whose client stopped reading cannot finish its writes: after the pool's abort grace, its socket goes.
    this.#graceTimers.push(
      clock.setTimeout(
        () => {
          this.#batches.destroyAll();
          this.#sockets.destroyAll();
        },
        Math.min(maxTimerMs, graceMs + destroyGraceMs(this.#runtime)),
      ),
    );
    this.#closing ??= this.#shutDown();
    return this.#closing;
  }

  async #shutDown(): Promise<void> {
    await this.#batches.whenIdle();
    const clock = this.#runtime.options.clock;
    for (const timer of this.#graceTimers.splice(0)) clock.clearTimeout(timer);
    try {
      const closed = this.#app.close();
      this.#sockets.closeIdle();
      await closed;
    } finally {
      this.#metrics.dispose();
      await this.#runtime.close();
    }
  }
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The pool's abort grace (after which a call ignoring its abort is terminated) plus a second for the final writes. */
function destroyGraceMs(runtime: Runtime): number {
  return runtime.options.pool.abortGraceMs + 1000;
}

/**
 * Creates an HTTP server for `runtime`, not yet listening; the server then owns the runtime and closes it last.
 * Throws `TP_ERR_INVALID_OPTION` for invalid options, and for a non-loopback `host` without a `token`.
 * @example
 * const server = createServer(createRuntime({ tools: builtinTools() }), { port: 0 });
 * console.log(`listening on ${await server.listen()}`);
 */
export function createServer(runtime: Runtime, options?: ServerOptions): ToolpoolServer {
  return new ToolpoolServer(runtime, options);
}
