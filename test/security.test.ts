/**
 * The attacks of the security review (rows F1–F13), replayed against real
 * `toolpool serve` processes on loopback: real files, a real FIFO, a symlink
 * to /dev/zero, symlinks leaving the root, a ReDoS pattern. Each row asserts
 * the behaviour that replaced the finding. Durations are measured and
 * printed (not asserted: the machine is shared), as is the server's RSS and
 * thread count.
 *
 * Longer than the house's ~400 lines: one `toolpool serve` process takes
 * every row's attack in turn while /healthz is polled throughout, and the last
 * test judges that whole run (RSS growth, no /healthz failure, a clean
 * SIGTERM). Split across files, no server would see all the attacks.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { spawnServe, type ServeProcess } from "./support/serve-process.js";
import { textOf, until } from "./support/helpers.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(ROOT, "dist", "cli", "main.js");
const ENV_TOOLS = join(ROOT, "test", "fixtures", "security", "env-tools.mjs");

type Served = ServeProcess;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  ms: number;
}

interface ToolResult {
  toolCallId: string;
  isError: boolean;
  content: { type: string; text?: string }[];
  details?: { code?: string };
}

const children: ChildProcess[] = [];
const figures: string[] = [];
let base: string;
let root: string;
let outside: string;

/** Records a measured figure for the summary printed at the end. */
function note(line: string): void {
  figures.push(line);
}

function serve(args: string[], env: Record<string, string> = {}): Promise<Served> {
  return spawnServe(["--port", "0", ...args], env, children);
}

/** One request on a fresh connection, with any headers (a browser's `Host` and `Origin` included). */
function send(
  served: Served,
  path: string,
  { method = "GET", headers = {}, body }: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port: served.port,
        path,
        method,
        agent: false,
        headers: { ...headers, ...(body === undefined ? {} : { "content-length": Buffer.byteLength(body) }) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, text, ms: performance.now() - started }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

function batchBody(calls: { id?: string; name: string; arguments: unknown }[]): string {
  return JSON.stringify({
    assistantMessage: {
      role: "assistant",
      content: calls.map((call, i) => ({ type: "toolCall", id: call.id ?? `c${i}`, name: call.name, arguments: call.arguments })),
    },
  });
}

/** Posts a batch in JSON mode; returns the answer and its result messages. */
async function postJson(served: Served, calls: { name: string; arguments: unknown }[], headers: Record<string, string> = {}) {
  const answer = await send(served, "/v1/batches", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...headers },
    body: batchBody(calls),
  });
  const messages = answer.status === 200 ? (JSON.parse(answer.text) as { messages: ToolResult[] }).messages : [];
  return { answer, messages };
}

/** One call in JSON mode: its result message and how long the request took. */
async function callTool(served: Served, name: string, args: unknown): Promise<{ result: ToolResult; ms: number }> {
  const { answer, messages } = await postJson(served, [{ name, arguments: args }]);
  expect(answer.status, answer.text).toBe(200);
  return { result: messages[0]!, ms: answer.ms };
}

/** Parses an SSE body into its frames. */
function framesOf(text: string): { event: string; data: Record<string, unknown> }[] {
  return text
    .split("\n\n")
    .filter((frame) => frame.trim() !== "")
    .map((frame) => {
      const event = /^event: (.*)$/m.exec(frame)![1]!;
      const data = JSON.parse(/^data: (.*)$/m.exec(frame)![1]!) as Record<string, unknown>;
      return { event, data };
    });
}

function statusField(pid: number, field: "VmRSS" | "Threads"): number {
  const match = new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(match![1]);
}

async function stop(served: Served): Promise<[number | null, NodeJS.Signals | null]> {
  served.child.kill("SIGTERM");
  return served.exited;
}

