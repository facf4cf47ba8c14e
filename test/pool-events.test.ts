import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";

import { afterAll, afterEach, describe, expect, it, vi } from "vitest";

import {
  createRuntime,
  createServer,
  type AssistantMessage,
  type PoolCallsFrame,
  type PoolEventFrame,
  type PoolSnapshotFrame,
  type Runtime,
  type ServerOptions,
  type ToolpoolServer,
} from "toolpool";

import { GateController } from "./support/gates.js";
import { fault, work } from "./support/pool-event-tools.js";
import { spawnServe } from "./support/serve-process.js";
import { until } from "./support/helpers.js";

// Everything runs for real: the built package, worker threads, a server on a
// loopback port, Node's fetch and raw sockets.
const token = "pool-events-token";
const gates = new GateController();
const servers: ToolpoolServer[] = [];
const sockets: Socket[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await Promise.all(servers.splice(0).map((server) => server.close({ graceMs: 0 })));
  gates.reset();
});

afterAll(() => gates.close());

async function startServer(options: ServerOptions = {}): Promise<{ runtime: Runtime; server: ToolpoolServer; url: string }> {
  const runtime = createRuntime({ tools: [work, fault], pool: { maxThreads: 2, minThreads: 1 } });
  const server = createServer(runtime, { host: "127.0.0.1", port: 0, token, ...options });
  servers.push(server);
  return { runtime, server, url: await server.listen() };
}

function message(calls: { id: string; name: string; arguments?: Record<string, unknown> }[]): AssistantMessage {
  return {
    role: "assistant",
    content: calls.map((call) => ({ type: "toolCall" as const, id: call.id, name: call.name, arguments: call.arguments ?? {} })),
  };
}

/** The frames of a pool-event stream, as they arrive. */
async function* readFrames(response: Response): AsyncGenerator<PoolEventFrame> {
  let buffer = "";
  for await (const chunk of response.body!.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const [eventLine, dataLine] = block.split("\n");
      const frame = JSON.parse(dataLine!.slice("data: ".length)) as PoolEventFrame;
      expect(eventLine).toBe(`event: ${frame.type}`);
      yield frame;
    }
  }
}

/** Reads frames until `isDone` holds for one; fails if the stream ends first. */
async function readUntil(frames: AsyncGenerator<PoolEventFrame>, isDone: (frame: PoolEventFrame) => boolean): Promise<PoolEventFrame> {
  // Not `for await`, whose early return would close the stream for the next read.
  for (let next = await frames.next(); next.done !== true; next = await frames.next()) if (isDone(next.value)) return next.value;
  throw new Error("the stream ended first");
}

/** How many listeners the runtime holds, per event. */
function listenerCounts(runtime: Runtime): Record<string, number> {
  const names = [
    "batch_start",
    "batch_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "pool_error",
    "fleet_call",
  ] as const;
  return Object.fromEntries(names.map((name) => [name, runtime.listenerCount(name)]));
}

/**
 * Bytes the kernel holds to send from local port `port` over IPv4 (the
 * server's side of its connections), from /proc/net/tcp; undefined off Linux.
 */
function sendQueueBytes(port: number): number | undefined {
  let table: string;
  try {
    table = readFileSync("/proc/net/tcp", "utf8");
  } catch {
    return undefined;
  }
  let total = 0;
  for (const line of table.split("\n").slice(1)) {
    const [, local, , , queues] = line.trim().split(/\s+/);
    if (local === undefined || queues === undefined || Number.parseInt(local.split(":")[1]!, 16) !== port) continue;
    total += Number.parseInt(queues.split(":")[0]!, 16);
  }
  return total;
}

