/**
 * Oversize bodies against real `toolpool serve` and `toolpool mcp --http`
 * processes: the client reads the 413 whether it reads while it sends or
 * only once it has sent everything, and a client that sends past the drain
 * bound is cut.
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { connect } from "node:net";

import { afterAll, describe, expect, it } from "vitest";

import { LINGER_MAX_BYTES } from "./support/internals.js";
import { mcpPostHeaders, spawnMcpHttp } from "./support/edge-clients.js";
import { spawnServe } from "./support/serve-process.js";

const MiB = 1024 * 1024;
const children: ChildProcess[] = [];

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

/** The TCP states (`/proc/net/tcp`'s hex codes) of this machine's client connections to `port`. */
function clientStates(port: number): string[] {
  const states: string[] = [];
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length > 3 && Number.parseInt(fields[2]!.split(":")[1]!, 16) === port) states.push(fields[3]!);
  }
  return states;
}

/**
 * A 50 MiB body that, after 4 MiB, blocks this thread until the server has
 * answered and closed its sending side (the connection leaves ESTABLISHED):
 * a client busy at the moment the answer comes, whose next write meets
 * whatever the server did with the connection.
 */
function bodyBusyAtTheAnswer(port: number): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(MiB).fill(0x61);
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent === 50) return controller.close();
      if (sent === 4) {
        const deadline = Date.now() + 30_000;
        while (Date.now() < deadline && clientStates(port).includes("01")) {
          // busy: the client reads nothing meanwhile
        }
      }
      sent += 1;
      controller.enqueue(chunk);
      return undefined;
    },
  });
}

/** A raw client that writes headers and `bodyBytes` of body, reading nothing until all is written or the connection fails. */
async function writeAllThenRead(
  port: number,
  head: string,
  bodyBytes: number,
): Promise<{ written: number; error: string | undefined; answer: string }> {
  const socket = connect(port, "127.0.0.1");
  await once(socket, "connect");
  socket.pause();
  let error: string | undefined;
  const failed = new Promise<void>((resolve) =>
    socket.once("error", (cause: NodeJS.ErrnoException) => {
      error = cause.code ?? cause.message;
      resolve();
    }),
  );
  const chunk = Buffer.alloc(MiB, 0x61);
  let written = 0;
  socket.write(head);
  while (written < bodyBytes && error === undefined && !socket.destroyed) {
    const piece = chunk.subarray(0, Math.min(MiB, bodyBytes - written));
    const flushed = new Promise<void>((resolve) => socket.write(piece, () => resolve()));
    await Promise.race([flushed, failed]);
    if (error === undefined) written += piece.length;
  }
  let answer = "";
  if (error === undefined) {
    socket.setEncoding("utf8").on("data", (text: string) => (answer += text));
    socket.resume();
    await Promise.race([once(socket, "end"), failed]);
  }
  socket.destroy();
  return { written, error, answer };
}

describe("lingering close of an oversize request", () => {
  it("serve: Node's fetch posting 50 MiB gets the 413 and its JSON body, even when busy as the answer comes", async () => {
    const served = await spawnServe(["--port", "0", "--threads", "1"], {}, children);
    const response = await fetch(`${served.url}/v1/batches`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: bodyBusyAtTheAnswer(served.port),
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ statusCode: 413, code: "FST_ERR_CTP_BODY_TOO_LARGE" });
  }, 60_000);

  it("serve: a client that writes its whole 50 MiB body before it reads gets the 413", async () => {
    const served = await spawnServe(["--port", "0", "--threads", "1"], {}, children);
    const size = 50 * MiB;
    const head = `POST /v1/batches HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${size}\r\n\r\n`;
    const { written, error, answer } = await writeAllThenRead(served.port, head, size);
    expect(error).toBeUndefined();
    expect(written).toBe(size);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toContain('"code":"FST_ERR_CTP_BODY_TOO_LARGE"');
  }, 60_000);

  it("mcp --http: a client that writes its whole 50 MiB body before it reads gets the 413", async () => {
    const mcp = await spawnMcpHttp(["--threads", "1"], children);
    const size = 50 * MiB;
    const headers = Object.entries(mcpPostHeaders)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("");
    const head = `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n${headers}content-length: ${size}\r\n\r\n`;
    const { written, error, answer } = await writeAllThenRead(mcp.port, head, size);
    expect(error).toBeUndefined();
    expect(written).toBe(size);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toContain("Request body is larger than 1048576 bytes");
  }, 60_000);

  it("serve: a client that keeps sending past the drain bound is cut, after the 413 went out", async () => {
    const served = await spawnServe(["--port", "0", "--threads", "1"], {}, children);
    const size = 1024 * MiB;
    // Half-open: the server's end of its side does not end the client's, which goes on sending.
    const socket = connect({ port: served.port, host: "127.0.0.1", allowHalfOpen: true });
    await once(socket, "connect");
    let answer = "";
    socket.setEncoding("utf8").on("data", (text: string) => (answer += text));
    const ended = new Promise<void>((resolve) => {
      socket.once("error", () => resolve());
      socket.once("close", () => resolve());
    });
    socket.write(`POST /v1/batches HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${size}\r\n\r\n`);
    const chunk = Buffer.alloc(MiB, 0x61);
    let written = 0;
    let isOpen = true;
    void ended.then(() => (isOpen = false));
    while (isOpen && written < size) {
      await Promise.race([
        new Promise<void>((resolve) =>
          socket.write(chunk, (error) => {
            if (error === undefined || error === null) written += MiB;
            resolve();
          }),
        ),
        ended,
      ]);
    }
    await ended;
    socket.destroy();
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(written).toBeGreaterThanOrEqual(LINGER_MAX_BYTES);
    expect(written).toBeLessThan(size);
  }, 120_000);

  it("serve: a client that sends its body slowly is cut once the drain time is up, after the 413 went out", async () => {
    const served = await spawnServe(["--port", "0", "--threads", "1"], {}, children);
    const socket = connect({ port: served.port, host: "127.0.0.1", allowHalfOpen: true });
    await once(socket, "connect");
    let answer = "";
    socket.setEncoding("utf8").on("data", (text: string) => (answer += text));
    socket.on("error", () => {});
    const closed = new Promise((resolve) => socket.once("close", resolve));
    socket.write(`POST /v1/batches HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${2 * MiB}\r\n\r\n`);
    // A byte at a time, far below the drain's byte bound: only its time bound ends this.
    const drip = setInterval(() => {
      if (!socket.destroyed && socket.writable) socket.write("a", () => {});
    }, 100);
    try {
      await closed;
    } finally {
      clearInterval(drip);
    }
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
  }, 60_000);
});
