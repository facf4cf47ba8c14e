import { afterAll, afterEach, describe, expect } from "vitest";

import {
  createServer,
  ToolpoolError,
  type RuntimeOptions,
  type Runtime,
  type ServerOptions,
  type ToolExecutionEndEvent,
  type ToolpoolServer,
  type ToolResultMessage,
} from "toolpool";

import serverTools from "./fixtures/server/tools.mjs";
import { FakeClock } from "./support/fake-clock.js";
import { deferred, GateController } from "./support/gates.js";
import { textOf, until } from "./support/helpers.js";
import { assistantMessage, batchEndOf, describeEvents, gateKeys, postBatch, readSse, rest, take } from "./support/server-client.js";
import { open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest();

// createServer in this process; the `toolpool serve` command is in serve-command.test.ts.
// Everything runs for real: the built package (worker threads cannot load
// TypeScript), a server on a loopback port, Node's own fetch.

const gates = new GateController();
const servers: ToolpoolServer[] = [];

afterEach(async () => {
  // A test that failed half-way leaves gates shut: a zero grace aborts what still runs.
  await Promise.all(servers.splice(0).map((server) => server.close({ graceMs: 0 })));
  gates.reset();
});

afterAll(() => gates.close());

async function startServer(
  runtimeOptions: RuntimeOptions = {},
  serverOptions: ServerOptions = {},
): Promise<{ runtime: Runtime; server: ToolpoolServer; url: string }> {
  const runtime = open({ tools: serverTools, pool: { maxThreads: 3, minThreads: 1 }, ...runtimeOptions });
  const server = createServer(runtime, { host: "127.0.0.1", port: 0, ...serverOptions });
  servers.push(server);
  return { runtime, server, url: await server.listen() };
}

/** Resolves with the end event of `toolCallId`, as the runtime publishes it. */
function endEventOf(runtime: Runtime, toolCallId: string): Promise<ToolExecutionEndEvent> {
  const ended = deferred<ToolExecutionEndEvent>();
  runtime.on("tool_execution_end", (event) => {
    if (event.toolCallId === toolCallId) ended.resolve(event);
  });
  return ended.promise;
}

describe("createServer: POST /v1/batches", () => {
  it("streams a parallel batch's events as SSE in spec order, ending with batch_end", async () => {
    const { url } = await startServer();
    const key = gateKeys();
    const response = await postBatch(url, {
      assistantMessage: assistantMessage([
        { id: "a", name: "work", arguments: { gate: key("a"), updates: ["a is halfway"] } },
        { id: "b", name: "work", arguments: { gate: key("b") } },
        { id: "c", name: "work", arguments: { gate: key("c") } },
      ]),
    });
    const stream = readSse(response);
    await Promise.all(["a", "b", "c"].map((id) => gates.whenWaiting(key(id))));
    // Every call is prepared (start events, call order) before any executes.
    expect(describeEvents(await take(stream, 4))).toEqual([
      "tool_execution_start:a",
      "tool_execution_start:b",
      "tool_execution_start:c",
      "tool_execution_update:a",
    ]);
    // End events come in completion order, which the gates decide.
    gates.open(key("c"));
    expect(describeEvents(await take(stream, 1))).toEqual(["tool_execution_end:c"]);
    gates.open(key("a"));
    expect(describeEvents(await take(stream, 1))).toEqual(["tool_execution_end:a"]);
    gates.open(key("b"));
    const tail = await rest(stream);
    // Result messages come in call order, then batch_end with the messages.
    expect(describeEvents(tail)).toEqual([
      "tool_execution_end:b",
      "message_start:a",
      "message_end:a",
      "message_start:b",
      "message_end:b",
      "message_start:c",
      "message_end:c",
      "batch_end",
    ]);
    const { messages, terminate } = batchEndOf(tail);
    expect(messages.map((message) => [message.toolCallId, message.isError, textOf(message)])).toEqual([
      ["a", false, "ran a"],
      ["b", false, "ran b"],
      ["c", false, "ran c"],
    ]);
    expect(terminate).toBe(false);
  });

  it("answers the outcome as one JSON body when the client accepts application/json", async () => {
    const { url } = await startServer();
    const response = await postBatch(
      url,
      {
        assistantMessage: assistantMessage([
          { id: "1", name: "work", arguments: { text: "one", terminate: true } },
          { id: "2", name: "work", arguments: { text: "two", terminate: true } },
          { id: "3", name: "nope" },
        ]),
        context: { systemPrompt: "You are a test.", messages: [] },
        toolExecution: "parallel",
      },
      { accept: "application/json" },
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await response.json()) as { messages: ToolResultMessage[]; terminate: boolean };
    expect(body.messages.map((message) => [message.toolCallId, message.isError, textOf(message)])).toEqual([
      ["1", false, "one"],
      ["2", false, "two"],
      ["3", true, "Tool nope not found"],
    ]);
    expect(body.terminate).toBe(false);

    const terminating = await postBatch(
      url,
      { assistantMessage: assistantMessage([{ id: "1", name: "work", arguments: { terminate: true } }]) },
      { accept: "application/json" },
    );
    expect(((await terminating.json()) as { terminate: boolean }).terminate).toBe(true);
  });

  it("answers 400 listing every problem of an invalid body, and 400 for a mode the runtime does not run", async () => {
    const { url } = await startServer();
    const invalid = await postBatch(url, {
      assistantMessage: { role: "user", content: [{ type: "toolCall", name: "work" }] },
      toolExecution: "sideways",
    });
    expect(invalid.status).toBe(400);
    const body = (await invalid.json()) as { code: string; errors: { path: string; message: string }[] };
    expect(body.code).toBe("TP_ERR_INVALID_BATCH");
    expect(body.errors.map((error) => error.path).sort()).toEqual(["/assistantMessage/content/0", "/assistantMessage/role", "/toolExecution"]);

    const notJson = await fetch(`${url}/v1/batches`, { method: "POST", headers: { "content-type": "application/json" }, body: "{" });
    expect(notJson.status).toBe(400);

    const otherMode = await postBatch(url, { assistantMessage: assistantMessage([]), toolExecution: "sequential" });
    expect(otherMode.status).toBe(400);
    const otherBody = (await otherMode.json()) as { code: string; message: string };
    expect(otherBody.code).toBe("TP_ERR_INVALID_BATCH");
    expect(otherBody.message).toMatch(/"parallel" mode/);
  });

  it("answers 413 for a body over maxBodyBytes", async () => {
    const { url } = await startServer({}, { maxBodyBytes: 1024 });
    const response = await postBatch(url, {
      assistantMessage: assistantMessage([{ id: "1", name: "work", arguments: { text: "x".repeat(4096) } }]),
    });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { code: string }).code).toBe("FST_ERR_CTP_BODY_TOO_LARGE");
  });

  it("answers 429 with Retry-After while the pool's queue is full, and runs batches again once it drains", async () => {
    const { url } = await startServer({ pool: { maxThreads: 1, minThreads: 1, maxQueue: 0 } }, { retryAfterSeconds: 3 });
    const key = gateKeys();
    const first = readSse(await postBatch(url, { assistantMessage: assistantMessage([{ id: "1", name: "work", arguments: { gate: key("1") } }]) }));
    await gates.whenWaiting(key("1"));

    const refused = await postBatch(url, { assistantMessage: assistantMessage([{ id: "2", name: "work" }]) });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("3");
    expect(((await refused.json()) as { code: string }).code).toBe("TP_ERR_QUEUE_FULL");

    gates.open(key("1"));
    expect(batchEndOf(await rest(first)).messages.map((message) => message.isError)).toEqual([false]);
    const again = await postBatch(url, { assistantMessage: assistantMessage([{ id: "3", name: "work" }]) }, { accept: "application/json" });
    expect(again.status).toBe(200);
  });

  it("takes a batch's session from the body's sessionKey or the X-Toolpool-Session header, and reports waiting sessions", async () => {
    const { url, runtime } = await startServer({ pool: { maxThreads: 1, minThreads: 1 } });
    const key = gateKeys();
    const first = readSse(await postBatch(url, { assistantMessage: assistantMessage([{ id: "1", name: "work", arguments: { gate: key("1") } }]) }));
    await gates.whenWaiting(key("1"));
    const byHeader = postBatch(
      url,
      {
        assistantMessage: assistantMessage([
          { id: "2", name: "work" },
          { id: "3", name: "work" },
        ]),
      },
      { accept: "application/json", "x-toolpool-session": "agent-7" },
    );
    const byBody = postBatch(
      url,
      { assistantMessage: assistantMessage([{ id: "4", name: "work" }]), sessionKey: "agent-7" },
      { accept: "application/json" },
    );
    await until(
      () => runtime.poolStats!.queued >= 3,
      () => `three calls queued (${runtime.poolStats!.queued} so far)`,
    );
    const metrics = await (await fetch(`${url}/metrics`)).text();
    // Three calls wait, all of one session.
    expect(metrics).toMatch(/^toolpool_pool_queue_depth 3$/m);
    expect(metrics).toMatch(/^toolpool_pool_sessions_waiting 1$/m);
    expect(metrics).toMatch(/^toolpool_pool_longest_wait_seconds [\d.e-]+$/m);
    gates.open(key("1"));
    await rest(first);
    expect((await byHeader).status).toBe(200);
    expect((await byBody).status).toBe(200);
    const refused = await postBatch(
      url,
      { assistantMessage: assistantMessage([{ id: "5", name: "work" }]), sessionKey: "" },
      { accept: "application/json" },
    );
    expect(refused.status).toBe(400);
    const longHeader = await postBatch(
      url,
      { assistantMessage: assistantMessage([{ id: "6", name: "work" }]) },
      { accept: "application/json", "x-toolpool-session": "x".repeat(300) },
    );
    expect(longHeader.status).toBe(400);
    expect(((await longHeader.json()) as { code: string }).code).toBe("TP_ERR_INVALID_BATCH");
  });

  it("runs a batch under the body's maxConcurrency, and answers 400 for one that is not an integer >= 1", async () => {
    const { url, runtime } = await startServer({ pool: { maxThreads: 2, minThreads: 2 } });
    const key = gateKeys();
    const capped = postBatch(
      url,
      {
        assistantMessage: assistantMessage([
          { id: "1", name: "work", arguments: { gate: key("1") } },
          { id: "2", name: "work", arguments: { gate: key("2") } },
        ]),
        maxConcurrency: 1,
      },
      { accept: "application/json" },
    );
    await gates.whenWaiting(key("1"));
    // The second call waits for the batch's slot, not for a thread: the pool never saw it.
    expect(runtime.poolStats!.running + runtime.poolStats!.queued).toBe(1);
    gates.open(key("1"));
    await gates.whenWaiting(key("2"));
    gates.open(key("2"));
    expect((await capped).status).toBe(200);
    for (const maxConcurrency of [0, 1.5, "2"]) {
      const refused = await postBatch(
        url,
        { assistantMessage: assistantMessage([{ id: "3", name: "work" }]), maxConcurrency },
        { accept: "application/json" },
      );
      expect(refused.status).toBe(400);
    }
  });

  it("aborts the batch when the client disconnects: the worker tool's signal fires", async () => {
    const { runtime, url } = await startServer();
    const key = gateKeys();
    const ended = endEventOf(runtime, "1");
    const client = new AbortController();
    const response = await postBatch(
      url,
      { assistantMessage: assistantMessage([{ id: "1", name: "work", arguments: { gate: key("1") } }]) },
      {},
      client.signal,
    );
    expect(response.status).toBe(200);
    await gates.whenWaiting(key("1"));
    client.abort();
    // The scripted tool rejects from its signal's abort listener, inside the worker.
    const event = await ended;
    expect(event.isError).toBe(true);
    expect(textOf(event.result)).toBe(`aborted at gate ${key("1")}`);
  });

  it("aborts a batch that runs past requestTimeoutMs, and still delivers its results", async () => {
    const clock = new FakeClock();
    const { url } = await startServer({ clock }, { requestTimeoutMs: 1000 });
    const key = gateKeys();
    const stream = readSse(await postBatch(url, { assistantMessage: assistantMessage([{ id: "1", name: "work", arguments: { gate: key("1") } }]) }));
    await gates.whenWaiting(key("1"));
    clock.advance(999);
    expect(describeEvents(await take(stream, 1))).toEqual(["tool_execution_start:1"]);
    clock.advance(1);
    const { messages } = batchEndOf(await rest(stream));
    expect(messages.map((message) => [message.isError, textOf(message)])).toEqual([[true, `aborted at gate ${key("1")}`]]);
  });
});

