/**
 * The connection guard of `toolpool serve` and `toolpool mcp --http`,
 * replayed against real processes on loopback. All of 127.0.0.0/8 is
 * loopback on Linux: floods come from 127.0.0.1, the clients that must still
 * be served from 127.0.0.2.
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";

import { afterAll, afterEach, describe, expect, it } from "vitest";

import { addressKey } from "./support/internals.js";
import {
  floodConnections,
  holdIdleConnections,
  initializeBody,
  mcpPostHeaders,
  requestFrom,
  spawnMcpHttp,
  type Flood,
  type RawAnswer,
} from "./support/edge-clients.js";
import { spawnServe } from "./support/serve-process.js";

const TOKEN = "edge-token";
const FLOODER = "127.0.0.1";
const CLIENT = "127.0.0.2";

const children: ChildProcess[] = [];
const floods: Flood[] = [];

afterEach(() => {
  for (const flood of floods.splice(0)) flood.end();
});

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

/** Runs `count` requests at once; how many were answered `status`, and how the others failed. */
async function answeredWith(status: number, count: number, request: () => Promise<RawAnswer>): Promise<{ answered: number; failures: string[] }> {
  const outcomes = await Promise.allSettled(Array.from({ length: count }, request));
  const failures = outcomes.flatMap((outcome) =>
    outcome.status === "rejected"
      ? [String((outcome.reason as NodeJS.ErrnoException).code ?? outcome.reason)]
      : outcome.value.status === status
        ? []
        : [`${outcome.value.status} ${outcome.value.text}`],
  );
  return { answered: count - failures.length, failures };
}

/** The first `count` indexes, 0 to count - 1. */
function firstIndexes(count: number): number[] {
  return Array.from({ length: count }, (_, index) => index);
}

describe("ConnectionGuard on toolpool serve", () => {
  it("with a token, keeps /healthz answering from another address while one address holds 1,030 connections that never finish their headers", async () => {
    // A headers timeout far beyond the test, so that only the per-address cap can keep a slot free.
    const served = await spawnServe(["--port", "0", "--token", TOKEN, "--threads", "1", "--headers-timeout", "600000"], {}, children);
    const flood = await floodConnections(served.port, 1030, FLOODER);
    floods.push(flood);
    // The server accepted the flood before this connection, which came last.
    const health = await requestFrom(CLIENT, `${served.url}/healthz`);
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text)).toEqual({ status: "ok" });
    const tools = await requestFrom(CLIENT, `${served.url}/v1/tools`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(tools.status).toBe(200);
    // One address holds at most 256 (the default): each connection past it took the place of the address's oldest.
    await flood.whenClosed(1030 - 256);
    expect([...flood.closed].sort((a, b) => a - b)).toEqual(Array.from({ length: 1030 - 256 }, (_, index) => index));
  }, 120_000);

  it("past maxConnections, a new connection takes the place of the oldest one that has not completed a request", async () => {
    const served = await spawnServe(
      ["--port", "0", "--threads", "1", "--max-connections", "64", "--max-connections-per-address", "64", "--headers-timeout", "600000"],
      {},
      children,
    );
    const flood = await floodConnections(served.port, 64, FLOODER);
    floods.push(flood);
    const health = await requestFrom(CLIENT, `${served.url}/healthz`);
    expect(health.status).toBe(200);
    await flood.whenClosed(1);
    expect(flood.closed).toEqual([0]);
  }, 60_000);

  it("past maxConnectionsPerAddress, a new connection from that address takes the place of its oldest incomplete one", async () => {
    const served = await spawnServe(
      ["--port", "0", "--threads", "1", "--max-connections-per-address", "1", "--headers-timeout", "600000"],
      {},
      children,
    );
    const flood = await floodConnections(served.port, 3, FLOODER);
    floods.push(flood);
    expect((await requestFrom(CLIENT, `${served.url}/healthz`)).status).toBe(200);
    await flood.whenClosed(2);
    expect([...flood.closed].sort()).toEqual([0, 1]);
  }, 60_000);

  it("lets authenticated batches through while 4 addresses hold all 1,024 places with idle keep-alive connections after a public /healthz, closing the ones idle longest", async () => {
    const served = await spawnServe(["--port", "0", "--token", TOKEN, "--threads", "1"], {}, children);
    // 4 × 256: every address at maxConnectionsPerAddress, all of them at maxConnections.
    const holders: Flood[] = [];
    for (const address of [FLOODER, "127.0.0.3", "127.0.0.4", "127.0.0.5"]) {
      const held = await holdIdleConnections(served.port, 256, address);
      floods.push(held);
      holders.push(held);
    }
    const batch = (from: string) => () =>
      requestFrom(from, `${served.url}/v1/batches`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({
          assistantMessage: { role: "assistant", content: [{ type: "toolCall", id: "1", name: "hash", arguments: { text: "hello" } }] },
        }),
      });
    // Five at once, each on a connection of its own: each new one past the limit needs a place.
    expect(await answeredWith(200, 5, batch(CLIENT))).toEqual({ answered: 5, failures: [] });
    // Those places were taken from the connections idle longest: the first address's first ones.
    const closed = [...holders[0]!.closed].sort((a, b) => a - b);
    expect(closed.length).toBeGreaterThanOrEqual(1);
    expect(closed).toEqual(firstIndexes(closed.length));
    expect(holders.slice(1).map((held) => held.closed.length)).toEqual([0, 0, 0]);

    // From an address that holds its 256 itself, as a victim sharing an address with the flood would.
    expect(await answeredWith(200, 5, batch("127.0.0.3"))).toEqual({ answered: 5, failures: [] });
    const closedThere = [...holders[1]!.closed].sort((a, b) => a - b);
    expect(closedThere.length).toBeGreaterThanOrEqual(1);
    expect(closedThere).toEqual(firstIndexes(closedThere.length));
  }, 180_000);

  it("answers 408 TP_ERR_HEADERS_TIMEOUT and closes a connection whose headers are not complete within headersTimeoutMs", async () => {
    const served = await spawnServe(["--port", "0", "--threads", "1", "--headers-timeout", "500"], {}, children);
    const socket = connect(served.port, "127.0.0.1");
    let text = "";
    socket.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
    await once(socket, "connect");
    socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    await once(socket, "close");
    expect(text).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    const body = JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)) as { code: string; message: string };
    expect(body.code).toBe("TP_ERR_HEADERS_TIMEOUT");
    expect(body.message).toContain("500 ms");
    // A client that completes its request in time is served as before.
    expect((await requestFrom(CLIENT, `${served.url}/healthz`)).status).toBe(200);
  }, 60_000);

  it("closes the connection of a request it refuses (401), so that refused clients hold no slot", async () => {
    const served = await spawnServe(["--port", "0", "--token", TOKEN, "--threads", "1"], {}, children);
    const socket = connect(served.port, "127.0.0.1");
    let text = "";
    socket.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
    await once(socket, "connect");
    socket.write("GET /v1/tools HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await once(socket, "close");
    expect(text).toMatch(/^HTTP\/1\.1 401 /);
    expect(text.toLowerCase()).toContain("connection: close");
  }, 60_000);
});

