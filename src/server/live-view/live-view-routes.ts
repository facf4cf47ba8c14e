/** The live view: `GET /ui` (a page holding no pool data) and `GET /v1/pool/events` (the events it draws, behind the token). */
import { readFile } from "node:fs/promises";

import type { FastifyInstance, FastifyReply } from "fastify";

import { sendError } from "../../http/http-errors.js";
import type { PoolEventHub } from "./pool-event-hub.js";

/** The page's files, as `npm run build` copies them from `src/ui/` into `dist/ui/`. */
const assets = {
  "/ui": { file: "index.html", type: "text/html; charset=utf-8" },
  "/ui/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/ui/live-view.js": { file: "live-view.js", type: "text/javascript; charset=utf-8" },
  "/ui/live-view.css": { file: "live-view.css", type: "text/css; charset=utf-8" },
  "/ui/favicon.svg": { file: "favicon.svg", type: "image/svg+xml" },
  // What a browser asks for when a page (or none) names no icon: the same one, not a 401.
  "/favicon.ico": { file: "favicon.svg", type: "image/svg+xml" },
} as const;

/** The routes a browser loads without the token: the page shows nothing of the pool until the stream accepts the token. */
export const publicLiveViewRoutes: ReadonlySet<string> = new Set(Object.keys(assets));

/** Only the page's own script and style sheet, and requests to its own origin: no inline code, frames or form posts. */
const contentSecurityPolicy =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Adds the page's routes and the event stream to `app`. */
export function addLiveViewRoutes(app: FastifyInstance, hub: PoolEventHub, retryAfterSeconds: number): void {
  const loaded = new Map<string, Promise<Buffer>>();
  for (const [route, { file, type }] of Object.entries(assets)) {
    app.get(route, async (_request, reply) => {
      // Read on first use: a server whose view no one opens never reads the files.
      let body = loaded.get(file);
      if (body === undefined) {
        body = readFile(new URL(`../../ui/${file}`, import.meta.url));
        loaded.set(file, body);
        body.catch(() => loaded.delete(file));
      }
      return securePage(reply)
        .type(type)
        .send(await body);
    });
  }
  // No HEAD route: a stream answered to HEAD would write nothing yet hold a watcher's place.
  app.get("/v1/pool/events", { exposeHeadRoute: false }, (_request, reply) => {
    if (hub.watcherCount >= hub.maxWatchers) {
      reply.header("retry-after", String(retryAfterSeconds));
      return sendError(reply, 503, "TP_ERR_OVERLOADED", `The pool's event stream has ${hub.maxWatchers} watchers, its most; retry later`);
    }
    reply.hijack();
    reply.raw.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
      "x-content-type-options": "nosniff",
    });
    hub.addWatcher(reply.raw);
    return reply;
  });
}

function securePage(reply: FastifyReply): FastifyReply {
  return reply
    .header("content-security-policy", contentSecurityPolicy)
    .header("x-content-type-options", "nosniff")
    .header("referrer-policy", "no-referrer")
    .header("x-frame-options", "DENY")
    .header("cache-control", "no-cache");
}
