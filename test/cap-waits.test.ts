/**
 * Calls waiting for a cap, as the runtime lists them (`capWaits()`) and as
 * `/metrics` counts them: started, not yet run, first come first.
 */
import { randomUUID } from "node:crypto";

import { afterAll, afterEach, describe, expect } from "vitest";

import { createServer, workerTool, type ToolpoolServer } from "toolpool";

import { GateController } from "./support/gates.js";
import { batch, until } from "./support/helpers.js";
import { open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest({ force: true });

const probeModule = new URL("./fixtures/tools/concurrency-probe.mjs", import.meta.url);
const gateArgs = { type: "object", properties: { gate: { type: "string" } }, required: ["gate"] } as const;
const shared = new Int32Array(new SharedArrayBuffer(12));
const probe = workerTool({ name: "probe", description: "", parameters: gateArgs, module: probeModule, context: () => shared, maxConcurrency: 1 });
const token = "cap-waits-token";

const gates = new GateController();
const servers: ToolpoolServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close({ graceMs: 0 })));
  gates.reset();
});
afterAll(() => gates.close());

/** The value of the sample `name{labels}` in a scrape, or undefined if absent. */
function sample(metrics: string, name: string, labels: string): number | undefined {
  const line = metrics.split("\n").find((candidate) => candidate.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("calls waiting for a cap", () => {
  it("are listed by capWaits() with their tool, call, batch and session, first come first, until they run", async () => {
    const runtime = open({ tools: [probe], pool: { maxThreads: 2 } });
    expect(runtime.capWaits()).toEqual([]);
    const keys = ["a", "b", "c"].map((name) => `${randomUUID()}:${name}`);
    const batchIds: string[] = [];
    runtime.on("batch_start", (_event, meta: { batchId: string }) => batchIds.push(meta.batchId));
    const done = runtime.executeToolCalls(
      batch(["c0", "probe", { gate: keys[0] }], ["c1", "probe", { gate: keys[1] }], ["c2", "probe", { gate: keys[2] }]),
      {
        sessionKey: "agent-1",
      },
    );
    await gates.whenWaiting(keys[0]!);
    await until(() => runtime.capWaits().length === 2, "two calls waiting for the cap");
    const waits = runtime.capWaits();
    expect(waits.map(({ tool, toolCallId, batchId, sessionKey }) => ({ tool, toolCallId, batchId, sessionKey }))).toEqual([
      { tool: "probe", toolCallId: "c1", batchId: batchIds[0], sessionKey: "agent-1" },
      { tool: "probe", toolCallId: "c2", batchId: batchIds[0], sessionKey: "agent-1" },
    ]);
    for (const wait of waits) expect(wait.since).toBeLessThanOrEqual(Date.now());
    // Not queued for a thread: no pool has seen them.
    expect(runtime.poolStats?.queued).toBe(0);
    gates.open(keys[0]!);
    await gates.whenWaiting(keys[1]!);
    expect(runtime.capWaits().map((wait) => wait.toolCallId)).toEqual(["c2"]);
    gates.open(keys[1]!);
    await gates.whenWaiting(keys[2]!);
    expect(runtime.capWaits()).toEqual([]);
    gates.open(keys[2]!);
    const { messages } = await done;
    expect(messages.map((message) => message.isError)).toEqual([false, false, false]);
  });

  it("are counted by tool in /metrics (toolpool_calls_waiting_for_cap)", async () => {
    const runtime = open({ tools: [probe], pool: { maxThreads: 2 } });
    const server = createServer(runtime, { host: "127.0.0.1", port: 0, token });
    servers.push(server);
    const url = await server.listen();
    const scrape = async () => (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
    const keys = ["a", "b", "c"].map((name) => `${randomUUID()}:${name}`);
    const done = runtime.executeToolCalls(
      batch(["c0", "probe", { gate: keys[0] }], ["c1", "probe", { gate: keys[1] }], ["c2", "probe", { gate: keys[2] }]),
    );
    await gates.whenWaiting(keys[0]!);
    await until(() => runtime.capWaits().length === 2, "two calls waiting for the cap");
    expect(sample(await scrape(), "toolpool_calls_waiting_for_cap", 'tool="probe"')).toBe(2);
    for (const key of keys) {
      gates.open(key);
      if (key !== keys[2]) await gates.whenWaiting(keys[keys.indexOf(key) + 1]!);
    }
    await done;
    // A label with no call waiting is gone, not left at its last value.
    expect(sample(await scrape(), "toolpool_calls_waiting_for_cap", 'tool="probe"')).toBeUndefined();
  });
});
