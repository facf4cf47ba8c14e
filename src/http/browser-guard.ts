/**
 * Protection against requests a web browser makes on a page's behalf (DNS
 * rebinding, cross-site requests): a pure check of a request's `Host` and
 * `Origin` headers, shared by every HTTP front of a runtime whatever its
 * framework.
 *
 * @module
 */

/** What {@link checkBrowserGuard} needs to know about the server. */
export interface BrowserGuardOptions {
  /**
   * `Host` values accepted besides the loopback names, as sent (`name` or
   * `name:port`, compared without case). On a server with a token any `Host`
   * is accepted: the token is what a rebinding page cannot have.
   * @default []
   */
  allowedHosts?: readonly string[];
  /**
   * `Origin` values accepted (`scheme://host[:port]`, compared without case).
   * A request with any other `Origin` header comes from a web page and is
   * refused; a request without one (any non-browser client) is not.
   * @default [] (no web page may call)
   */
  allowedOrigins?: readonly string[];
  /** Whether the server requires a bearer token. */
  hasToken: boolean;
}

/** The verdict on a request: allowed, or refused with a 403 and why. */
export type BrowserGuardVerdict = { kind: "allow" } | { kind: "deny"; status: 403; code: "TP_ERR_FORBIDDEN"; reason: string };

const loopbackHostPattern = /^(?:localhost|127\.0\.0\.1|\[::1\])(?::\d{1,5})?$/i;

/**
 * Decides on a request from its `Host` and `Origin` header values. On a
 * tokenless server a `Host` other than `localhost`, `127.0.0.1` or `[::1]`
 * (with or without a port) or one of `allowedHosts` is refused: a page that
 * rebound its own name to the loopback address still sends its own name. On
 * every server an `Origin` not in `allowedOrigins` is refused.
 *
 * @example
 * ```ts
 * const verdict = checkBrowserGuard(req.headers.host, req.headers.origin, { hasToken: false });
 * if (verdict.kind === "deny") reply(verdict.status, { code: verdict.code, message: verdict.reason });
 * ```
 */
export function checkBrowserGuard(host: string | undefined, origin: string | undefined, options: BrowserGuardOptions): BrowserGuardVerdict {
  if (!options.hasToken) {
    const isAllowedHost =
      host !== undefined &&
      (loopbackHostPattern.test(host) || (options.allowedHosts ?? []).some((allowed) => allowed.toLowerCase() === host.toLowerCase()));
    if (!isAllowedHost) {
      return deny(
        `Host ${host === undefined ? "(none)" : JSON.stringify(host)} is not allowed: a server without a token answers only localhost, 127.0.0.1 and [::1]`,
      );
    }
  }
  if (origin !== undefined && !(options.allowedOrigins ?? []).some((allowed) => allowed.toLowerCase() === origin.toLowerCase())) {
    return deny(`Origin ${JSON.stringify(origin)} is not allowed`);
  }
  return allow;
}

const allow: BrowserGuardVerdict = Object.freeze({ kind: "allow" });

function deny(reason: string): BrowserGuardVerdict {
  return { kind: "deny", status: 403, code: "TP_ERR_FORBIDDEN", reason };
}
