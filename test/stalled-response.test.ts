import { once } from "node:events";
import { createServer as createHttpServer, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";

import { afterEach, describe, expect, it } from "vitest";

import { createRuntime, createServer, type ToolpoolServer } from "toolpool";

import { FakeClock } from "./support/fake-clock.js";
import { batch, type CallSpec, until } from "./support/helpers.js";
import { StallGuardedWriter } from "./support/built.js";
import { work } from "./support/pool-event-tools.js";

// A real server on a loopback port, raw sockets that stop reading, and the
// runtime's clock in the test's hands: the stall bound runs only when the
// test moves time, so no outcome depends on how fast the machine is.
const token = "stalled-response-token";
const servers: ToolpoolServer[] = [];
const sockets: Socket[] = [];
const httpServers: Server[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(servers.splice(0).map((server) => server.close({ graceMs: 0 })));
  for (const server of httpServers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

/** Writes `chunk` to `response` until some of it waits in the server: the kernel's buffers for the socket are full. */
async function fillUntilWaiting(writer: StallGuardedWriter, response: ServerResponse): Promise<void> {
  const chunk = "x".repeat(65_536);
  for (let writes = 0; response.writableLength === 0 && writes < 10_000; writes++) {
    writer.write(chunk);
    // A turn of the event loop: the socket takes what it can of the write.
    await new Promise((resolve) => setImmediate(resolve));
  }
  expect(response.writableLength).toBeGreaterThan(0);
}

/** Opens a watcher of the pool's events that reads its answer's first bytes, then nothing. */
async function openSilentWatcher(port: number): Promise<void> {
  const socket = connect(port, "127.0.0.1");
  sockets.push(socket);
  socket.on("error", () => {});
  await once(socket, "connect");
  socket.write(`GET /v1/pool/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  const [first] = (await once(socket, "data")) as [Buffer];
  expect(first.toString("latin1")).toMatch(/^HTTP\/1\.1 200 /);
  socket.pause();
}

describe("StallGuardedWriter", () => {
  it("gives a live-view watcher's place back once its socket has taken nothing for stalledWatcherMs, however little waits for it", async () => {
    const clock = new FakeClock();
    const runtime = createRuntime({ tools: [work], pool: { maxThreads: 2, minThreads: 1 }, clock });
    const server = createServer(runtime, { host: "127.0.0.1", port: 0, token, maxWatchers: 2, stalledWatcherMs: 1000 });
    servers.push(server);
    const url = await server.listen();
    const port = Number(new URL(url).port);
    const auth = { authorization: `Bearer ${token}` };
    for (let index = 0; index < 2; index++) await openSilentWatcher(port);
    expect(server.diagnosePoolEvents()!.watchers).toHaveLength(2);
    // Every place is taken: the operator's page is turned away.
    const refused = await fetch(`${url}/v1/pool/events`, { headers: auth });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ code: "TP_ERR_OVERLOADED" });

    // Batches of 64 small calls, each written at once as one frame well under the
    // socket's high-water mark (16 KiB on Node 20), until the kernel's buffers for
    // both watchers are full and what the server wrote last waits in its own
    // buffer: a little, far from the mark.
    const isEveryWatcherWaiting = (): boolean => server.diagnosePoolEvents()!.watchers.every((watcher) => watcher.bufferedBytes > 0);
    const maxBatches = 4000;
    let batches = 0;
    let isWaiting = false;
    while (!isWaiting && batches < maxBatches) {
      const calls = Array.from({ length: 64 }, (_, index): CallSpec => [`c${batches}-${index}`, "work"]);
      await runtime.executeToolCalls(batch(...calls));
      batches += 1;
      // A turn of the event loop: the socket takes what it can of the last write.
      await new Promise((resolve) => setImmediate(resolve));
      isWaiting = isEveryWatcherWaiting();
    }
    const watchers = server.diagnosePoolEvents()!.watchers;
    console.log(
      `stalled watchers: full after ${batches} batches of 64 calls; bytes waiting in the server ${watchers.map((watcher) => watcher.bufferedBytes).join(", ")} ` +
        `(high-water mark ${watchers[0]!.highWaterMark})`,
    );
    expect(isWaiting).toBe(true);

    // Neither socket took anything while the bound passed: both are stalled.
    clock.advance(1000);
    await until(
      () => server.diagnosePoolEvents()!.watchers.length === 0,
      () => `both stalled watchers let go (${server.diagnosePoolEvents()!.watchers.length} left)`,
      { limitMs: 60_000 },
    );
    const reading = new AbortController();
    const page = await fetch(`${url}/v1/pool/events`, { headers: auth, signal: reading.signal });
    expect(page.status).toBe(200);
    reading.abort();
    await page.body?.cancel().catch(() => {});
  }, 300_000);

  it("restarts its clock each time the socket takes a write: a client that reads again keeps its connection, one that stops is reset", async () => {
    const clock = new FakeClock();
    let opened: ((value: { writer: StallGuardedWriter; response: ServerResponse }) => void) | undefined;
    const isOpen = new Promise<{ writer: StallGuardedWriter; response: ServerResponse }>((resolve) => (opened = resolve));
    const server = createHttpServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/plain" });
      const writer = new StallGuardedWriter(response, 1000, clock);
      writer.write("open\n");
      opened!({ writer, response });
    });
    httpServers.push(server);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
    sockets.push(socket);
    socket.on("error", () => {});
    await once(socket, "connect");
    socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    const { writer, response } = await isOpen;
    await once(socket, "data");
    socket.pause();

    await fillUntilWaiting(writer, response);
    expect(writer.isWaiting).toBe(true);
    // The client reads everything: the socket takes what waited, and the clock stops.
    socket.on("data", () => {});
    socket.resume();
    await until(() => response.writableLength === 0 && !writer.isWaiting, "the socket took every write");
    clock.advance(1000);
    expect(response.destroyed).toBe(false);

    // It stops reading again: once a write waits for a whole bound, the connection is reset.
    socket.pause();
    await fillUntilWaiting(writer, response);
    clock.advance(999);
    expect(response.destroyed).toBe(false);
    clock.advance(1);
    await until(() => response.destroyed, "the stalled response destroyed");
    expect(writer.isWaiting).toBe(false);
  });
});
