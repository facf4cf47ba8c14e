import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect } from "vitest";

import { createServer, supportsPi16, workerTool, type BatchEvent, type Runtime, type RuntimeOptions } from "toolpool";

import { resolveFleetOptions, RemotePool } from "./support/built.js";
import { runCli } from "./support/cli.js";
import fleetTools from "./fixtures/fleet/fleet-tools.mjs";
import {
  losableNode,
  nodeLossBoundMs,
  startNode,
  steadyCoordinator,
  stopNodes,
  watchfulCoordinator,
  type NodeSpec,
  type TestNode,
} from "./support/fleet.js";
import { warnSkippedPi16 } from "./support/pi16.js";
import { hasRedisServer, startRedis, type TestRedis } from "./support/redis.js";
import { batchOf, codeOf, textOf, until } from "./support/helpers.js";
import { closeRuntimesNow, open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest({ force: true });

warnSkippedPi16("test/fleet.test.ts");

const toolsModule = new URL("./fixtures/fleet/fleet-tools.mjs", import.meta.url);

/** The fleet's tools by the same names, but "task" has a time limit here: another toolset. */
const changedTools = [
  workerTool({
    name: "task",
    description: "changed",
    parameters: { type: "object" },
    module: new URL("./fixtures/fleet/fleet-tool.mjs", import.meta.url),
    timeoutMs: 5_000,
  }),
  ...fleetTools.slice(1),
];

/** The starts the tool itself logged: toolCallId → pids of the processes that started it. */
function startsIn(log: string): Map<string, string[]> {
  const starts = new Map<string, string[]>();
  let text = "";
  try {
    text = readFileSync(log, "utf8");
  } catch {
    return starts;
  }
  for (const line of text.split("\n").filter(Boolean)) {
    const [id, pid] = line.split(" ") as [string, string];
    starts.set(id, [...(starts.get(id) ?? []), pid]);
  }
  return starts;
}

describe.runIf(hasRedisServer())("fleet: remote calls through Redis", () => {
  let redis: TestRedis;
  let dir: string;
  let nodes: TestNode[] = [];
  let logCount = 0;
  const newLog = () => join(dir, `starts-${++logCount}.log`);

  // Every node and coordinator keeps the steady (long) locks unless a test loses
  // a node on purpose: then only that node has the short ones, and the
  // coordinator the watchful settings; a starved healthy node keeps its calls.
  const fleetRuntime = (options: Partial<RuntimeOptions> = {}, fleet: Partial<NonNullable<RuntimeOptions["fleet"]>> = {}) => {
    const runtime = open({
      tools: fleetTools,
      ...options,
      fleet: { redis: redis.url, ...steadyCoordinator, noNodeGraceMs: 500, redisTimeoutMs: 2_000, ...fleet },
    });
    return runtime;
  };
  const spawnNodes = async (count: number, extra: Pick<NodeSpec, "concurrency" | "threads" | "pi" | "lockMs" | "stalledMs"> = {}) => {
    const started = await Promise.all(
      Array.from({ length: count }, (_, index) =>
        startNode({ redis: redis.url, tools: toolsModule, name: `n${nodes.length + index + 1}`, ...extra }),
      ),
    );
    nodes.push(...started);
    return started;
  };

  beforeAll(async () => {
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), "toolpool-fleet-"));
  });
  afterEach(async () => {
    // The runtimes first: they close through the nodes and Redis stopped below.
    await closeRuntimesNow({ force: true });
    await stopNodes(nodes);
    nodes = [];
    await redis.client().flushall();
  });
  afterAll(async () => {
    await redis?.dispose();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("a node prints its ready line with name, threads and toolset hash", async () => {
    const [node] = await spawnNodes(1);
    const runtime = fleetRuntime();
    expect(node!.readyLine).toMatch(/^node ready name=n1 threads=1 toolset=[0-9a-f]{16} pi=0\.73$/);
    const { messages } = await runtime.executeToolCalls(batchOf([{ id: "c1", arguments: {} }]));
    expect(textOf(messages[0]!)).toBe("done c1");
    expect(node!.readyLine).toContain(runtime.fleetStats!.toolsetHash.slice(0, 16));
  });

  it("exposes toolpool_fleet_nodes, remote calls by tool and outcome, and the remote overhead on /metrics", async () => {
    await spawnNodes(2);
    const runtime = fleetRuntime();
    const server = createServer(runtime, { port: 0 });
    try {
      const url = await server.listen();
      await runtime.executeToolCalls(
        batchOf([
          { id: "c1", arguments: {} },
          { id: "c2", arguments: { waitMs: 1 } },
        ]),
      );
      await until(() => runtime.fleetStats!.nodes === 2, "both nodes seen");
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toMatch(/^toolpool_fleet_nodes 2$/m);
      expect(metrics).toContain('toolpool_remote_calls_total{tool="task",outcome="ok"} 2');
      expect(metrics).toMatch(/^toolpool_remote_overhead_seconds_count 2$/m);
    } finally {
      await server.close();
    }
  });

  it("sessions take turns across the fleet: a light session's calls pass a flooding session's backlog", async () => {
    // The remote pool itself, as a runtime's coordinator uses it, with the request's sessionKey.
    await spawnNodes(1);
    const log = newLog();
    const pool = remotePoolFor("0.73");
    // Every call waits for one gate, so the order in which the node starts them is the queue's alone.
    const gateFile = join(mkdtempSync(join(tmpdir(), "toolpool-fair-")), "gate");
    const commands = new Redis(redis.url);
    // BullMQ keeps waiting jobs with a priority in one sorted set per queue.
    const waitingJobs = async () => {
      const keys = await commands.keys("*:prioritized");
      const counts = await Promise.all(keys.map((key) => commands.zcard(key)));
      return counts.reduce((sum, count) => sum + count, 0);
    };
    try {
      const run = (id: string, sessionKey: string) =>
        pool.run({ tool: fleetTools[0]!, toolCallId: id, args: { log, gateFile }, session: sessionKey });
      const flood = Array.from({ length: 12 }, (_, index) => run(`a${index}`, "A"));
      await until(() => startsIn(log).size > 0, "the flood started");
      const light = [run("b0", "B"), run("b1", "B")];
      // The first of A's calls holds the node's thread; the 11 others and B's 2 wait in the queue.
      await until(async () => (await waitingJobs()) === 13, "13 calls waiting in the queue");
      writeFileSync(gateFile, "");
      const outcomes = await Promise.all([...flood, ...light]);
      expect(outcomes.every((outcome) => outcome.kind === "ok")).toBe(true);
      const order = [...startsIn(log).keys()];
      // B's calls have priorities 1 and 2; A's backlog 2..12: B's second call starts long before A's last.
      expect(order.indexOf("b0")).toBeLessThan(order.indexOf("a4"));
      expect(order.indexOf("b1")).toBeLessThan(order.indexOf("a5"));
    } finally {
      writeFileSync(gateFile, "");
      commands.disconnect();
      await pool.close({ force: true });
    }
  });

  it("timeoutMs counts from when a node's thread starts the call, never while it waits in the queue", async () => {
    await spawnNodes(1, { concurrency: 4 });
    const runtime = fleetRuntime();
    // One thread: the third call waits ~500 ms for it, longer than its 400 ms limit.
    const { messages } = await runtime.executeToolCalls(
      batchOf([
        { id: "t1", name: "timed", arguments: { waitMs: 250 } },
        { id: "t2", name: "timed", arguments: { waitMs: 250 } },
        { id: "t3", name: "timed", arguments: { waitMs: 250 } },
        { id: "t4", name: "timed", arguments: { waitMs: 5_000 } },
      ]),
    );
    expect(messages.map((message) => codeOf(message) ?? textOf(message))).toEqual(["done t1", "done t2", "done t3", "TP_ERR_TIMEOUT"]);
  });

  it("SIGTERM: a node finishes its running call, then exits 0", async () => {
    const [node] = await spawnNodes(1);
    const runtime = fleetRuntime();
    const log = newLog();
    const batch = runtime.executeToolCalls(batchOf([{ id: "c1", arguments: { log, waitMs: 400 } }]));
    await until(() => startsIn(log).has("c1"), "the call started");
    node!.kill("SIGTERM");
    const { messages } = await batch;
    expect(textOf(messages[0]!)).toBe("done c1");
    expect(await node!.exited).toBe(0);
  });

  it("toolpool run --fleet URL --remote all runs the batch's worker calls on the fleet", async () => {
    await spawnNodes(1);
    const log = newLog();
    const batchFile = join(dir, "batch.json");
    writeFileSync(
      batchFile,
      JSON.stringify(
        batchOf([
          { id: "c1", arguments: { log } },
          { id: "c2", arguments: { log } },
        ]),
      ),
    );
    const flags = ["--tools", fileURLToPath(toolsModule), "--fleet", redis.url, "--remote", "all", "--ndjson"];
    const { code, stdout, stderr } = await runCli(["run", batchFile, ...flags]);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain("done c1");
    expect(stdout).toContain("done c2");
    expect(startsIn(log).get("c1")).toEqual([String(nodes[0]!.process.pid)]);
  });

  it("SIGKILL of a node mid-call: one TP_ERR_NODE_LOST, every other call succeeds once, nothing starts twice", async () => {
    // The victim alone has the short lock: the two others keep theirs through a starved second.
    const [victim] = await spawnNodes(1, losableNode);
    await spawnNodes(2);
    const victimPid = String(victim!.process.pid);
    const runtime = fleetRuntime({}, watchfulCoordinator);
    const log = newLog();
    const ids = Array.from({ length: 9 }, (_, index) => `c${index + 1}`);
    const endedAt = new Map<string, number>();
    const batch = runtime.executeToolCalls(batchOf(ids.map((id) => ({ id, arguments: { log, waitMs: 600 } }))), {
      emit: (event: BatchEvent) => {
        if (event.type === "tool_execution_end") endedAt.set(event.toolCallId, Date.now());
      },
    });
    // Kill the victim once it runs a call.
    await until(() => [...startsIn(log).values()].some((pids) => pids.includes(victimPid)), "the victim started a call");
    const killedAt = Date.now();
    victim!.kill("SIGKILL");
    const { messages } = await batch;
    // The call it was running: the last it started (a starved test may have seen its first call end).
    const victimCall = [...startsIn(log)].filter(([, pids]) => pids.includes(victimPid)).at(-1)![0];

    expect(messages.map((message) => message.toolCallId)).toEqual(ids);
    const lost = messages.filter((message) => codeOf(message) === "TP_ERR_NODE_LOST");
    expect(lost.map((message) => message.toolCallId)).toEqual([victimCall]);
    expect(textOf(lost[0]!)).toMatch(/the call may have run partly or fully$/);
    for (const message of messages) if (message.toolCallId !== victimCall) expect(textOf(message)).toBe(`done ${message.toolCallId}`);
    const starts = startsIn(log);
    for (const id of ids) expect(starts.get(id), id).toHaveLength(1);
    expect(starts.get(victimCall)).toEqual([victimPid]);
    // Noticed within the bound (generous factor: a busy machine delays timers, not the mechanism).
    const detectionMs = endedAt.get(victimCall)! - killedAt;
    console.log(`node loss noticed after ${detectionMs} ms (bound ${nodeLossBoundMs} ms)`);
    expect(detectionMs).toBeLessThan(nodeLossBoundMs * 3);
  });

  it("the only node dies: its running call is lost, the waiting one ends unavailable, and nothing runs again", async () => {
    await spawnNodes(1, losableNode);
    const runtime = fleetRuntime({}, watchfulCoordinator);
    const log = newLog();
    const batch = runtime.executeToolCalls(
      batchOf([
        { id: "running", arguments: { log, waitMs: 60_000 } },
        { id: "waiting", arguments: { log, waitMs: 10 } },
      ]),
    );
    await until(() => startsIn(log).has("running"), "the call started");
    nodes[0]!.kill("SIGKILL");
    const { messages } = await batch;
    expect(messages.map(codeOf)).toEqual(["TP_ERR_NODE_LOST", "TP_ERR_FLEET_UNAVAILABLE"]);
    // A node that joins afterwards finds nothing of theirs to run.
    await spawnNodes(1);
    const next = await runtime.executeToolCalls(batchOf([{ id: "after", arguments: { log } }]));
    expect(textOf(next.messages[0]!)).toBe("done after");
    expect([...startsIn(log)]).toEqual([
      ["running", [String(nodes[0]!.process.pid)]],
      ["after", [String(nodes[1]!.process.pid)]],
    ]);
  });

  it("resubmits a lost call of an idempotent tool, and only of such a tool", async () => {
    // The first node alone has the short lock, and takes the first attempt; the second joins before it dies.
    const [victim] = await spawnNodes(1, losableNode);
    const runtime = fleetRuntime({}, watchfulCoordinator);
    const log = newLog();
    const batch = runtime.executeToolCalls(batchOf([{ id: "p1", name: "pure", arguments: { log, waitMs: 60_000, retryWaitMs: 0 } }]));
    await until(() => startsIn(log).has("p1"), "the call started");
    expect(startsIn(log).get("p1")).toEqual([String(victim!.process.pid)]);
    await spawnNodes(1);
    // The second attempt must finish: the tool waits long only on its first start, as the log tells it.
    victim!.kill("SIGKILL");
    const { messages } = await batch;
    expect(codeOf(messages[0]!)).toBeUndefined();
    expect(textOf(messages[0]!)).toBe("done p1");
    expect(startsIn(log).get("p1")).toHaveLength(2);
  });

  it("with no node for the toolset, a call ends TP_ERR_FLEET_UNAVAILABLE at once", async () => {
    const runtime = fleetRuntime();
    const { messages } = await runtime.executeToolCalls(batchOf([{ id: "c1", arguments: {} }]));
    expect(codeOf(messages[0]!)).toBe("TP_ERR_FLEET_UNAVAILABLE");
    expect(textOf(messages[0]!)).toContain("no live fleet node serves this runtime's tools");
  });

  it("with Redis unreachable, a call ends TP_ERR_FLEET_UNAVAILABLE, never hangs", async () => {
    const runtime = open({ tools: fleetTools, fleet: { redis: "redis://127.0.0.1:1", redisTimeoutMs: 300 } });
    const { messages } = await runtime.executeToolCalls(
      batchOf([
        { id: "c1", arguments: {} },
        { id: "c2", arguments: {} },
      ]),
    );
    expect(messages.map(codeOf)).toEqual(["TP_ERR_FLEET_UNAVAILABLE", "TP_ERR_FLEET_UNAVAILABLE"]);
    expect(textOf(messages[0]!)).toBe('Tool "task" was not run: Redis at 127.0.0.1:1 is unreachable');
  });

  it("a node with other tools never gets the calls: TP_ERR_TOOL_MISMATCH", async () => {
    await spawnNodes(1);
    const log = newLog();
    const runtime = fleetRuntime({ tools: changedTools });
    const { messages } = await runtime.executeToolCalls(batchOf([{ id: "c1", arguments: { log } }]));
    expect(codeOf(messages[0]!)).toBe("TP_ERR_TOOL_MISMATCH");
    expect(startsIn(log).size).toBe(0);
  });

  /** The remote pool itself, as a runtime of this pi hands it its worker calls. */
  const remotePoolFor = (pi: "0.73" | "1.6", tools = fleetTools) =>
    new RemotePool(resolveFleetOptions({ redis: redis.url, ...steadyCoordinator }), tools, {
      abortGraceMs: 500,
      pi,
      clock: {
        now: () => Date.now(),
        setTimeout: (callback, ms) => setTimeout(callback, ms),
        clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
      },
    });

  it("a fleet speaks one pi: a pi 0.73 node never gets a pi 1.6 coordinator's calls, which end TP_ERR_TOOL_MISMATCH naming both", async () => {
    const [node] = await spawnNodes(1);
    expect(node!.readyLine).toMatch(/ pi=0\.73$/);
    const log = newLog();
    const pools = [remotePoolFor("0.73"), remotePoolFor("1.6"), remotePoolFor("1.6", changedTools)];
    try {
      const [same, otherPi, otherPiAndTools] = await Promise.all(
        pools.map((pool, index) => pool.run({ tool: fleetTools[0]!, toolCallId: `c${index}`, args: { log } })),
      );
      // The same tools under the node's pi run: only the pi keeps the second pool's call off the node.
      expect(same).toMatchObject({ kind: "ok", result: { content: [{ type: "text", text: "done c0" }] } });
      expect(otherPi).toEqual({
        kind: "error",
        code: "TP_ERR_TOOL_MISMATCH",
        message: expect.stringMatching(
          /^Tool "task" was not run: the fleet's nodes serve pi 0\.73 \(toolset [0-9a-f]{16}\) and this runtime follows pi 1\.6 \(toolset [0-9a-f]{16}\); a fleet speaks one pi: start its nodes with --pi 1\.6$/,
        ),
      });
      expect(otherPiAndTools).toMatchObject({ kind: "error", code: "TP_ERR_TOOL_MISMATCH" });
      expect((otherPiAndTools as { message: string }).message).toMatch(/serve pi 0\.73 .* follows pi 1\.6 .*; they differ beyond the pi too/);
      expect([...startsIn(log).keys()]).toEqual(["c0"]);
    } finally {
      await Promise.all(pools.map((pool) => pool.close({ force: true })));
    }
  });

  describe.skipIf(!supportsPi16())("nodes of pi 1.6 (Node >= 22.19)", () => {
    it("a runtime with pi 1.6 hands its calls to pi 1.6 nodes only", async () => {
      await spawnNodes(1);
      const log = newLog();
      const runtime = fleetRuntime({ pi: "1.6" });
      const first = await runtime.executeToolCalls(batchOf([{ id: "c1", arguments: { log } }]));
      expect(codeOf(first.messages[0]!)).toBe("TP_ERR_TOOL_MISMATCH");
      expect(textOf(first.messages[0]!)).toMatch(/serve pi 0\.73 .* follows pi 1\.6 .*--pi 1\.6$/);
      await spawnNodes(1, { pi: "1.6" });
      const second = await runtime.executeToolCalls(batchOf([{ id: "c2", arguments: { log } }]));
      expect(textOf(second.messages[0]!)).toBe("done c2");
      expect([...startsIn(log).keys()]).toEqual(["c2"]);
    });

    it("a node started with --pi 1.6 serves pi 1.6 coordinators only: a default (pi 0.73) runtime's call ends TP_ERR_TOOL_MISMATCH naming both", async () => {
      const [node] = await spawnNodes(1, { pi: "1.6" });
      expect(node!.readyLine).toMatch(/ pi=1\.6$/);
      const log = newLog();
      const runtime = fleetRuntime();
      expect(runtime.options.pi).toBe("0.73");
      const { messages } = await runtime.executeToolCalls(batchOf([{ id: "c1", arguments: { log } }]));
      expect(codeOf(messages[0]!)).toBe("TP_ERR_TOOL_MISMATCH");
      expect(textOf(messages[0]!)).toMatch(
        /^Tool "task" was not run: the fleet's nodes serve pi 1\.6 \(toolset [0-9a-f]{16}\) and this runtime follows pi 0\.73 \(toolset [0-9a-f]{16}\); a fleet speaks one pi: start its nodes with --pi 0\.73$/,
      );
      const pool = remotePoolFor("1.6");
      try {
        expect(await pool.run({ tool: fleetTools[0]!, toolCallId: "c2", args: { log } })).toMatchObject({ kind: "ok" });
      } finally {
        await pool.close({ force: true });
      }
      expect([...startsIn(log).keys()]).toEqual(["c2"]);
    });
  });

  it("runs only the tools named in fleet.remote on the fleet; the rest locally", async () => {
    await spawnNodes(1);
    const log = newLog();
    const runtime = fleetRuntime({ pool: { maxThreads: 1 } }, { remote: ["task"] });
    const { messages } = await runtime.executeToolCalls(
      batchOf([
        { id: "r", arguments: { log } },
        { id: "l", name: "pure", arguments: { log } },
      ]),
    );
    expect(messages.map(textOf)).toEqual(["done r", "done l"]);
    expect(startsIn(log).get("r")).toEqual([String(nodes[0]!.process.pid)]);
    expect(startsIn(log).get("l")).toEqual([String(process.pid)]);
  });

  it("200 calls × 10 partials: every partial arrives, in order, before its end", async () => {
    await spawnNodes(2, { concurrency: 8 });
    const runtime = fleetRuntime();
    const seen = new Map<string, number[]>();
    const problems: string[] = [];
    const ids = Array.from({ length: 200 }, (_, index) => `p${index}`);
    const ended = new Set<string>();
    const { messages } = await runtime.executeToolCalls(batchOf(ids.map((id) => ({ id, arguments: { updates: 10 } }))), {
      emit: (event: BatchEvent) => {
        if (event.type === "tool_execution_update") {
          if (ended.has(event.toolCallId)) problems.push(`${event.toolCallId}: partial after end`);
          const list = seen.get(event.toolCallId) ?? [];
          list.push((event.partialResult.details as { index: number }).index);
          seen.set(event.toolCallId, list);
        }
        if (event.type === "tool_execution_end") ended.add(event.toolCallId);
      },
    });
    expect(problems).toEqual([]);
    expect(messages.filter((message) => message.isError)).toEqual([]);
    for (const id of ids) expect(seen.get(id), id).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it("a batch abort reaches running calls (cooperative, then forced) as locally; a call still waiting in the queue never starts", async () => {
    await spawnNodes(1, { threads: 2 });
    const scenario = async (runtime: Runtime) => {
      const log = newLog();
      const controller = new AbortController();
      const batch = runtime.executeToolCalls(
        batchOf([
          { id: "polite", arguments: { log, waitMs: 60_000 } },
          { id: "stubborn", arguments: { log, spinMs: 60_000, ignoreAbort: true } },
          { id: "queued", arguments: { log, waitMs: 60_000 } },
        ]),
        { signal: controller.signal },
      );
      await until(() => startsIn(log).size >= 2, "two calls started");
      controller.abort();
      const { messages } = await batch;
      return {
        started: [...startsIn(log).keys()].sort(),
        ends: messages.map((message) => [message.toolCallId, codeOf(message) ?? null, textOf(message)]),
      };
    };
    // The grace is the node's pool.abortGraceMs (500 ms by default, as here).
    const local = await scenario(open({ tools: fleetTools, pool: { maxThreads: 2 } }));
    const remote = await scenario(fleetRuntime());
    const running = [
      ["polite", null, "aborted polite"],
      [
        "stubborn",
        "TP_ERR_ABORTED",
        'Tool "task" did not stop within 500 ms of the abort; its worker was terminated while the tool was still running, so it may have had some of its effects',
      ],
    ];
    // Locally the waiting call starts aborted; on a fleet it is taken back from the queue.
    expect(local).toEqual({ started: ["polite", "queued", "stubborn"], ends: [...running, ["queued", null, "aborted queued"]] });
    expect(remote).toEqual({
      started: ["polite", "stubborn"],
      ends: [...running, ["queued", "TP_ERR_ABORTED", 'Tool "task" was not run: its batch was aborted before a fleet node started it']],
    });
  });
});