/** Asserts a call ended as an error result whose text matches `pattern`; records its duration. */
function expectError(label: string, call: { result: ToolResult; ms: number }, pattern: RegExp): void {
  expect(call.result.isError, textOf(call.result)).toBe(true);
  expect(textOf(call.result)).toMatch(pattern);
  note(`${label}: error result in ${call.ms.toFixed(0)} ms: ${textOf(call.result).slice(0, 110)}`);
}

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "toolpool-security-")));
  root = join(base, "root");
  outside = join(base, "outside");
  mkdirSync(join(root, "sub"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(root, "notes.txt"), "alpha\nbeta\n");
  writeFileSync(join(root, "redos.txt"), `${"a".repeat(40)}!\n`);
  writeFileSync(join(outside, "secret.txt"), "top secret\n");
  writeFileSync(join(outside, "target.txt"), "a\n");
  symlinkSync("/dev/zero", join(root, "zero"));
  symlinkSync(join(outside, "secret.txt"), join(root, "leak.txt"));
  symlinkSync(join(outside, "target.txt"), join(root, "target-link.txt"));
  symlinkSync("/proc/self", join(root, "proc-self"));
  execFileSync("mkfifo", [join(root, "fifo")]);
});

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  rmSync(base, { recursive: true, force: true });
  // The measured figures, for the record (they are not asserted).
  console.log(`security figures:\n  ${figures.join("\n  ")}`);
});