describe("createServer: authentication", () => {
  it("answers 401 without the bearer token, except for /healthz", async () => {
    const { url } = await startServer({}, { token: "s3cret" });
    const batch = { assistantMessage: assistantMessage([{ id: "1", name: "work" }]) };

    const missing = await postBatch(url, batch, { accept: "application/json" });
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await missing.json()).toMatchObject({ statusCode: 401, code: "TP_ERR_UNAUTHORIZED" });
    const wrong = await postBatch(url, batch, { accept: "application/json", authorization: "Bearer s3cres" });
    expect(wrong.status).toBe(401);
    expect((await fetch(`${url}/v1/tools`)).status).toBe(401);
    expect((await fetch(`${url}/metrics`, { headers: { authorization: "Basic czNjcmV0" } })).status).toBe(401);

    const allowed = await postBatch(url, batch, { accept: "application/json", authorization: "Bearer s3cret" });
    expect(allowed.status).toBe(200);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });

  it("refuses to be created beyond loopback without a token", () => {
    const runtime = open({ tools: serverTools, pool: { maxThreads: 1 } });
    for (const host of ["0.0.0.0", "::", "192.0.2.1"]) {
      try {
        createServer(runtime, { host, port: 0 });
        expect.unreachable(`createServer accepted host ${host} without a token`);
      } catch (error) {
        expect(error).toBeInstanceOf(ToolpoolError);
        expect((error as ToolpoolError).code).toBe("TP_ERR_INVALID_OPTION");
      }
    }
    // Not listening: creating is enough to show the token makes it acceptable.
    const withToken = createServer(runtime, { host: "0.0.0.0", token: "t" });
    const onLocalhost = createServer(runtime, { host: "localhost" });
    servers.push(withToken, onLocalhost);
    expect(withToken.options.host).toBe("0.0.0.0");
    expect(onLocalhost.options.token).toBeUndefined();
  });
});

