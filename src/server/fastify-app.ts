/**
 * The part of Fastify's API that toolpool's types promise for the instance
 * behind a server (`ToolpoolServer.fastify`): `inject()` and `route()`.
 * Declared here as plain structural types rather than imported from fastify,
 * because fastify is an optional peer dependency: toolpool's public types
 * must compile (with `skipLibCheck: false` too) where it is not installed.
 * The instance is Fastify's own; where fastify is installed, name it as such
 * for the rest of its API (`server.fastify as FastifyInstance`).
 *
 * @module
 */

/** A request `inject()` simulates: Fastify's (light-my-request's) options, the common part. */
export interface FastifyInjectOptions {
  /** @default "GET" */
  method?: string;
  url?: string;
  headers?: Record<string, string | string[] | number | undefined>;
  query?: string | Record<string, string | string[]>;
  /** A string or Buffer as it is; anything else is sent as JSON. */
  payload?: unknown;
}

/** The answer `inject()` resolves to (the common part of light-my-request's). */
export interface FastifyInjectResponse {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  /** The body as text. */
  body: string;
  /** The body parsed as JSON. */
  json(): unknown;
}

/** The request a route's handler receives (the common part of Fastify's). */
export interface FastifyRouteRequest {
  params: unknown;
  query: unknown;
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}

/** The reply a route's handler answers with (the common part of Fastify's). */
export interface FastifyRouteReply {
  code(statusCode: number): FastifyRouteReply;
  header(name: string, value: unknown): FastifyRouteReply;
  send(payload?: unknown): FastifyRouteReply;
}

/** A route to add with `route()`: Fastify's route options, the common part. */
export interface FastifyRouteOptions {
  method: string | string[];
  url: string;
  /** What the route answers: a value it returns is sent (as JSON unless a string or Buffer), or it uses `reply`. */
  handler(request: FastifyRouteRequest, reply: FastifyRouteReply): unknown;
}

/**
 * The Fastify instance behind a server, as toolpool's types describe it:
 * `inject()` for tests, `route()` for extra routes (add them before
 * `listen()`).
 *
 * @example
 * const response = await server.fastify.inject({ method: "GET", url: "/healthz" });
 * response.statusCode; // 200
 */
export interface FastifyApp {
  /** Answers a simulated request without a socket. */
  inject(options: FastifyInjectOptions | string): Promise<FastifyInjectResponse>;
  /** Adds a route; returns the instance. */
  route(options: FastifyRouteOptions): FastifyApp;
}
