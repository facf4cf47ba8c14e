import { supportsPi16, type PiVersion } from "toolpool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { runScenario, type Mode, type Scenario } from "./support/differential.js";
import { pi16Scenarios, recordOnly, scenarios, unobservable } from "./support/differential-scenarios.js";
import { startNode, steadyCoordinator, stopNodes, type TestNode } from "./support/fleet.js";
import { GateController } from "./support/gates.js";
import { warnSkippedPi16 } from "./support/pi16.js";
import { hasRedisServer, startRedis, type TestRedis } from "./support/redis.js";

warnSkippedPi16("test/fleet-differential.test.ts");

const toolsModule = new URL("./fixtures/fleet/scripted-tools.mjs", import.meta.url);

/**
 * The differential suite again, with every worker tool remote: two node
 * processes of two threads run the scripted tools, whose gates travel over
 * Redis. Events, messages, terminate and what hooks saw must equal pi's:
 * 0.73.1's, and with `pi: "1.6"` (nodes started with `--pi 1.6`) 1.6.0's,
 * with the scenarios of every rule pi 1.6 changed.
 */
for (const pi of ["0.73", "1.6"] satisfies PiVersion[]) {
  const name = pi === "1.6" ? "pi 1.6.0" : "pi 0.73.1";
  describe.runIf(hasRedisServer() && (pi === "0.73" || supportsPi16()))(`toolpool with every worker tool on a fleet, against ${name}`, () => {
    let redis: TestRedis;
    let nodes: TestNode[] = [];
    let gates: GateController;
    const fleetOptions = () => ({ pi, fleet: { redis: redis.url, ...steadyCoordinator } });
    const all = pi === "1.6" ? { ...scenarios, ...pi16Scenarios } : scenarios;
    const unobserved =
      pi === "1.6" ? [...unobservable, ...Object.entries(pi16Scenarios).filter(([, s]) => !s.beforeToolCall && !s.afterToolCall)] : unobservable;

    beforeAll(async () => {
      redis = await startRedis();
      gates = new GateController(redis.url);
      await gates.ready();
      const env = { TOOLPOOL_TEST_GATES_REDIS: redis.url };
      nodes = await Promise.all(
        [1, 2].map((index) =>
          startNode({
            redis: redis.url,
            tools: toolsModule,
            name: `d${index}`,
            threads: 2,
            env,
            pi,
          }),
        ),
      );
    });
    afterAll(async () => {
      gates?.close();
      await stopNodes(nodes);
      await redis?.dispose();
    });

    for (const mode of ["parallel", "sequential"] satisfies Mode[]) {
      describe(`remote worker tools, ${mode}`, () => {
        for (const [name, scenario] of Object.entries(all)) {
          it(name, async () => {
            const withHooks: Scenario = { ...recordOnly, ...scenario };
            const oracle = await runScenario(withHooks, "pi", "worker", mode, gates, true, undefined, { pi });
            const toolpool = await runScenario(withHooks, "toolpool", "worker", mode, gates, true, undefined, fleetOptions());
            expect(toolpool).toEqual(oracle);
            expect(toolpool.messages).toHaveLength(scenario.calls.length);
          });
        }
      });
      describe(`unobserved batches, remote worker tools, ${mode}`, () => {
        for (const [name, scenario] of unobserved) {
          it(name, async () => {
            const oracle = await runScenario(scenario, "pi", "worker", mode, gates, true, undefined, { pi });
            const toolpool = await runScenario(scenario, "toolpool", "worker", mode, gates, false, undefined, fleetOptions());
            expect(toolpool.events).toEqual([]);
            expect({ messages: toolpool.messages, terminate: toolpool.terminate }).toEqual({
              messages: oracle.messages,
              terminate: oracle.terminate,
            });
          });
        }
      });
    }
  });
}
