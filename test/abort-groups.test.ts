import { describe, expect, it } from "vitest";

import { AbortGroups } from "./support/internals.js";

/** Groups of string members, and the members they told of an abort, in order. */
function recordingGroups() {
  const told: string[] = [];
  return { told, groups: new AbortGroups<string>((member) => told.push(member)) };
}

describe("AbortGroups", () => {
  it("tells every member of an aborted signal, and only those", () => {
    const { told, groups } = recordingGroups();
    const first = new AbortController();
    const second = new AbortController();
    groups.add(first.signal, "a");
    groups.add(first.signal, "b");
    groups.add(second.signal, "c");
    expect(groups.size).toBe(2);
    first.abort();
    expect(told).toEqual(["a", "b"]);
    expect(groups.size).toBe(1);
  });

  it("lets go of a signal once its last member has left", () => {
    const { told, groups } = recordingGroups();
    const controller = new AbortController();
    groups.add(controller.signal, "a");
    groups.add(controller.signal, "b");
    groups.delete(controller.signal, "a");
    expect(groups.size).toBe(1);
    groups.delete(controller.signal, "b");
    expect(groups.size).toBe(0);
    controller.abort();
    expect(told).toEqual([]);
  });

  it("tells a member of a signal aborted already at once", () => {
    const { told, groups } = recordingGroups();
    groups.add(AbortSignal.abort(), "late");
    expect(told).toEqual(["late"]);
    expect(groups.size).toBe(0);
  });
});

describe("AbortGroups, in order", () => {
  it("tells the members of an aborted signal in the order they joined, whoever left between", () => {
    const { told, groups } = recordingGroups();
    const controller = new AbortController();
    for (const member of ["a", "b", "c"]) groups.add(controller.signal, member);
    groups.delete(controller.signal, "a");
    groups.add(controller.signal, "d");
    controller.abort();
    expect(told).toEqual(["b", "c", "d"]);
    expect(groups.size).toBe(0);
  });

  it("keeps a lone member's signal until it leaves, and listens to nothing afterwards", () => {
    const { told, groups } = recordingGroups();
    const controller = new AbortController();
    groups.add(controller.signal, "only");
    groups.delete(controller.signal, "someone else");
    expect(groups.size).toBe(1);
    groups.delete(controller.signal, "only");
    expect(groups.size).toBe(0);
    groups.add(controller.signal, "again");
    controller.abort();
    expect(told).toEqual(["again"]);
  });
});