describe("GET /v1/pool/events", () => {
  it("listens to the runtime only while a watcher is connected", async () => {
    const { runtime, server, url } = await startServer();
    const before = listenerCounts(runtime);
    expect(server.diagnosePoolEvents()).toEqual({ isAttached: false, watchers: [] });

    const reading = new AbortController();
    const response = await fetch(`${url}/v1/pool/events`, { headers: { authorization: `Bearer ${token}` }, signal: reading.signal });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const frames = readFrames(response);
    expect((await frames.next()).value).toMatchObject({ type: "hello", maxPendingCalls: 256, tools: ["work", "fault"] });
    const during = listenerCounts(runtime);
    for (const name of ["tool_execution_start", "tool_execution_end", "pool_error"]) {
      expect(during[name], name).toBeGreaterThan(before[name]!);
    }
    expect(server.diagnosePoolEvents()?.isAttached).toBe(true);

    reading.abort();
    await until(() => server.diagnosePoolEvents()!.watchers.length === 0, "no pool-events watcher left");
    expect(listenerCounts(runtime)).toEqual(before);
    expect(server.diagnosePoolEvents()?.isAttached).toBe(false);
  });

  it("shows a call waiting for a cap as such in its session, not as running or queued for a thread", async () => {
    const runtime = createRuntime({ tools: [work, fault], pool: { maxThreads: 2, minThreads: 1 }, maxConcurrency: { work: 1 } });
    const server = createServer(runtime, { host: "127.0.0.1", port: 0, token });
    servers.push(server);
    const url = await server.listen();
    const response = await fetch(`${url}/v1/pool/events`, { headers: { authorization: `Bearer ${token}` } });
    const frames = readFrames(response);
    await readUntil(frames, (frame) => frame.type === "snapshot");
    const [first, second] = [`${randomUUID()}:first`, `${randomUUID()}:second`];
    const done = runtime.executeToolCalls(
      message([
        { id: "first", name: "work", arguments: { gate: first } },
        { id: "second", name: "work", arguments: { gate: second } },
      ]),
      { sessionKey: "capped" },
    );
    await gates.whenWaiting(first);
    const snapshot = (await readUntil(
      frames,
      (frame) => frame.type === "snapshot" && frame.sessions.some((view) => view.capped > 0),
    )) as PoolSnapshotFrame;
    expect(snapshot.sessions).toEqual([{ session: "capped", waiting: 0, capped: 1, running: 1, longestWaitMs: expect.any(Number) }]);
    gates.open(first);
    await gates.whenWaiting(second);
    gates.open(second);
    expect((await done).messages.map((m) => m.isError)).toEqual([false, false]);
  });

  it("streams each ended call with its session, thread and fault code, and the sessions under way", async () => {
    const { runtime, url } = await startServer();
    const response = await fetch(`${url}/v1/pool/events`, { headers: { authorization: `Bearer ${token}` } });
    const frames = readFrames(response);
    await readUntil(frames, (frame) => frame.type === "snapshot");
    const gate = `${randomUUID()}:held`;
    const held = runtime.executeToolCalls(message([{ id: "held", name: "work", arguments: { gate } }]), { sessionKey: "gamma" });
    await gates.whenWaiting(gate);
    const busy = (await readUntil(frames, (frame) => frame.type === "snapshot" && frame.sessions.length > 0)) as PoolSnapshotFrame;
    expect(busy.sessions).toEqual([{ session: "gamma", waiting: 0, capped: 0, running: 1, longestWaitMs: 0 }]);
    expect(busy.threads.filter((thread) => thread.state === "busy")).toEqual([
      expect.objectContaining({ call: { tool: "work", toolCallId: "held", batchId: "b1", session: "gamma" } }),
    ]);
    await runtime.executeToolCalls(
      message([
        { id: "fine", name: "fault", arguments: {} },
        { id: "boom", name: "fault", arguments: { fault: "crash" } },
      ]),
      { sessionKey: "alpha" },
    );
    gates.open(gate);
    await held;
    const seen = new Map<string, PoolCallsFrame["calls"][number]>();
    await readUntil(frames, (frame) => {
      if (frame.type === "calls") for (const call of frame.calls) seen.set(call.toolCallId, call);
      return seen.size === 3;
    });
    expect(seen.get("boom")).toMatchObject({ session: "alpha", outcome: "fault", code: "TP_ERR_WORKER_CRASH", tool: "fault" });
    expect(seen.get("boom")?.threadId).toBeTypeOf("number");
    expect(seen.get("fine")).toMatchObject({ session: "alpha", outcome: "ok" });
    expect(seen.get("held")).toMatchObject({ session: "gamma", outcome: "ok", batchId: "b1" });
    const after = (await readUntil(frames, (frame) => frame.type === "snapshot" && frame.faults.length > 0)) as PoolSnapshotFrame;
    expect(after.faults).toEqual([expect.objectContaining({ code: "TP_ERR_WORKER_CRASH", toolCallId: "boom", session: "alpha" })]);
    expect(after.tools.find((tool) => tool.tool === "fault")).toMatchObject({ count: 2, errors: 0, faults: { TP_ERR_WORKER_CRASH: 1 } });
  });

  it("gives a watcher that keeps up every call of a burst, none dropped", async () => {
    const { runtime, server, url } = await startServer();
    const response = await fetch(`${url}/v1/pool/events`, { headers: { authorization: `Bearer ${token}` } });
    const frames = readFrames(response);
    await readUntil(frames, (frame) => frame.type === "snapshot");
    // Hundreds of calls end within one turn of the event loop when the pool's replies arrive together.
    const total = 4 * 256;
    const bursts = Array.from({ length: 4 }, (_, burst) =>
      runtime.executeToolCalls(message(Array.from({ length: 256 }, (_, index) => ({ id: `burst-${burst}-${index}`, name: "work" })))),
    );
    const seen = new Set<string>();
    let dropped = 0;
    await readUntil(frames, (frame) => {
      if (frame.type === "calls") {
        dropped += frame.dropped;
        for (const call of frame.calls) seen.add(call.toolCallId);
      }
      return seen.size + dropped >= total;
    });
    await Promise.all(bursts);
    expect(dropped).toBe(0);
    expect(seen.size).toBe(total);
    expect(server.diagnosePoolEvents()!.watchers[0]!.droppedTotal).toBe(0);
  });

  it("shows the threads there were before it came and those that come and go from pool events, never from runtime.diagnose()", async () => {
    const { runtime, url } = await startServer();
    const diagnose = vi.spyOn(runtime, "diagnose");
    const gate = `${randomUUID()}:before`;
    const held = runtime.executeToolCalls(message([{ id: "before", name: "work", arguments: { gate } }]), { sessionKey: "early" });
    await gates.whenWaiting(gate);
    const response = await fetch(`${url}/v1/pool/events`, { headers: { authorization: `Bearer ${token}` } });
    const frames = readFrames(response);
    const first = (await readUntil(frames, (frame) => frame.type === "snapshot")) as PoolSnapshotFrame;
    // The one thread, there before the watcher came, with the call it started before.
    expect(first.threads).toEqual([
      { pool: "shared", threadId: expect.any(Number), state: "busy", call: { tool: "work", toolCallId: "before", batchId: "b1", session: "early" } },
    ]);
    const before = first.threads[0]!.threadId;
    // The second thread starts for this call, runs it and crashes.
    await runtime.executeToolCalls(message([{ id: "boom", name: "fault", arguments: { fault: "crash" } }]), { sessionKey: "late" });
    const after = (await readUntil(
      frames,
      (frame) => frame.type === "snapshot" && frame.threads.some((thread) => thread.state === "retired"),
    )) as PoolSnapshotFrame;
    const retired = after.threads.filter((thread) => thread.state === "retired");
    expect(retired).toEqual([expect.objectContaining({ pool: "shared", call: expect.objectContaining({ toolCallId: "boom", session: "late" }) })]);
    expect(retired[0]!.threadId).not.toBe(before);
    expect(after.threads.filter((thread) => thread.state !== "retired").map((thread) => thread.threadId)).toContain(before);
    gates.open(gate);
    await held;
    expect(diagnose).not.toHaveBeenCalled();
  });

  it("names the session of calls whose batch began before the watcher came", async () => {
    const { runtime, url } = await startServer();
    const gate = `${randomUUID()}:early`;
    const held = runtime.executeToolCalls(message([{ id: "early", name: "work", arguments: { gate } }]), { sessionKey: "alice" });
    await gates.whenWaiting(gate);
    const response = await fetch(`${url}/v1/pool/events`, { headers: { authorization: `Bearer ${token}` } });
    const frames = readFrames(response);
    await readUntil(frames, (frame) => frame.type === "snapshot");
    gates.open(gate);
    await held;
    const frame = (await readUntil(frames, (frame) => frame.type === "calls" && frame.calls.length > 0)) as PoolCallsFrame;
    expect(frame.calls).toEqual([expect.objectContaining({ toolCallId: "early", session: "alice", outcome: "ok" })]);
  });

  it("holds a watcher that stopped reading to its bound: at most 256 calls and one flush in the socket's buffer", async () => {
    // A stall bound beyond the test: here the watcher must stay connected while its socket is full.
    const { runtime, server, url } = await startServer({ stalledWatcherMs: 3_600_000 });
    const { port } = new URL(url);
    const socket = connect(Number(port), "127.0.0.1");
    sockets.push(socket);
    await once(socket, "connect");
    socket.write(`GET /v1/pool/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\n\r\n`);
    // Never read: the kernel's buffers fill, then the server's socket backs up.
    socket.pause();
    await until(() => server.diagnosePoolEvents()!.watchers.length === 1, "one pool-events watcher");
    // Long ids and session keys make each record large, so the buffers fill sooner.
    const session = "s".repeat(256);
    let batches = 0;
    let state = server.diagnosePoolEvents()!.watchers[0]!;
    let largestBuffered = 0;
    let largestPending = 0;
    while (state.droppedTotal <= 10_000 && batches < 4000) {
      const calls = Array.from({ length: 64 }, (_, index) => ({ id: `${"x".repeat(240)}-${batches}-${index}`, name: "work", arguments: {} }));
      await runtime.executeToolCalls(message(calls), { sessionKey: session });
      batches += 1;
      state = server.diagnosePoolEvents()!.watchers[0]!;
      largestBuffered = Math.max(largestBuffered, state.bufferedBytes);
      largestPending = Math.max(largestPending, state.pendingCalls);
      expect(state.pendingCalls).toBeLessThanOrEqual(256);
      // Nothing is written while the socket's buffer is past its high-water mark (16 KiB on Node 20, 64 KiB from 22).
      expect(state.bufferedBytes).toBeLessThanOrEqual(state.highWaterMark + state.largestFlushBytes);
    }
    expect(state.droppedTotal).toBeGreaterThan(10_000);
    expect(state.isBlocked).toBe(true);
    expect(largestPending).toBe(256);
    console.log(
      `pool events, stalled watcher: ${batches * 64} calls, ${state.droppedTotal} dropped, ` +
        `at most ${largestPending} pending, at most ${largestBuffered} bytes buffered (largest flush ${state.largestFlushBytes})`,
    );
    socket.destroy();
    await until(() => server.diagnosePoolEvents()!.watchers.length === 0, "no pool-events watcher left");
    expect(server.diagnosePoolEvents()?.isAttached).toBe(false);
  }, 300_000);

  it("toolpool serve resets watchers whose stream stays full for stalledWatcherMs, so that the page gets in again", async () => {
    // stalledWatcherMs 1000 (see the file): the bound runs only once a watcher's stream is full.
    const served = await spawnServe(["--config", "test/fixtures/server/stalled-watchers-config.json", "--token", token], {}, children);
    const auth = { authorization: `Bearer ${token}` };
    // 32 watchers, each reading its answer's first bytes and then nothing.
    for (let index = 0; index < 32; index++) {
      const socket = connect(served.port, "127.0.0.1");
      sockets.push(socket);
      socket.on("error", () => {});
      await once(socket, "connect");
      socket.write(`GET /v1/pool/events HTTP/1.1\r\nHost: 127.0.0.1:${served.port}\r\nAuthorization: Bearer ${token}\r\n\r\n`);
      const [first] = (await once(socket, "data")) as [Buffer];
      expect(first.toString("latin1")).toMatch(/^HTTP\/1\.1 200 /);
      socket.pause();
    }
    // Every place is taken: the operator's page is turned away.
    expect((await fetch(`${served.url}/v1/pool/events`, { headers: auth })).status).toBe(503);

    // Calls whose records are large (long ids, session key and message) fill the watchers' buffers sooner.
    const session = "s".repeat(256);
    const maxBatches = 400;
    let batches = 0;
    let isIn = false;
    let mostQueued = 0;
    while (!isIn && batches < maxBatches) {
      const calls = Array.from({ length: 256 }, (_, index) => ({
        type: "toolCall",
        id: `${"x".repeat(240)}-${batches}-${index}`,
        name: "work",
        arguments: { fail: "f".repeat(300) },
      }));
      const posted = await fetch(`${served.url}/v1/batches`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json", accept: "application/json", "x-toolpool-session": session },
        body: JSON.stringify({ assistantMessage: { role: "assistant", content: calls } }),
      });
      expect(posted.status).toBe(200);
      await posted.arrayBuffer();
      batches += 1;
      mostQueued = Math.max(mostQueued, sendQueueBytes(served.port) ?? 0);
      const reading = new AbortController();
      const page = await fetch(`${served.url}/v1/pool/events`, { headers: auth, signal: reading.signal });
      isIn = page.status === 200;
      if (!isIn) expect(page.status).toBe(503);
      reading.abort();
      await page.body?.cancel().catch(() => {});
    }
    const queuedAfter = sendQueueBytes(served.port);
    console.log(
      `pool events, 32 stalled watchers: the page got in ${isIn ? `after ${batches} batches` : `never in ${batches} batches`}; ` +
        `kernel send queues of the server's port: at most ${mostQueued} bytes, ${String(queuedAfter)} once the page got in`,
    );
    expect(isIn).toBe(true);
    // A watcher let go is reset, not ended: the kernel drops at once what it held to send it (megabytes each),
    // where an ended socket would keep them queued for a peer that never reads.
    if (queuedAfter !== undefined) expect(queuedAfter).toBeLessThan(mostQueued);
  }, 600_000);

  it("needs the token and passes the browser guard, while the page's files do not need the token", async () => {
    const { url } = await startServer();
    const refused = await fetch(`${url}/v1/pool/events`);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: "TP_ERR_UNAUTHORIZED" });
    const wrong = await fetch(`${url}/v1/pool/events`, { headers: { authorization: "Bearer nope" } });
    expect(wrong.status).toBe(401);
    const foreign = await fetch(`${url}/v1/pool/events`, { headers: { authorization: `Bearer ${token}`, origin: "https://evil.example" } });
    expect(foreign.status).toBe(403);
    expect(await foreign.json()).toMatchObject({ code: "TP_ERR_FORBIDDEN" });

    const page = await fetch(`${url}/ui`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = page.headers.get("content-security-policy") ?? "";
    for (const directive of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'"]) expect(csp).toContain(directive);
    const html = await page.text();
    expect(html).toContain('<label for="token">Token</label>');
    expect(html).not.toMatch(/<script>|<style>|\son[a-z]+=/i);
    expect((await fetch(`${url}/ui/live-view.js`)).headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect((await fetch(`${url}/ui/live-view.css`)).headers.get("content-type")).toBe("text/css; charset=utf-8");
    // The page opens on the last 15 s; its icon (named by the page, or asked for at /favicon.ico) goes without the token too.
    expect(html).toContain('<option value="15" selected>last 15 s</option>');
    for (const icon of ["/ui/favicon.svg", "/favicon.ico"]) {
      const response = await fetch(`${url}${icon}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("image/svg+xml");
      expect(await response.text()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    }
    // Only the page's own files go without the token.
    expect((await fetch(`${url}/ui/other.js`)).status).toBe(401);
    expect((await fetch(`${url}/v1/tools`)).status).toBe(401);
  });

  it("with ui: false serves neither the page nor the stream", async () => {
    const { server, url } = await startServer({ ui: false });
    expect(server.options.ui).toBe(false);
    const headers = { authorization: `Bearer ${token}` };
    expect((await fetch(`${url}/ui`, { headers })).status).toBe(404);
    expect((await fetch(`${url}/ui/live-view.js`, { headers })).status).toBe(404);
    expect((await fetch(`${url}/v1/pool/events`, { headers })).status).toBe(404);
    // Without the view, its files need the token like any other path.
    expect((await fetch(`${url}/ui`)).status).toBe(401);
    expect(server.diagnosePoolEvents()).toBeUndefined();
  });

  it("toolpool serve --no-ui serves neither; without the flag the page needs no token and the stream does", async () => {
    const tools = ["--tools", "test/fixtures/server/tools.mjs"];
    const plain = await spawnServe([...tools, "--token", token], {}, children);
    expect((await fetch(`${plain.url}/ui`)).status).toBe(200);
    expect((await fetch(`${plain.url}/v1/pool/events`)).status).toBe(401);
    const off = await spawnServe([...tools, "--token", token, "--no-ui"], {}, children);
    const headers = { authorization: `Bearer ${token}` };
    expect((await fetch(`${off.url}/ui`, { headers })).status).toBe(404);
    expect((await fetch(`${off.url}/v1/pool/events`, { headers })).status).toBe(404);
  }, 60_000);

  it("ends every watcher's stream when the runtime is closed under the server", async () => {
    const { runtime, server, url } = await startServer();
    const response = await fetch(`${url}/v1/pool/events`, { headers: { authorization: `Bearer ${token}` } });
    const frames = readFrames(response);
    await frames.next();
    await runtime.close();
    let next = await frames.next();
    while (next.done !== true) next = await frames.next();
    await until(() => server.diagnosePoolEvents()!.watchers.length === 0, "no pool-events watcher left");
    expect(server.diagnosePoolEvents()?.isAttached).toBe(false);
  });

  it("answers HEAD without holding a watcher's place, and keeps control characters out of frames", async () => {
    const { runtime, server, url } = await startServer();
    const head = await fetch(`${url}/v1/pool/events`, { method: "HEAD", headers: { authorization: `Bearer ${token}` } });
    expect(head.status).toBe(404);
    expect(server.diagnosePoolEvents()!.watchers).toEqual([]);
    const response = await fetch(`${url}/v1/pool/events`, { headers: { authorization: `Bearer ${token}` } });
    const frames = readFrames(response);
    await readUntil(frames, (frame) => frame.type === "snapshot");
    const id = `a\u0001b\n${"\u0002".repeat(400)}`;
    await runtime.executeToolCalls(message([{ id, name: "work" }]), { sessionKey: "s\u0007" });
    const frame = (await readUntil(frames, (frame) => frame.type === "calls" && frame.calls.length > 0)) as PoolCallsFrame;
    const [record] = frame.calls;
    expect(record!.toolCallId.length).toBeLessThanOrEqual(256);
    expect(record!.toolCallId.startsWith("a\ufffdb\ufffd\ufffd")).toBe(true);
    expect(record!.session).toBe("s\ufffd");
    expect(JSON.stringify(frame)).not.toMatch(/\\u00[01]/);
  });

  it("ends every watcher's stream when the server closes", async () => {
    const { server, url } = await startServer();
    const response = await fetch(`${url}/v1/pool/events`, { headers: { authorization: `Bearer ${token}` } });
    const frames = readFrames(response);
    await frames.next();
    await server.close();
    // The stream ends (the loop finishes) instead of holding the server open.
    for await (const _frame of frames) {
      // drain
    }
    expect(server.diagnosePoolEvents()?.watchers).toEqual([]);
  });
});
