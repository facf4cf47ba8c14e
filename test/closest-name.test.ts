import { describe, expect, it } from "vitest";

import { closestName } from "./support/internals.js";

describe("closestName", () => {
  const runtimeOptions = ["tools", "pi", "toolExecution", "pool", "clock", "tracing", "fleet", "maxConcurrency"];

  it.each([
    ["confnie", ["workspace", "tools", "confine", "bash"], "confine"],
    ["pol", runtimeOptions, "pool"],
    ["Pool", runtimeOptions, "pool"],
    ["toolExecutoin", runtimeOptions, "toolExecution"],
    ["maxconcurency", runtimeOptions, "maxConcurrency"],
    ["threads", ["maxThreads", "minThreads"], "maxThreads"],
    ["tool", runtimeOptions, "tools"],
  ])("names %j's closest known name", (name, known, expected) => {
    expect(closestName(name, known)).toBe(expected);
  });

  it.each([
    ["zzzzzz", runtimeOptions],
    ["x", ["pi", "pool"]],
    ["anything", []],
  ])("names none for %j when no known name is close", (name, known) => {
    expect(closestName(name, known)).toBeUndefined();
  });

  it("takes the first of equally close names", () => {
    expect(closestName("ab", ["ac", "ad"])).toBe("ac");
  });
});
