import { readFileSync } from "node:fs";
import { join } from "node:path";

import { createRuntime, type BatchEvent, type ToolResultMessage } from "toolpool";

import fleetTools from "../fixtures/fleet/fleet-tools.mjs";
import { startNode, stopNodes, testLockMs, testStalledMs, type TestNode } from "./fleet.js";
import { createRandom } from "./soak.js";

const toolsModule = new URL("../fixtures/fleet/fleet-tools.mjs", import.meta.url);

export interface FleetSoakOptions {
  redisUrl: string;
  dir: string;
  calls: number;
  seed: number;
  sessions: number;
  nodes: number;
  /** Milliseconds between two node kills (each killed node is replaced by a new one). */
  killEveryMs: number;
}

export interface FleetSoakReport {
  calls: number;
  batches: number;
  kills: number;
  ok: number;
  nodeLost: number;
  unavailable: number;
  /** Calls without exactly one end event and one message at their place. */
  lost: number;
  duplicated: number;
  /** Calls started more than once (counted by the tool itself). */
  startedTwice: string[];
  /** ok results with no start, or with another call's text; lost/unavailable results whose audit failed. */
  wrong: string[];
  wallMs: number;
}

/**
 * Runs `calls` remote calls in random batches from concurrent sessions while
 * nodes are killed (SIGKILL) and replaced at random, then audits: one end
 * event and one message per call, in call order; no call started twice; every
 * ok call started once, with its own result; a call reported unavailable
 * never started.
 */
export async function runFleetSoak(options: FleetSoakOptions): Promise<FleetSoakReport> {
  const random = createRandom(options.seed);
  const log = join(options.dir, `fleet-soak-${options.seed}.log`);
  let nodeCount = 0;
  const spawn = () =>
    startNode({ redis: options.redisUrl, tools: toolsModule, name: `s${++nodeCount}`, concurrency: 2, lockMs: testLockMs, stalledMs: testStalledMs });
  const nodes: TestNode[] = await Promise.all(Array.from({ length: options.nodes }, spawn));
  const runtime = createRuntime({
    tools: fleetTools,
    fleet: { redis: options.redisUrl, lockDurationMs: testLockMs, stalledIntervalMs: testStalledMs, noNodeGraceMs: 2_000 },
  });
  const report: FleetSoakReport = {
    calls: 0,
    batches: 0,
    kills: 0,
    ok: 0,
    nodeLost: 0,
    unavailable: 0,
    lost: 0,
    duplicated: 0,
    startedTwice: [],
    wrong: [],
    wallMs: 0,
  };
  const outcomes: { id: string; message: ToolResultMessage }[] = [];
  const startedAt = Date.now();
  let remaining = options.calls;
  let isDone = false;

  const chaos = (async () => {
    while (!isDone) {
      await new Promise((resolve) => setTimeout(resolve, options.killEveryMs * (0.5 + random())));
      if (isDone) break;
      const index = Math.floor(random() * nodes.length);
      const victim = nodes[index]!;
      victim.kill("SIGKILL");
      await victim.exited;
      report.kills += 1;
      nodes[index] = await spawn();
    }
  })();

  const session = async (sessionIndex: number) => {
    let batchIndex = 0;
    while (remaining > 0) {
      const size = Math.min(remaining, 1 + Math.floor(random() * 8));
      remaining -= size;
      const ids = Array.from({ length: size }, (_, index) => `s${sessionIndex}b${batchIndex}c${index}`);
      batchIndex += 1;
      const ends = new Map<string, number>();
      const { messages } = await runtime.executeToolCalls(
        {
          role: "assistant",
          content: ids.map((id) => ({ type: "toolCall" as const, id, name: "task", arguments: { log, waitMs: Math.floor(random() * 100) } })),
        },
        {
          emit: (event: BatchEvent) => {
            if (event.type === "tool_execution_end") ends.set(event.toolCallId, (ends.get(event.toolCallId) ?? 0) + 1);
          },
        },
      );
      report.batches += 1;
      report.calls += size;
      ids.forEach((id, index) => {
        const count = ends.get(id) ?? 0;
        if (count === 0 || messages[index]?.toolCallId !== id) report.lost += 1;
        if (count > 1) report.duplicated += 1;
        if (messages[index] !== undefined) outcomes.push({ id, message: messages[index] });
      });
      if (messages.length !== ids.length) report.lost += Math.abs(messages.length - ids.length);
    }
  };

  try {
    await Promise.all(Array.from({ length: options.sessions }, (_, index) => session(index)));
  } finally {
    isDone = true;
    await chaos;
    await runtime.close({ force: true });
    await stopNodes(nodes);
  }

  const starts = new Map<string, number>();
  for (const line of readFileSync(log, "utf8").split("\n").filter(Boolean)) {
    const id = line.split(" ")[0]!;
    starts.set(id, (starts.get(id) ?? 0) + 1);
  }
  for (const [id, count] of starts) if (count > 1) report.startedTwice.push(id);
  for (const { id, message } of outcomes) {
    const code = (message.details as { code?: string } | undefined)?.code;
    const text = (message.content[0] as { text: string }).text;
    const started = starts.get(id) ?? 0;
    if (!message.isError) {
      report.ok += 1;
      if (text !== `done ${id}` || started !== 1) report.wrong.push(`${id}: ok "${text}" after ${started} starts`);
    } else if (code === "TP_ERR_NODE_LOST") {
      report.nodeLost += 1;
      if (started > 1) report.wrong.push(`${id}: lost after ${started} starts`);
    } else if (code === "TP_ERR_FLEET_UNAVAILABLE") {
      report.unavailable += 1;
      if (started !== 0) report.wrong.push(`${id}: unavailable but started ${started} times`);
    } else report.wrong.push(`${id}: unexpected ${code ?? "error"}: ${text}`);
  }
  report.wallMs = Date.now() - startedAt;
  return report;
}
