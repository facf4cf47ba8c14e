/**
 * Keeps web pages out of a local server: the `Host` and `Origin` checks the
 * MCP specification asks of local HTTP servers (against DNS rebinding).
 *
 * A web page cannot send the server's bearer token, but on a server without
 * one, a page on `http://evil.example` whose name the attacker re-points to
 * 127.0.0.1 can post batches: its requests carry `Host: evil.example`. And any
 * page a browser shows sends its `Origin` with a cross-site request. So a
 * tokenless server answers only requests addressed to a loopback name, and
 * every server refuses requests whose `Origin` it was not told to trust.
 *
 * A pure function of the two header values and the options, with no HTTP
 * framework in it, so that every transport (the Fastify server, an MCP
 * Streamable-HTTP endpoint) applies the same rule: call
 * {@link checkBrowserHeaders} before anything else runs and answer 403 with
 * code `TP_ERR_FORBIDDEN` and the verdict's `reason` when it forbids.
 *
 * @module
 */
import { isIP } from "node:net";

/** What {@link checkBrowserHeaders} checks against. */
export interface BrowserGuardOptions {
  /**
   * Whether `Host` must name this machine (`localhost`, `127.x.x.x`, `[::1]`,
   * with or without a port) or be in `allowedHosts`: true for a server
   * without a token.
   */
  readonly requireLoopbackHost: boolean;
  /**
   * Host names (with or without `:port`, case-insensitive) accepted besides
   * the loopback names. When not empty, every server accepts only these (and,
   * without a token, the loopback names).
   */
  readonly allowedHosts: readonly string[];
  /**
   * Origins (`scheme://host[:port]`, case-insensitive) whose requests are
   * accepted. A request with any other `Origin` header — `null` included —
   * is refused; a request without one (curl, SDKs, servers) is not.
   */
  readonly allowedOrigins: readonly string[];
}

/** The outcome of {@link checkBrowserHeaders}. */
export type BrowserGuardVerdict = { readonly kind: "allow" } | { readonly kind: "forbid"; readonly reason: string };

const allow: BrowserGuardVerdict = Object.freeze({ kind: "allow" });

/**
 * Decides whether a request may proceed, from its `Host` and `Origin` header
 * values (`undefined` when absent; for a repeated header, pass the first).
 *
 * @example
 * ```ts
 * const verdict = checkBrowserHeaders(request.headers.host, request.headers.origin, options);
 * if (verdict.kind === "forbid") return answer403("TP_ERR_FORBIDDEN", verdict.reason);
 * ```
 */
export function checkBrowserHeaders(
  host: string | undefined,
  origin: string | undefined,
  options: BrowserGuardOptions,
): BrowserGuardVerdict {
  const checksHost = options.requireLoopbackHost || options.allowedHosts.length > 0;
  if (checksHost) {
    if (host === undefined || host === "") return forbid("The request has no Host header");
    const name = hostName(host);
    const isAllowed =
      (options.requireLoopbackHost && name !== undefined && isLoopbackName(name)) ||
      options.allowedHosts.some((allowed) => matchesHost(allowed, host, name));
    if (!isAllowed) {
      const listed = `allowedHosts (${options.allowedHosts.join(", ")})`;
      return forbid(
        `Host ${JSON.stringify(host)} is not allowed: ` +
          (options.requireLoopbackHost
            ? `a server without a token answers only localhost, 127.0.0.1 and [::1]${options.allowedHosts.length > 0 ? ` or ${listed}` : ""}`
            : `it is not in ${listed}`),
      );
    }
  }
  if (origin !== undefined) {
    const normalised = normaliseOrigin(origin);
    if (!options.allowedOrigins.some((allowed) => normaliseOrigin(allowed) === normalised)) {
      return forbid(
        `Origin ${JSON.stringify(origin)} is not allowed` +
          (options.allowedOrigins.length === 0 ? ": this server accepts no browser origin (allowedOrigins is empty)" : " (see allowedOrigins)"),
      );
    }
  }
  return allow;
}

function forbid(reason: string): BrowserGuardVerdict {
  return { kind: "forbid", reason };
}

/**
 * The name part of a `Host` value, lower-cased: `[::1]:80` → `::1`,
 * `LocalHost:80` → `localhost`; `undefined` when it is malformed.
 */
function hostName(host: string): string | undefined {
  const lower = host.trim().toLowerCase();
  if (lower.startsWith("[")) {
    const end = lower.indexOf("]");
    if (end === -1) return undefined;
    const rest = lower.slice(end + 1);
    if (rest !== "" && !/^:\d{1,5}$/.test(rest)) return undefined;
    return lower.slice(1, end);
  }
  const colon = lower.indexOf(":");
  if (colon === -1) return lower;
  if (!/^:\d{1,5}$/.test(lower.slice(colon))) return undefined;
  return lower.slice(0, colon);
}

/** `localhost`, `127.0.0.0/8` and `::1`: names a page cannot make point elsewhere. */
function isLoopbackName(name: string): boolean {
  if (name === "localhost") return true;
  if (isIP(name) === 4) return name.startsWith("127.");
  return isIP(name) === 6 && (name === "::1" || name === "0:0:0:0:0:0:0:1");
}

/** An `allowedHosts` entry with a port matches that host and port; without one, the host at any port. */
function matchesHost(allowed: string, host: string, name: string | undefined): boolean {
  const entry = allowed.trim().toLowerCase();
  if (entry === host.trim().toLowerCase()) return true;
  const entryName = hostName(entry);
  return entryName === entry.replace(/^\[|\]$/g, "") && entryName === name;
}

/** Origins compare without case and without a trailing slash. */
function normaliseOrigin(origin: string): string {
  return origin.trim().toLowerCase().replace(/\/+$/, "");
}
