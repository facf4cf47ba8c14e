import { describe, expect, it } from "vitest";

import { ToolpoolError } from "toolpool";
import { resolveServerOptions } from "./support/built.js";

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ToolpoolError);
    expect((error as ToolpoolError).code).toBe("TP_ERR_INVALID_OPTION");
    return (error as Error).message;
  }
  return expect.unreachable("no error thrown");
}

describe("resolveServerOptions", () => {
  it("defaults the protections: no extra hosts or origins, 256 calls, 1024 connections (256 per address), 5 s for headers, 1 s event-loop delay, memory checks off", () => {
    const options = resolveServerOptions(undefined);
    expect(options).toMatchObject({
      allowedHosts: [],
      allowedOrigins: [],
      maxCallsPerBatch: 256,
      maxConnections: 1024,
      maxConnectionsPerAddress: 256,
      headersTimeoutMs: 5000,
      updateArgs: true,
      stalledWatcherMs: 30_000,
      maxWatchers: 32,
      maxEventLoopDelayMs: 1000,
      maxHeapUsedBytes: 0,
      maxRssBytes: 0,
    });
    expect(Object.isFrozen(options.allowedHosts)).toBe(true);
  });

  it("copies the caller's lists instead of keeping them", () => {
    const allowedOrigins = ["https://app.example"];
    const options = resolveServerOptions({ allowedOrigins });
    allowedOrigins.push("http://evil.example");
    expect(options.allowedOrigins).toEqual(["https://app.example"]);
  });

  it("refuses a token no client can send (whitespace, beyond visible ASCII), which could never authenticate, and bad limits", () => {
    const expected =
      'Expected `token` to be visible ASCII characters (0x21–0x7E), the only ones clients send in "Authorization: Bearer TOKEN"; got a token that';
    expect(messageOf(() => resolveServerOptions({ token: "two words" }))).toBe(`${expected} holds whitespace (U+0020 at character 4)`);
    // Node reads a header's bytes as Latin-1 and fetch refuses to send "€": no request could carry it.
    expect(messageOf(() => resolveServerOptions({ token: "secret€token" }))).toBe(
      `${expected} holds U+20AC at character 7, outside visible ASCII (0x21–0x7E)`,
    );
    expect(messageOf(() => resolveServerOptions({ token: "café" }))).toBe(
      `${expected} holds U+00E9 at character 4, outside visible ASCII (0x21–0x7E)`,
    );
    expect(messageOf(() => resolveServerOptions({ token: "nul\u0000" }))).toBe(
      `${expected} holds U+0000 at character 4, outside visible ASCII (0x21–0x7E)`,
    );
    // Every visible ASCII character is accepted.
    const visible = Array.from({ length: 0x7e - 0x21 + 1 }, (_, index) => String.fromCharCode(0x21 + index)).join("");
    expect(resolveServerOptions({ token: visible }).token).toBe(visible);
    expect(messageOf(() => resolveServerOptions({ stalledWatcherMs: 0 }))).toBe("Expected `stalledWatcherMs` to be a number >= 1, got `0` (number)");
    expect(messageOf(() => resolveServerOptions({ stalledWatcherMs: 1.5 }))).toBe("Expected `stalledWatcherMs` to be an integer, got `1.5` (number)");
    expect(messageOf(() => resolveServerOptions({ maxCallsPerBatch: 0 }))).toBe("Expected `maxCallsPerBatch` to be a number >= 1, got `0` (number)");
    expect(messageOf(() => resolveServerOptions({ maxConnectionsPerAddress: 0 }))).toBe(
      "Expected `maxConnectionsPerAddress` to be a number >= 1, got `0` (number)",
    );
    expect(messageOf(() => resolveServerOptions({ updateArgs: "no" as unknown as boolean }))).toMatch(/^Expected `updateArgs` to be a boolean/);
    expect(messageOf(() => resolveServerOptions({ allowedHosts: [""] }))).toMatch(/^Expected `allowedHosts.0` to be a non-empty string/);
    expect(messageOf(() => resolveServerOptions({ allowedOrigins: "https://x" as unknown as string[] }))).toMatch(
      /^Expected `allowedOrigins` to be an? array/,
    );
  });

  it("refuses an unknown option, naming it and the closest known one", () => {
    expect(messageOf(() => resolveServerOptions({ maxBody: 5 } as never))).toBe("Unknown server option `maxBody`; did you mean `maxBodyBytes`?");
    expect(messageOf(() => resolveServerOptions({ tokne: "t" } as never))).toBe("Unknown server option `tokne`; did you mean `token`?");
  });
});