describe("createServer: GET endpoints", () => {
  it("lists the tools, answers /healthz, and exposes Prometheus metrics", async () => {
    const { url } = await startServer();
    const tools = (await (await fetch(`${url}/v1/tools`)).json()) as {
      toolExecution: string;
      pi: string;
      tools: { name: string; description: string; parameters: { type: string } }[];
    };
    expect(tools.toolExecution).toBe("parallel");
    expect(tools.pi).toBe("0.73");
    expect(tools.tools.map((tool) => tool.name)).toEqual(["work", "stubborn"]);
    expect(tools.tools[1]?.parameters.type).toBe("object");
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: "ok" });

    await postBatch(
      url,
      {
        assistantMessage: assistantMessage([
          { id: "1", name: "work" },
          { id: "2", name: "work", arguments: { fail: "boom" } },
          { id: "3", name: "nope" },
        ]),
      },
      { accept: "application/json" },
    );
    const response = await fetch(`${url}/metrics`);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain/);
    const metrics = await response.text();
    expect(metrics).toMatch(/^toolpool_pool_threads \d+$/m);
    expect(metrics).toMatch(/^toolpool_pool_utilization [\d.e-]+$/m);
    // prom-client's process and Node.js metrics, under toolpool's prefix only.
    expect(metrics).toMatch(/^toolpool_process_cpu_seconds_total [\d.e-]+$/m);
    expect(metrics).toMatch(/^toolpool_nodejs_heap_size_used_bytes \d+$/m);
    expect(metrics).toMatch(/^toolpool_nodejs_eventloop_lag_p99_seconds [\d.e-]+$/m);
    expect(metrics).not.toMatch(/^(process|nodejs)_/m);
    expect(metrics).toMatch(/^toolpool_pool_queue_depth 0$/m);
    expect(metrics).toContain('toolpool_tool_calls_total{tool="work",outcome="ok"} 1');
    expect(metrics).toContain('toolpool_tool_calls_total{tool="work",outcome="error"} 1');
    expect(metrics).toContain('toolpool_tool_calls_total{tool="(unknown)",outcome="error"} 1');
    expect(metrics).toContain('toolpool_tool_call_duration_seconds_count{tool="work"} 2');
    // Queue wait and run time of the two executed calls; the unknown tool never ran.
    expect(metrics).toContain('toolpool_tool_call_queue_wait_seconds_count{tool="work"} 2');
    expect(metrics).toContain('toolpool_tool_call_run_seconds_count{tool="work"} 2');
    expect(metrics).not.toContain('toolpool_tool_call_run_seconds_count{tool="(unknown)"}');
    expect(metrics).toMatch(/^toolpool_event_loop_delay_seconds\{quantile="0.99"\} [\d.e-]+$/m);
  });
});