describe("ConnectionGuard on toolpool mcp --http", () => {
  it("with a token, answers initialize from another address while one address holds 1,030 connections that never finish their headers", async () => {
    const mcp = await spawnMcpHttp(["--token", TOKEN, "--threads", "1", "--headers-timeout", "600000"], children);
    const flood = await floodConnections(mcp.port, 1030, FLOODER, "/mcp");
    floods.push(flood);
    const answer = await requestFrom(CLIENT, mcp.url, {
      method: "POST",
      headers: { ...mcpPostHeaders, authorization: `Bearer ${TOKEN}` },
      body: initializeBody,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers["mcp-session-id"]).toBeTypeOf("string");
    await flood.whenClosed(1030 - 256);
    expect([...flood.closed].sort((a, b) => a - b)).toEqual(Array.from({ length: 1030 - 256 }, (_, index) => index));
  }, 120_000);

  it("past --max-connections, a new connection takes the place of the oldest one that has not completed a request", async () => {
    const mcp = await spawnMcpHttp(
      ["--threads", "1", "--headers-timeout", "600000", "--max-connections", "8", "--max-connections-per-address", "8"],
      children,
    );
    const flood = await floodConnections(mcp.port, 8, FLOODER, "/mcp");
    floods.push(flood);
    const answer = await requestFrom(CLIENT, mcp.url, { method: "POST", headers: mcpPostHeaders, body: initializeBody });
    expect(answer.status).toBe(200);
    await flood.whenClosed(1);
    expect(flood.closed).toEqual([0]);
  }, 60_000);

  it("without a token, answers initialize while idle keep-alive connections (after a 404) hold every place, closing the one idle longest", async () => {
    const mcp = await spawnMcpHttp(["--threads", "1", "--max-connections", "8", "--max-connections-per-address", "8"], children);
    // A tokenless server answers any path, 404 included, without closing the connection.
    const held = await holdIdleConnections(mcp.port, 8, FLOODER, "/healthz", 404);
    floods.push(held);
    const { answered, failures } = await answeredWith(200, 1, () =>
      requestFrom(CLIENT, mcp.url, { method: "POST", headers: mcpPostHeaders, body: initializeBody }),
    );
    expect({ answered, failures }).toEqual({ answered: 1, failures: [] });
    await held.whenClosed(1);
    expect(held.closed[0]).toBe(0);
  }, 60_000);

  it("answers 408 TP_ERR_HEADERS_TIMEOUT to a connection whose headers are not complete within --headers-timeout", async () => {
    const mcp = await spawnMcpHttp(["--threads", "1", "--headers-timeout", "500"], children);
    const socket = connect(mcp.port, "127.0.0.1");
    let text = "";
    socket.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
    await once(socket, "connect");
    socket.write("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    await once(socket, "close");
    expect(text).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(text).toContain('"code":"TP_ERR_HEADERS_TIMEOUT"');
  }, 60_000);
});

describe("addressKey", () => {
  it("counts IPv4 addresses as they are, IPv4-mapped ones as IPv4, and IPv6 addresses by their /64", () => {
    expect(addressKey("127.0.0.1")).toBe("127.0.0.1");
    expect(addressKey("::ffff:10.1.2.3")).toBe("10.1.2.3");
    expect(addressKey("2001:db8:0:1:aaaa::1")).toBe("2001:db8:0:1::/64");
    expect(addressKey("2001:db8:0:1:bbbb:cccc:dddd:eeee")).toBe("2001:db8:0:1::/64");
    expect(addressKey("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
    expect(addressKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(addressKey(undefined)).toBeUndefined();
  });
});
