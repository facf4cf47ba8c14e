import { afterAll, describe, expect, it } from "vitest";

import { createRuntime } from "toolpool";
import { builtinToolAnnotations, createMcpServer, McpCallGate, McpHttpServer } from "toolpool/mcp";

const runtime = createRuntime({ tools: [] });
afterAll(() => runtime.close());

const refusal = (message: string) => expect.objectContaining({ code: "TP_ERR_INVALID_OPTION", message });

describe("MCP's options", () => {
  it.each([
    [{ nmae: "x" }, "Unknown option `nmae`; did you mean `name`?"],
    [{ callgate: {} }, "Unknown option `callgate`; did you mean `callGate`?"],
    [{ maxSesions: 3 }, "Unknown option `maxSesions`; known options: `name`, `version`, `annotations`, `log`, `callGate`"],
  ])("createMcpServer refuses %j, an option that does not exist", (options, message) => {
    expect(() => createMcpServer(runtime, options as never)).toThrow(refusal(message));
  });

  it.each([
    [{ tokn: "x" }, "Unknown option `tokn`; did you mean `token`?"],
    [{ maxSesions: 3 }, "Unknown option `maxSesions`; did you mean `maxSessions`?"],
    [{ allowedOrigin: ["http://a"] }, "Unknown option `allowedOrigin`; did you mean `allowedOrigins`?"],
    [{ maxRss: 1 }, "Unknown option `maxRss`; did you mean `maxRssBytes`?"],
  ])("McpHttpServer refuses %j, an option that does not exist", (options, message) => {
    expect(() => new McpHttpServer(() => createMcpServer(runtime), options as never)).toThrow(refusal(message));
  });

  it.each([
    [{ maxRunning: 1, maxQueu: 1 }, "Unknown option `maxQueu`; did you mean `maxQueue`?"],
    [{ maxRunning: 1, maxSessionCall: 1 }, "Unknown option `maxSessionCall`; did you mean `maxSessionCalls`?"],
  ])("McpCallGate refuses %j, an option that does not exist", (options, message) => {
    expect(() => new McpCallGate(options as never)).toThrow(refusal(message));
  });

  it("builtinToolAnnotations refuses an option that does not exist, and reads allowWrite", () => {
    expect(() => builtinToolAnnotations({ allowWrites: true } as never)).toThrow(refusal("Unknown option `allowWrites`; did you mean `allowWrite`?"));
    expect(builtinToolAnnotations({ allowWrite: true }).patch).toMatchObject({ destructiveHint: true });
  });

  it("takes every documented option", async () => {
    const gate = new McpCallGate({ maxRunning: 1, maxQueue: 1, maxSessionCalls: 1, retryAfterSeconds: 1 });
    expect(gate.running).toBe(0);
    const log = () => {};
    const options = { name: "n", version: "1", annotations: {}, log, callGate: gate };
    expect(createMcpServer(runtime, options)).toBeDefined();
    const server = new McpHttpServer(() => createMcpServer(runtime), {
      ...{ host: "127.0.0.1", port: 0, token: "t", allowedHosts: [], allowedOrigins: [], maxBodyBytes: 1024, maxConnections: 4 },
      ...{ maxConnectionsPerAddress: 4, headersTimeoutMs: 1000, maxSessions: 1, sessionIdleMs: 1000, retryAfterSeconds: 1 },
      ...{ stalledResponseMs: 1000, log, maxEventLoopDelayMs: 1000, maxHeapUsedBytes: 0, maxRssBytes: 0 },
    });
    expect(server.sessionCount).toBe(0);
    await server.close();
  });
});
