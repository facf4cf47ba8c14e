import { describe, expect, it } from "vitest";

import { checkBrowserGuard } from "./support/internals.js";

describe("checkBrowserGuard", () => {
  it("lets a tokenless server answer loopback Host values only, with or without a port, and allowedHosts as sent", () => {
    for (const host of ["localhost", "LOCALHOST:8080", "127.0.0.1", "127.0.0.1:80", "[::1]", "[::1]:8080"]) {
      expect(checkBrowserGuard(host, undefined, { hasToken: false }), host).toEqual({ kind: "allow" });
    }
    for (const host of [
      undefined,
      "",
      "evil.example",
      "evil.example:8080",
      "localhost.evil.example",
      "127.0.0.1.nip.io",
      "[::2]:80",
      "0.0.0.0",
      "localhost:80x",
    ]) {
      expect(checkBrowserGuard(host, undefined, { hasToken: false }), String(host)).toMatchObject({
        kind: "deny",
        status: 403,
        code: "TP_ERR_FORBIDDEN",
      });
    }
    expect(checkBrowserGuard("evil.example", undefined, { hasToken: false })).toEqual({
      kind: "deny",
      status: 403,
      code: "TP_ERR_FORBIDDEN",
      reason: 'Host "evil.example" is not allowed: a server without a token answers only localhost, 127.0.0.1 and [::1]',
    });
    const allowedHosts = ["tools.internal:8443"];
    expect(checkBrowserGuard("TOOLS.internal:8443", undefined, { hasToken: false, allowedHosts }).kind).toBe("allow");
    expect(checkBrowserGuard("tools.internal:80", undefined, { hasToken: false, allowedHosts }).kind).toBe("deny");
  });

  it("accepts any Host on a server with a token: a rebinding page cannot have the token", () => {
    expect(checkBrowserGuard("evil.example", undefined, { hasToken: true })).toEqual({ kind: "allow" });
  });

  it("refuses every Origin not listed, null included, on every server", () => {
    for (const hasToken of [false, true]) {
      expect(checkBrowserGuard("localhost", "http://evil.example", { hasToken })).toEqual({
        kind: "deny",
        status: 403,
        code: "TP_ERR_FORBIDDEN",
        reason: 'Origin "http://evil.example" is not allowed',
      });
      expect(checkBrowserGuard("localhost", "null", { hasToken }).kind).toBe("deny");
      const allowedOrigins = ["https://App.example"];
      expect(checkBrowserGuard("localhost", "https://app.example", { hasToken, allowedOrigins }).kind).toBe("allow");
      expect(checkBrowserGuard("localhost", "https://app.example:444", { hasToken, allowedOrigins }).kind).toBe("deny");
    }
  });
});
