import { randomUUID } from "node:crypto";

import { afterAll, afterEach, describe, expect } from "vitest";

import { createServer, type AssistantMessage, type ToolpoolServer } from "toolpool";

import { GateController } from "./support/gates.js";
import { fault, work } from "./support/pool-event-tools.js";
import { open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest();

// A real server on a loopback port over the built package: /metrics' pool
// metrics, which come from the pools' lifecycle events.
const token = "pool-metrics-token";
const gates = new GateController();
const servers: ToolpoolServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close({ graceMs: 0 })));
  gates.reset();
});

afterAll(() => gates.close());

function message(calls: { id: string; name: string; arguments?: Record<string, unknown> }[]): AssistantMessage {
  return {
    role: "assistant",
    content: calls.map((call) => ({ type: "toolCall" as const, id: call.id, name: call.name, arguments: call.arguments ?? {} })),
  };
}

/** The value of the sample `name{labels}` in a scrape, or undefined if absent. */
function sample(metrics: string, name: string, labels: string): number | undefined {
  const line = metrics.split("\n").find((candidate) => candidate.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("/metrics from pool events", () => {
  it("listens to the pools from the first scrape only, then counts calls by pool, tool and outcome, their waits and runs, and the busy threads", async () => {
    const runtime = open({ tools: [work, fault], pool: { maxThreads: 2, minThreads: 1 } });
    const server = createServer(runtime, { host: "127.0.0.1", port: 0, token });
    servers.push(server);
    const url = await server.listen();
    const scrape = async () => (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
    // A server nobody scrapes makes the pools emit nothing.
    await runtime.executeToolCalls(message([{ id: "unseen", name: "work" }]));
    expect(runtime.poolEvents.isObserved).toBe(false);
    const first = await scrape();
    expect(runtime.poolEvents.listenerCount).toBe(2);
    expect(sample(first, "toolpool_pool_calls_total", 'pool="shared",tool="work",outcome="ok"')).toBeUndefined();

    await runtime.executeToolCalls(
      message([
        { id: "fine", name: "work" },
        { id: "boom", name: "fault", arguments: { fault: "crash" } },
      ]),
    );
    const gate = `${randomUUID()}:held`;
    const held = runtime.executeToolCalls(message([{ id: "held", name: "work", arguments: { gate } }]));
    await gates.whenWaiting(gate);
    const during = await scrape();
    expect(sample(during, "toolpool_pool_calls_total", 'pool="shared",tool="work",outcome="ok"')).toBe(1);
    expect(sample(during, "toolpool_pool_calls_total", 'pool="shared",tool="fault",outcome="tp_err_worker_crash"')).toBe(1);
    expect(sample(during, "toolpool_pool_queue_wait_seconds_count", 'pool="shared",tool="work"')).toBe(2);
    expect(sample(during, "toolpool_pool_run_seconds_count", 'pool="shared",tool="fault"')).toBe(1);
    expect(sample(during, "toolpool_pool_threads_busy", 'pool="shared"')).toBe(1);
    gates.open(gate);
    await held;
    const after = await scrape();
    expect(sample(after, "toolpool_pool_threads_busy", 'pool="shared"')).toBe(0);
    expect(sample(after, "toolpool_pool_run_seconds_count", 'pool="shared",tool="work"')).toBe(2);

    await server.close({ graceMs: 0 });
    expect(runtime.poolEvents.isObserved).toBe(false);
  });
});
