import { describe, expect, it } from "vitest";

import { checkBrowserHeaders, type BrowserGuardOptions } from "../dist/server/browser-guard.js";

const tokenless: BrowserGuardOptions = { requireLoopbackHost: true, allowedHosts: [], allowedOrigins: [] };
const withToken: BrowserGuardOptions = { requireLoopbackHost: false, allowedHosts: [], allowedOrigins: [] };

describe("checkBrowserHeaders", () => {
  it("lets a tokenless server answer loopback names only, with or without a port", () => {
    for (const host of ["localhost", "LOCALHOST:8080", "127.0.0.1", "127.0.0.1:80", "127.1.2.3:9", "[::1]", "[::1]:8080"]) {
      expect(checkBrowserHeaders(host, undefined, tokenless), host).toEqual({ kind: "allow" });
    }
    for (const host of ["evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io", "[::2]:80", "0.0.0.0", "localhost:80x", "[::1", ""]) {
      const verdict = checkBrowserHeaders(host, undefined, tokenless);
      expect(verdict.kind, host).toBe("forbid");
    }
    expect(checkBrowserHeaders(undefined, undefined, tokenless)).toEqual({ kind: "forbid", reason: "The request has no Host header" });
    expect(checkBrowserHeaders("evil.example", undefined, tokenless)).toEqual({
      kind: "forbid",
      reason: 'Host "evil.example" is not allowed: a server without a token answers only localhost, 127.0.0.1 and [::1]',
    });
  });

  it("adds allowedHosts, matching the port only when the entry names one", () => {
    const options = { ...tokenless, allowedHosts: ["tools.internal", "api.example:8443"] };
    expect(checkBrowserHeaders("tools.internal:1234", undefined, options).kind).toBe("allow");
    expect(checkBrowserHeaders("TOOLS.internal", undefined, options).kind).toBe("allow");
    expect(checkBrowserHeaders("api.example:8443", undefined, options).kind).toBe("allow");
    expect(checkBrowserHeaders("api.example:80", undefined, options)).toEqual({
      kind: "forbid",
      reason:
        'Host "api.example:80" is not allowed: a server without a token answers only localhost, 127.0.0.1 and [::1] or allowedHosts (tools.internal, api.example:8443)',
    });
    expect(checkBrowserHeaders("localhost", undefined, options).kind).toBe("allow");
  });

  it("leaves Host alone on a server with a token unless allowedHosts is set, and then drops the loopback names", () => {
    expect(checkBrowserHeaders("anything.example", undefined, withToken).kind).toBe("allow");
    const options = { ...withToken, allowedHosts: ["tools.internal"] };
    expect(checkBrowserHeaders("tools.internal", undefined, options).kind).toBe("allow");
    expect(checkBrowserHeaders("localhost", undefined, options)).toEqual({
      kind: "forbid",
      reason: 'Host "localhost" is not allowed: it is not in allowedHosts (tools.internal)',
    });
  });

  it("refuses every Origin not listed, null included, on every server", () => {
    for (const options of [tokenless, withToken]) {
      expect(checkBrowserHeaders("localhost", "http://evil.example", options)).toEqual({
        kind: "forbid",
        reason: 'Origin "http://evil.example" is not allowed: this server accepts no browser origin (allowedOrigins is empty)',
      });
      expect(checkBrowserHeaders("localhost", "null", options).kind).toBe("forbid");
    }
    const options = { ...tokenless, allowedOrigins: ["https://App.example/"] };
    expect(checkBrowserHeaders("localhost", "https://app.example", options).kind).toBe("allow");
    expect(checkBrowserHeaders("localhost", "https://app.example:444", options).kind).toBe("forbid");
    expect(checkBrowserHeaders("localhost", "http://app.example", options).kind).toBe("forbid");
  });
});
