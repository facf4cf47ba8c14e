import { afterAll, describe, expect, it } from "vitest";

import { capsNeverReached, runScenario, type Flavor, type Mode, type Scenario } from "./support/differential.js";
import { recordOnly, scenarios, unobservable } from "./support/differential-scenarios.js";
import { GateController } from "./support/gates.js";

describe("toolpool against pi 0.73.1", () => {
  const gates = new GateController();
  afterAll(() => gates.close());

  for (const flavor of ["inline", "worker"] satisfies Flavor[]) {
    for (const mode of ["parallel", "sequential"] satisfies Mode[]) {
      describe(`${flavor} tools, ${mode}`, () => {
        for (const [name, scenario] of Object.entries(scenarios)) {
          it(name, async () => {
            // Hooks that only record, so every scenario compares what hooks saw.
            const withHooks: Scenario = { ...recordOnly, ...scenario };
            const pi = await runScenario(withHooks, "pi", flavor, mode, gates);
            const toolpool = await runScenario(withHooks, "toolpool", flavor, mode, gates);
            expect(toolpool).toEqual(pi);
            expect(toolpool.messages).toHaveLength(scenario.calls.length);
          });
        }
      });
    }
  }

  // Turn-taking across sessions decides only which waiting call gets the next
  // thread: with first-come-first-served scheduling the semantics are the same.
  for (const mode of ["parallel", "sequential"] satisfies Mode[]) {
    describe(`worker tools, ${mode}, pool.scheduling "fifo"`, () => {
      for (const [name, scenario] of Object.entries(scenarios)) {
        it(name, async () => {
          const withHooks: Scenario = { ...recordOnly, ...scenario };
          const pi = await runScenario(withHooks, "pi", "worker", mode, gates);
          const toolpool = await runScenario(withHooks, "toolpool", "worker", mode, gates, true, undefined, {
            pool: { maxThreads: 4, minThreads: 1, scheduling: "fifo" },
          });
          expect(toolpool).toEqual(pi);
        });
      }
    });
  }

  // Caps that are never reached (each tool's, the session's and the batch's
  // at the batch's size) change nothing: the run is pi's, event for event.
  for (const flavor of ["inline", "worker"] satisfies Flavor[]) {
    for (const mode of ["parallel", "sequential"] satisfies Mode[]) {
      describe(`${flavor} tools, ${mode}, with caps never reached`, () => {
        for (const [name, scenario] of Object.entries(scenarios)) {
          it(name, async () => {
            const withHooks: Scenario = { ...recordOnly, ...scenario };
            const caps = capsNeverReached(scenario.calls.length);
            const pi = await runScenario(withHooks, "pi", flavor, mode, gates);
            const toolpool = await runScenario(withHooks, "toolpool", flavor, mode, gates, true, undefined, caps.runtime, caps.batch);
            expect(toolpool).toEqual(pi);
          });
        }
        for (const [name, scenario] of unobservable) {
          it(`${name}, unobserved`, async () => {
            const caps = capsNeverReached(scenario.calls.length);
            const pi = await runScenario(scenario, "pi", flavor, mode, gates);
            const toolpool = await runScenario(scenario, "toolpool", flavor, mode, gates, false, undefined, caps.runtime, caps.batch);
            expect({ messages: toolpool.messages, terminate: toolpool.terminate }).toEqual({ messages: pi.messages, terminate: pi.terminate });
          });
        }
      });
    }
  }

  for (const flavor of ["inline", "worker"] satisfies Flavor[]) {
    for (const mode of ["parallel", "sequential"] satisfies Mode[]) {
      describe(`unobserved batches (no hook, no sink), ${flavor} tools, ${mode}`, () => {
        for (const [name, scenario] of unobservable) {
          it(name, async () => {
            const pi = await runScenario(scenario, "pi", flavor, mode, gates);
            const toolpool = await runScenario(scenario, "toolpool", flavor, mode, gates, false);
            expect(toolpool.events).toEqual([]);
            expect({ messages: toolpool.messages, terminate: toolpool.terminate }).toEqual({
              messages: pi.messages,
              terminate: pi.terminate,
            });
          });
        }
      });
    }
  }
});
