/** Refuses requests a browser makes on a page's behalf (DNS rebinding, cross-site), from `Host` and `Origin` alone. */

export interface BrowserGuardOptions {
  /** `Host` values accepted besides loopback names; with a token any `Host` is (a rebinding page cannot have it). @default [] */
  allowedHosts?: readonly string[];
  /** `Origin` values accepted; requests without `Origin` (non-browser clients) always are. @default [] (no web page may call) */
  allowedOrigins?: readonly string[];
  hasToken: boolean;
}

export type BrowserGuardVerdict = { kind: "allow" } | { kind: "deny"; status: 403; code: "TP_ERR_FORBIDDEN"; reason: string };

const loopbackHostPattern = /^(?:localhost|127\.0\.0\.1|\[::1\])(?::\d{1,5})?$/i;

/**
 * On a tokenless server, a `Host` that is neither loopback nor allowed is
 * refused: a page that rebound its name to 127.0.0.1 still sends its own
 * name. On every server, an `Origin` not allowed is refused.
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