describe("createServer: graceful shutdown", () => {
  it("answers 503 while draining and lets an in-flight batch finish within the grace period", async () => {
    const { runtime, server, url } = await startServer();
    const key = gateKeys();
    const stream = readSse(
      await postBatch(url, {
        assistantMessage: assistantMessage([
          { id: "a", name: "work", arguments: { gate: key("a") } },
          { id: "b", name: "work", arguments: { gate: key("b") } },
        ]),
      }),
    );
    await Promise.all([gates.whenWaiting(key("a")), gates.whenWaiting(key("b"))]);
    const closed = server.close({ graceMs: 60_000 });
    expect(server.isDraining).toBe(true);

    const refused = await postBatch(url, { assistantMessage: assistantMessage([]) });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("connection")).toBe("close");
    expect(((await refused.json()) as { code: string }).code).toBe("TP_ERR_CLOSED");
    expect((await fetch(`${url}/healthz`)).status).toBe(503);

    gates.open(key("b"));
    gates.open(key("a"));
    const events = await rest(stream);
    expect(
      describeEvents(events)
        .filter((type) => type.startsWith("tool_execution_end"))
        .sort(),
    ).toEqual(["tool_execution_end:a", "tool_execution_end:b"]);
    expect(batchEndOf(events).messages.map((message) => [message.toolCallId, message.isError])).toEqual([
      ["a", false],
      ["b", false],
    ]);
    await closed;
    expect(runtime.isClosed).toBe(true);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });

  it("ends in-flight batches with error results at the grace deadline, terminating calls that ignore the abort", async () => {
    const clock = new FakeClock();
    const { runtime, server, url } = await startServer({ clock, pool: { maxThreads: 2, minThreads: 1, abortGraceMs: 500 } });
    const key = gateKeys();
    const cooperativeEnded = endEventOf(runtime, "cooperative");
    const stream = readSse(
      await postBatch(url, {
        assistantMessage: assistantMessage([
          { id: "cooperative", name: "work", arguments: { gate: key("cooperative") } },
          { id: "ignoring", name: "stubborn", arguments: { gate: key("ignoring") } },
        ]),
      }),
    );
    await Promise.all([gates.whenWaiting(key("cooperative")), gates.whenWaiting(key("ignoring"))]);
    const closed = server.close({ graceMs: 2000 });
    clock.advance(1999);
    expect(describeEvents(await take(stream, 2))).toEqual(["tool_execution_start:cooperative", "tool_execution_start:ignoring"]);
    clock.advance(1);
    // The cooperative call stops at once; the other is terminated after the runtime's abortGraceMs.
    await cooperativeEnded;
    clock.advance(500);
    const events = await rest(stream);
    const { messages } = batchEndOf(events);
    expect(messages.map((message) => [message.toolCallId, message.isError])).toEqual([
      ["cooperative", true],
      ["ignoring", true],
    ]);
    expect(textOf(messages[0])).toBe(`aborted at gate ${key("cooperative")}`);
    expect((messages[1]!.details as { code?: string }).code).toBe("TP_ERR_ABORTED");
    await closed;
    expect(runtime.isClosed).toBe(true);
  });
});