describe("toolpool serve under attack", () => {
  let main: Served;
  let rssBefore = 0;
  const healthFailures: string[] = [];
  let healthChecks = 0;
  let healthMaxMs = 0;
  let healthPoller: NodeJS.Timeout | undefined;

  beforeAll(async () => {
    main = await serve(["--root", root, "--threads", "2", "--call-timeout", "5000"]);
    // Warm the pool, then take the baseline.
    await callTool(main, "hash", { text: "warm-up" });
    rssBefore = statusField(main.child.pid!, "VmRSS");
    const poll = (): void => {
      send(main, "/healthz")
        .then((answer) => {
          healthChecks += 1;
          healthMaxMs = Math.max(healthMaxMs, answer.ms);
          if (answer.status !== 200) healthFailures.push(`${answer.status} ${answer.text}`);
        })
        .catch((error: Error) => healthFailures.push(error.message))
        .finally(() => {
          if (healthPoller !== undefined) healthPoller = setTimeout(poll, 100);
        });
    };
    healthPoller = setTimeout(poll, 0);
  }, 60_000);

  afterAll(async () => {
    const timer = healthPoller;
    healthPoller = undefined;
    clearTimeout(timer);
  });

  it("F1: paths outside the root (absolute, .., symlinks) are error results, and patch writes only with --allow-write", async () => {
    const outsideMessage = /is outside the workspace root/;
    expectError("F1 grep /etc", await callTool(main, "grep", { pattern: "root", path: "/etc/passwd" }), outsideMessage);
    expectError("F1 grep ..", await callTool(main, "grep", { pattern: "secret", path: "../outside" }), outsideMessage);
    expectError("F1 hash symlink", await callTool(main, "hash", { path: "leak.txt" }), outsideMessage);
    expectError("F1 diff ..", await callTool(main, "diff", { oldPath: "../outside/secret.txt", newText: "" }), outsideMessage);
    expectError("F1 patch /", await callTool(main, "patch", { patch: "@@ -1 +1 @@\n-a\n+b\n", path: join(outside, "target.txt") }), outsideMessage);
    const denied = await callTool(main, "patch", { patch: "@@ -1 +1 @@\n-alpha\n+ALPHA\n", path: "notes.txt", write: true });
    expectError("F1 patch write without --allow-write", denied, /writing files is not allowed here/);
    expect(readFileSync(join(root, "notes.txt"), "utf8")).toBe("alpha\nbeta\n");

    // With --allow-write: inside the root only, through a temporary file and a rename.
    const writer = await serve(["--root", root, "--threads", "1", "--allow-write"]);
    try {
      const hashJs = join(ROOT, "dist", "tools", "hash.js");
      const hashBefore = readFileSync(hashJs, "utf8");
      const intoDist = await callTool(writer, "patch", { patch: "@@ -1 +1 @@\n-x\n+y\n", path: hashJs, write: true });
      expectError("F1 patch write into dist/", intoDist, outsideMessage);
      const viaLink = await callTool(writer, "patch", { patch: "@@ -1 +1 @@\n-a\n+b\n", path: "target-link.txt", write: true });
      expectError("F1 patch write via symlink", viaLink, outsideMessage);
      const inside = await callTool(writer, "patch", { patch: "@@ -1,2 +1,2 @@\n-alpha\n+ALPHA\n beta\n", path: "notes.txt", write: true });
      expect(inside.result.isError, textOf(inside.result)).toBe(false);
      expect(readFileSync(join(root, "notes.txt"), "utf8")).toBe("ALPHA\nbeta\n");
      expect(readdirSync(root).filter((name) => name.includes("toolpool"))).toEqual([]);
      expect(readFileSync(hashJs, "utf8")).toBe(hashBefore);
      note(`F1 patch write inside the root with --allow-write: applied in ${inside.ms.toFixed(0)} ms`);
    } finally {
      expect(await stop(writer)).toEqual([0, null]);
    }
    expect(readFileSync(join(outside, "target.txt"), "utf8")).toBe("a\n");
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("top secret\n");
  }, 60_000);

  it("F2: a foreign Host or any Origin gets 403 TP_ERR_FORBIDDEN before anything runs; loopback names pass", async () => {
    const body = batchBody([{ name: "hash", arguments: { text: "x" } }]);
    const post = (headers: Record<string, string>) =>
      send(main, "/v1/batches", { method: "POST", headers: { "content-type": "application/json", accept: "application/json", ...headers }, body });
    const foreign: Record<string, string>[] = [
      { host: "evil.example" },
      { host: `evil.example:${main.port}` },
      { origin: "http://evil.example" },
      { origin: "null" },
    ];
    for (const headers of foreign) {
      const answer = await post(headers);
      expect(answer.status, JSON.stringify(headers)).toBe(403);
      expect(JSON.parse(answer.text)).toMatchObject({ statusCode: 403, code: "TP_ERR_FORBIDDEN" });
      note(`F2 ${JSON.stringify(headers)}: ${answer.status} ${(JSON.parse(answer.text) as { code: string }).code}`);
    }
    expect((await send(main, "/v1/tools", { headers: { host: "evil.example" } })).status).toBe(403);
    for (const host of [`localhost:${main.port}`, `127.0.0.1:${main.port}`, `[::1]:${main.port}`, "localhost"]) {
      expect((await post({ host })).status, host).toBe(200);
    }
  });

  it("F3/F4/F5: FIFOs, /dev/zero and /proc end at once as error results, without growing threads", async () => {
    const pid = main.child.pid!;
    const threadsBefore = statusField(pid, "Threads");
    const special = /is not a regular file \(a FIFO\)/;
    const durations: number[] = [];
    for (let i = 0; i < 10; i++) {
      const calls = [
        await callTool(main, "hash", { path: "fifo" }),
        await callTool(main, "grep", { pattern: "x", path: "fifo" }),
        await callTool(main, "diff", { oldPath: "fifo", newText: "" }),
        await callTool(main, "patch", { patch: "@@ -1 +1 @@\n-a\n+b\n", path: "fifo" }),
      ];
      for (const call of calls) {
        expect(call.result.isError).toBe(true);
        expect(textOf(call.result)).toMatch(special);
        durations.push(call.ms);
      }
    }
    const threadsAfter = statusField(pid, "Threads");
    expect(threadsAfter).toBeLessThanOrEqual(threadsBefore);
    note(
      `F4 40 FIFO calls (hash, grep, diff, patch x10): all error results, slowest ${Math.max(...durations).toFixed(0)} ms, median ${durations.sort((a, b) => a - b)[20]!.toFixed(0)} ms; server threads ${threadsBefore} -> ${threadsAfter}`,
    );

    const zero = /is outside the workspace root/;
    expectError("F3 diff zero-link", await callTool(main, "diff", { oldPath: "zero", newText: "" }), zero);
    expectError("F3 patch /dev/zero", await callTool(main, "patch", { patch: "@@ -1 +1 @@\n-a\n+b\n", path: "/dev/zero" }), zero);
    expectError("F5 grep zero-link", await callTool(main, "grep", { pattern: "x", path: "zero" }), zero);
    expectError("F5 grep /proc/self link", await callTool(main, "grep", { pattern: "x", path: "proc-self" }), zero);
    expectError("F9 hash /proc/self/environ", await callTool(main, "hash", { path: "/proc/self/environ" }), zero);
  }, 120_000);

  it("F5: rooted at /proc/self, grep and diff read only capped regular files and end", async () => {
    const proc = await serve(["--root", "/proc/self", "--threads", "1", "--call-timeout", "20000"]);
    try {
      const rss0 = statusField(proc.child.pid!, "VmRSS");
      const walk = await callTool(proc, "grep", { pattern: "no-such-text-zq", path: "." });
      expect(walk.result.isError, textOf(walk.result)).toBe(false);
      expect(textOf(walk.result)).toMatch(/^No matches/);
      const pagemap = await callTool(proc, "diff", { oldPath: "pagemap", newText: "" });
      expect(pagemap.result.isError).toBe(true);
      expect(textOf(pagemap.result)).toMatch(/^diff: oldPath pagemap (holds more than the 8388608-byte limit|cannot be read|cannot be opened)/);
      const rss1 = statusField(proc.child.pid!, "VmRSS");
      note(
        `F5 grep over /proc/self (root /proc/self): ${textOf(walk.result).slice(0, 60)} in ${walk.ms.toFixed(0)} ms; diff pagemap: ${textOf(pagemap.result).slice(0, 80)} in ${pagemap.ms.toFixed(0)} ms; RSS ${(rss0 / 1024).toFixed(0)} -> ${(rss1 / 1024).toFixed(0)} MB`,
      );
    } finally {
      expect(await stop(proc)).toEqual([0, null]);
    }
  }, 60_000);

  it("F6: a ReDoS pattern ends at the call time limit with TP_ERR_TIMEOUT", async () => {
    const call = await callTool(main, "grep", { pattern: "(a+)+$", path: "redos.txt" });
    expect(call.result.isError).toBe(true);
    expect(call.result.details?.code).toBe("TP_ERR_TIMEOUT");
    note(`F6 grep (a+)+$ with --call-timeout 5000: ${call.result.details?.code} after ${call.ms.toFixed(0)} ms`);
    // The pool recovered.
    expect((await callTool(main, "hash", { text: "after" })).result.isError).toBe(false);
  }, 60_000);

  it("F7/F13: deep or large invalid arguments give a bounded validation error, in JSON and in SSE, and SSE ends with batch_end", async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 1500; i++) deep = { a: deep };
    const json = await postJson(main, [{ name: "hash", arguments: { text: deep } }]);
    expect(json.answer.status).toBe(200);
    const text = textOf(json.messages[0]!);
    expect(json.messages[0]!.isError).toBe(true);
    expect(text).toMatch(/^Validation failed for tool "hash":/);
    expect(text.endsWith("… (truncated)")).toBe(true);
    const echo = text.slice(text.indexOf("Received arguments:\n") + "Received arguments:\n".length);
    expect(Buffer.byteLength(echo)).toBeLessThanOrEqual(4096 + Buffer.byteLength("… (truncated)"));
    note(
      `F7 ${batchBody([{ name: "hash", arguments: { text: deep } }]).length}-byte body nested 1500 deep, JSON: ${json.answer.text.length} bytes answered in ${json.answer.ms.toFixed(0)} ms`,
    );

    const wide = { text: Array.from({ length: 60_000 }, (_, i) => ({ i })) };
    const large = await postJson(main, [{ name: "hash", arguments: wide }]);
    expect(large.answer.status).toBe(200);
    expect(textOf(large.messages[0]!).endsWith("… (truncated)")).toBe(true);
    note(
      `F7 ${batchBody([{ name: "hash", arguments: wide }]).length}-byte body, JSON: ${large.answer.text.length} bytes answered in ${large.answer.ms.toFixed(0)} ms`,
    );

    for (const depth of [1500, 4500, 20_000]) {
      // Written out by hand: JSON.stringify of such a value may overflow this process's stack.
      const nestedJson = `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
      const body = batchBody([{ name: "hash", arguments: { text: "PLACEHOLDER" } }]).replace('"PLACEHOLDER"', nestedJson);
      const sse = await send(main, "/v1/batches", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body,
      });
      expect(sse.status).toBe(200);
      const frames = framesOf(sse.text);
      expect(frames.map((frame) => frame.event)).not.toContain("error");
      expect(frames.at(-1)!.event).toBe("batch_end");
      const end = frames.find((frame) => frame.event === "tool_execution_end")!;
      expect(end.data.isError).toBe(true);
      const messages = frames.at(-1)!.data.messages as ToolResult[];
      expect(messages).toHaveLength(1);
      expect(messages[0]!.isError).toBe(true);
      const json = await send(main, "/v1/batches", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body,
      });
      expect(json.status).toBe(200);
      const jsonMessages = (JSON.parse(json.text) as { messages: ToolResult[] }).messages;
      expect(jsonMessages.map((message) => [message.isError, textOf(message)])).toEqual(
        messages.map((message) => [message.isError, textOf(message)]),
      );
      note(
        `F13 SSE, arguments nested ${depth} deep: ${frames.map((frame) => frame.event).join(",")} (${sse.text.length} bytes, ${sse.ms.toFixed(0)} ms)`,
      );
    }
  }, 60_000);

  it("F10: a patch whose last of 8,000 hunks fails and a diff of 20,000 changed lines end quickly as error results", async () => {
    const count = 8000;
    const text = Array.from({ length: count * 4 }, (_, i) => `l${i}`).join("\n");
    const patch = Array.from({ length: count }, (_, k) => {
      const at = k * 4 + 2;
      return `@@ -${at},1 +${at},1 @@\n-${k === count - 1 ? "missing" : `l${at - 1}`}\n+c${k}\n`;
    }).join("");
    const failing = await callTool(main, "patch", { patch, text });
    expectError("F10 patch 8,000 hunks, the last failing", failing, /^patch: hunk 8000 of 8000 /);

    const oldText = Array.from({ length: 20_000 }, (_, i) => `old ${i}`).join("\n");
    const newText = Array.from({ length: 20_000 }, (_, i) => `new ${i}`).join("\n");
    const diff = await callTool(main, "diff", { oldText, newText });
    expectError("F10 diff of 20,000 changed lines", diff, /^diff: gave up/);
  }, 60_000);

  it("F11: more than maxCallsPerBatch calls is a 400 at once", async () => {
    for (const count of [257, 10_000]) {
      const { answer } = await postJson(
        main,
        Array.from({ length: count }, () => ({ name: "hash", arguments: { text: "x" } })),
      );
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text)).toMatchObject({ code: "TP_ERR_INVALID_BATCH" });
      note(`F11 ${count} calls: ${answer.status} TP_ERR_INVALID_BATCH in ${answer.ms.toFixed(0)} ms`);
    }
    const { answer, messages } = await postJson(
      main,
      Array.from({ length: 256 }, () => ({ name: "hash", arguments: { text: "x" } })),
    );
    expect(answer.status).toBe(200);
    expect(messages).toHaveLength(256);
  }, 60_000);

  it("F8: a batch whose client never reads is ended at the request deadline by destroying its socket", async () => {
    const config = join(base, "deadline.json");
    writeFileSync(config, JSON.stringify({ requestTimeoutMs: 2000, shutdownGraceMs: 500 }));
    writeFileSync(join(root, "big.txt"), Array.from({ length: 4000 }, (_, i) => `match line ${i} ${"x".repeat(40)}`).join("\n"));
    const slow = await serve(["--root", root, "--threads", "2", "--config", config]);
    try {
      const body = batchBody(
        Array.from({ length: 256 }, () => ({ name: "grep", arguments: { pattern: "match", path: "big.txt", maxResults: 5000 } })),
      );
      const stalled = async (): Promise<{ socket: Socket; closed: Promise<void> }> => {
        const socket = connect(slow.port, "127.0.0.1");
        await once(socket, "connect");
        const closed = once(socket, "close").then(() => undefined);
        socket.on("error", () => {});
        socket.write(
          `POST /v1/batches HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: text/event-stream\r\n` +
            `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        // Never read: the server's writes fill the socket buffers and block.
        socket.pause();
        return { socket, closed };
      };
      const started = performance.now();
      const first = await stalled();
      // The server's own count: the batch is over once it reaches 0 again.
      const inFlight = async (): Promise<number> => Number(/^toolpool_batches_in_flight (\d+)$/m.exec((await send(slow, "/metrics")).text)![1]);
      let count = await inFlight();
      let sawBatch = count > 0;
      for (let i = 0; i < 300 && (count > 0 || !sawBatch); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        count = await inFlight();
        sawBatch ||= count > 0;
      }
      expect(sawBatch).toBe(true);
      expect(count).toBe(0);
      const endedAfterMs = performance.now() - started;
      // A paused socket hears of the close once it reads again.
      first.socket.resume();
      await first.closed;
      note(`F8 non-reading SSE client, requestTimeoutMs 2000: batch ended and socket destroyed by the server after ${endedAfterMs.toFixed(0)} ms`);
      expect((await send(slow, "/healthz")).status).toBe(200);

      // And a shutdown with such a client still ends.
      const second = await stalled();
      // SIGTERM once the server holds the batch (its own count says so).
      await until(async () => (await inFlight()) !== 0, "the server holding the batch");
      expect(await inFlight()).toBe(1);
      const sigterm = performance.now();
      const exit = await stop(slow);
      second.socket.destroy();
      expect(exit).toEqual([0, null]);
      note(`F8 SIGTERM with a non-reading client, shutdownGraceMs 500: exited 0 after ${(performance.now() - sigterm).toFixed(0)} ms`);
    } finally {
      if (slow.child.exitCode === null) slow.child.kill("SIGKILL");
    }
  }, 60_000);

  it("F9/F12: workers never see TOOLPOOL_TOKEN; --token-file works and keeps the token out of ps; a token no client can send (whitespace, beyond visible ASCII) exits 2", async () => {
    const tokenFile = join(base, "token");
    writeFileSync(tokenFile, "file-token-123\n");
    const fromFile = await serve(["--tools", ENV_TOOLS, "--token-file", tokenFile, "--threads", "1"], {
      TOOLPOOL_TOKEN: "env-token-should-not-leak",
    });
    try {
      const auth = { authorization: "Bearer file-token-123" };
      expect((await postJson(fromFile, [{ name: "env", arguments: { name: "TOOLPOOL_TOKEN" } }])).answer.status).toBe(401);
      const { answer, messages } = await postJson(fromFile, [{ name: "env", arguments: { name: "TOOLPOOL_TOKEN" } }], auth);
      expect(answer.status).toBe(200);
      expect(textOf(messages[0]!)).toBe("(unset)");
      const cmdline = readFileSync(`/proc/${fromFile.child.pid}/cmdline`, "utf8");
      expect(cmdline).not.toContain("file-token-123");
      note(`F9 a worker reads TOOLPOOL_TOKEN: ${textOf(messages[0]!)}; F12 --token-file: token absent from /proc/PID/cmdline`);
    } finally {
      expect(await stop(fromFile)).toEqual([0, null]);
    }
    const fromEnv = await serve(["--tools", ENV_TOOLS, "--threads", "1"], { TOOLPOOL_TOKEN: "env-token-456" });
    try {
      const { messages } = await postJson(fromEnv, [{ name: "env", arguments: { name: "TOOLPOOL_TOKEN" } }], {
        authorization: "Bearer env-token-456",
      });
      expect(textOf(messages[0]!)).toBe("(unset)");
    } finally {
      expect(await stop(fromEnv)).toEqual([0, null]);
    }
    for (const [args, env, message] of [
      [["--token", "two words"], {}, /^toolpool: the bearer token holds whitespace/],
      [[], { TOOLPOOL_TOKEN: "tab\tinside" }, /^toolpool: the bearer token holds whitespace/],
      // Node reads header bytes as Latin-1 and fetch cannot send "€": such a server would refuse everyone.
      [["--token", "secret€token"], {}, /^toolpool: the bearer token holds U\+20AC at character 7, outside visible ASCII \(0x21–0x7E\)/],
      [[], { TOOLPOOL_TOKEN: "café-token" }, /^toolpool: the bearer token holds U\+00E9 at character 4, outside visible ASCII/],
    ] as const) {
      const child = spawn(process.execPath, [CLI, "serve", "--port", "0", ...args], {
        cwd: ROOT,
        env: { ...process.env, TOOLPOOL_TOKEN: "", ...env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      children.push(child);
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      const [code] = (await once(child, "close")) as [number | null];
      expect(code).toBe(2);
      expect(stderr).toMatch(message);
      note(`F12 token no client can send (${args.length > 0 ? "--token" : "TOOLPOOL_TOKEN"}): exit ${code}`);
    }
  }, 60_000);

  it("F11: under pressure the server answers 503 TP_ERR_OVERLOADED with Retry-After, /healthz still 200; maxConnections caps sockets", async () => {
    const config = join(base, "pressure.json");
    writeFileSync(config, JSON.stringify({ maxHeapUsedBytes: 1, maxConnections: 2, retryAfterSeconds: 7 }));
    const pressed = await serve(["--root", root, "--threads", "1", "--config", config]);
    try {
      // under-pressure samples memory once a second.
      let answer = await send(pressed, "/v1/tools");
      for (let i = 0; i < 100 && answer.status !== 503; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        answer = await send(pressed, "/v1/tools");
      }
      expect(answer.status).toBe(503);
      expect(answer.headers["retry-after"]).toBe("7");
      expect(JSON.parse(answer.text)).toMatchObject({ code: "TP_ERR_OVERLOADED" });
      expect((await send(pressed, "/healthz")).status).toBe(200);
      note(
        `F11 maxHeapUsedBytes 1: ${answer.status} ${(JSON.parse(answer.text) as { code: string }).code}, Retry-After ${answer.headers["retry-after"]}; /healthz 200`,
      );
    } finally {
      expect(await stop(pressed)).toEqual([0, null]);
    }

    // maxConnections 2: a connection past it takes the place of one with no request in flight.
    // Two whose requests are under way (headers in, body awaited) leave none: a third is closed.
    const capped = await serve(["--root", root, "--threads", "1", "--max-connections", "2"]);
    try {
      const sockets: Socket[] = [];
      for (let i = 0; i < 2; i++) {
        const socket = connect(capped.port, "127.0.0.1");
        sockets.push(socket);
        socket.on("error", () => {});
        await once(socket, "connect");
        socket.write(
          "POST /v1/batches HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\nexpect: 100-continue\r\n\r\n",
        );
        // Node answers 100 Continue as it hands the request on: from then on it is in flight.
        const [interim] = (await once(socket, "data")) as [Buffer];
        expect(interim.toString("latin1")).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
      }
      const third = connect(capped.port, "127.0.0.1");
      sockets.push(third);
      third.on("error", () => {});
      const outcome = new Promise<string>((resolve) => {
        third.once("data", () => resolve("answered"));
        third.once("close", () => resolve("closed"));
      });
      await once(third, "connect");
      third.write("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
      expect(await outcome).toBe("closed");
      expect(sockets.slice(0, 2).map((socket) => socket.closed)).toEqual([false, false]);
      note("F11 maxConnections 2: with two requests in flight, a third connection is closed without an answer");
      for (const socket of sockets) socket.destroy();
    } finally {
      expect(await stop(capped)).toEqual([0, null]);
    }
  }, 60_000);

  it("kept /healthz answering throughout, RSS growth under 200 MB, and shuts down on SIGTERM", async () => {
    const rssAfter = statusField(main.child.pid!, "VmRSS");
    const growthMb = (rssAfter - rssBefore) / 1024;
    note(
      `main server RSS ${(rssBefore / 1024).toFixed(0)} -> ${(rssAfter / 1024).toFixed(0)} MB (growth ${growthMb.toFixed(0)} MB); /healthz ${healthChecks} checks, ${healthFailures.length} failures, slowest ${healthMaxMs.toFixed(0)} ms`,
    );
    expect(growthMb).toBeLessThan(200);
    expect(healthChecks).toBeGreaterThan(0);
    expect(healthFailures).toEqual([]);
    const timer = healthPoller;
    healthPoller = undefined;
    clearTimeout(timer);
    expect(await stop(main)).toEqual([0, null]);
  }, 60_000);
});
