import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { runScenario, type Mode, type Scenario } from "./support/differential.js";
import { recordOnly, scenarios, unobservable } from "./support/differential-scenarios.js";
import { startNode, stopNodes, testLockMs, testStalledMs, type TestNode } from "./support/fleet.js";
import { GateController } from "./support/gates.js";
import { hasRedisServer, startRedis, type TestRedis } from "./support/redis.js";

const toolsModule = new URL("./fixtures/fleet/scripted-tools.mjs", import.meta.url);

/**
 * The differential suite again, with every worker tool remote: two node
 * processes of two threads run the scripted tools, whose gates travel over
 * Redis. Events, messages, terminate and what hooks saw must equal pi's.
 */
describe.runIf(hasRedisServer())("toolpool with every worker tool on a fleet, against pi 0.73.1", () => {
  let redis: TestRedis;
  let nodes: TestNode[] = [];
  let gates: GateController;
  const fleetOptions = () => ({ fleet: { redis: redis.url, lockDurationMs: testLockMs, stalledIntervalMs: testStalledMs } });

  beforeAll(async () => {
    redis = await startRedis();
    gates = new GateController(redis.url);
    await gates.ready();
    const env = { TOOLPOOL_TEST_GATES_REDIS: redis.url };
    nodes = await Promise.all([1, 2].map((index) => startNode({ redis: redis.url, tools: toolsModule, name: `d${index}`, threads: 2, env })));
  });
  afterAll(async () => {
    gates?.close();
    await stopNodes(nodes);
    await redis?.dispose();
  });

  for (const mode of ["parallel", "sequential"] satisfies Mode[]) {
    describe(`remote worker tools, ${mode}`, () => {
      for (const [name, scenario] of Object.entries(scenarios)) {
        it(name, async () => {
          const withHooks: Scenario = { ...recordOnly, ...scenario };
          const pi = await runScenario(withHooks, "pi", "worker", mode, gates);
          const toolpool = await runScenario(withHooks, "toolpool", "worker", mode, gates, true, undefined, fleetOptions());
          expect(toolpool).toEqual(pi);
          expect(toolpool.messages).toHaveLength(scenario.calls.length);
        });
      }
    });
    describe(`unobserved batches, remote worker tools, ${mode}`, () => {
      for (const [name, scenario] of unobservable) {
        it(name, async () => {
          const pi = await runScenario(scenario, "pi", "worker", mode, gates);
          const toolpool = await runScenario(scenario, "toolpool", "worker", mode, gates, false, undefined, fleetOptions());
          expect(toolpool.events).toEqual([]);
          expect({ messages: toolpool.messages, terminate: toolpool.terminate }).toEqual({ messages: pi.messages, terminate: pi.terminate });
        });
      }
    });
  }
});
