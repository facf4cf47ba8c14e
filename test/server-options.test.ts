import { describe, expect, it } from "vitest";

import { ToolpoolError } from "../dist/index.js";
import { resolveServerOptions } from "../dist/server/server-options.js";

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

  it("refuses a token with whitespace, which could never authenticate, and bad limits", () => {
    expect(messageOf(() => resolveServerOptions({ token: "two words" }))).toBe("Expected `token` to hold no whitespace, got a token with whitespace");
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
});
