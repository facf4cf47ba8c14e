/**
 * The part of Fastify's API that toolpool's types promise for `ToolpoolServer.fastify`, as structural types:
 * fastify is an optional peer dependency, and toolpool's types must compile (even with `skipLibCheck: false`) without it.
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

/** The answer `inject()` resolves to. */
export interface FastifyInjectResponse {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
  json(): unknown;
}

/** The request a route's handler receives. */
export interface FastifyRouteRequest {
  params: unknown;
  query: unknown;
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}

/** The reply a route's handler answers with. */
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
 * The Fastify instance behind a server: `inject()` for tests, `route()` for extra routes (add them before `listen()`).
 * @example
 * const response = await server.fastify.inject({ method: "GET", url: "/healthz" });
 */
export interface FastifyApp {
  /** Answers a simulated request without a socket. */
  inject(options: FastifyInjectOptions | string): Promise<FastifyInjectResponse>;
  /** Adds a route; returns the instance. */
  route(options: FastifyRouteOptions): FastifyApp;
}
