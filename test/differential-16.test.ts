import { supportsPi16 } from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

import { capsNeverReached, runScenario, type Flavor, type Mode, type Scenario } from "./support/differential.js";
import { pi16Scenarios, recordOnly, scenarios, unobservable } from "./support/differential-scenarios.js";
import { GateController } from "./support/gates.js";
import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/differential-16.test.ts");

/**
 * The differential suite with `pi: "1.6"`, against pi 1.6.0's own loop: the
 * scenarios of 0.73.1's suite and one for each rule pi 1.6 changed.
 */
describe.skipIf(!supportsPi16())("toolpool against pi 1.6.0", () => {
  const gates = new GateController();
  afterAll(() => gates.close());
  const all = { ...scenarios, ...pi16Scenarios };
  const options = { pi: "1.6" } as const;

  for (const flavor of ["inline", "worker"] satisfies Flavor[]) {
    for (const mode of ["parallel", "sequential"] satisfies Mode[]) {
      describe(`${flavor} tools, ${mode}`, () => {
        for (const [name, scenario] of Object.entries(all)) {
          it(name, async () => {
            const withHooks: Scenario = { ...recordOnly, ...scenario };
            const pi = await runScenario(withHooks, "pi", flavor, mode, gates, true, undefined, options);
            const toolpool = await runScenario(withHooks, "toolpool", flavor, mode, gates, true, undefined, options);
            expect(toolpool).toEqual(pi);
            expect(toolpool.messages).toHaveLength(scenario.calls.length);
          });
        }
      });
      describe(`${flavor} tools, ${mode}, with caps never reached`, () => {
        for (const [name, scenario] of Object.entries(all)) {
          it(name, async () => {
            const withHooks: Scenario = { ...recordOnly, ...scenario };
            const caps = capsNeverReached(scenario.calls.length);
            const pi = await runScenario(withHooks, "pi", flavor, mode, gates, true, undefined, options);
            const toolpool = await runScenario(
              withHooks,
              "toolpool",
              flavor,
              mode,
              gates,
              true,
              undefined,
              { ...options, ...caps.runtime },
              caps.batch,
            );
            expect(toolpool).toEqual(pi);
          });
        }
      });
      describe(`unobserved batches (no hook, no sink), ${flavor} tools, ${mode}`, () => {
        const unobserved = [...unobservable, ...Object.entries(pi16Scenarios).filter(([, s]) => !s.beforeToolCall && !s.afterToolCall)];
        for (const [name, scenario] of unobserved) {
          it(name, async () => {
            const pi = await runScenario(scenario, "pi", flavor, mode, gates, true, undefined, options);
            const toolpool = await runScenario(scenario, "toolpool", flavor, mode, gates, false, undefined, options);
            expect(toolpool.events).toEqual([]);
            expect({ messages: toolpool.messages, terminate: toolpool.terminate }).toEqual({ messages: pi.messages, terminate: pi.terminate });
          });
        }
      });
    }
  }
});
