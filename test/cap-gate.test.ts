import { describe, expect, it } from "vitest";

import { CapClaim, CapGate } from "./support/internals.js";

/** Resolves after pending promise callbacks ran. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("CapGate", () => {
  it("admits at most the cap of a key at once, the rest in their order as slots free", async () => {
    const gate = new CapGate();
    const tool = {};
    const claims = Array.from({ length: 4 }, () => new CapClaim([tool], [2]));
    const admitted: number[] = [];
    claims.forEach((claim, index) => {
      const entered = gate.enter(claim);
      if (entered === undefined) admitted.push(index);
      else void entered.then(() => admitted.push(index));
    });
    await settle();
    expect(admitted).toEqual([0, 1]);
    expect(gate.held(tool)).toBe(2);
    expect(gate.waiting).toBe(2);
    gate.leave(claims[1]!);
    await settle();
    expect(admitted).toEqual([0, 1, 2]);
    gate.leave(claims[0]!);
    gate.leave(claims[2]!);
    await settle();
    expect(admitted).toEqual([0, 1, 2, 3]);
    gate.leave(claims[3]!);
    expect(gate.held(tool)).toBe(0);
  });

  it("takes a slot of every key or none, and lets no later claim take a key a waiting claim needs", async () => {
    const gate = new CapGate();
    const [toolA, toolB, batch] = [{}, {}, {}];
    const first = new CapClaim([toolA, batch], [1, 3]);
    expect(gate.enter(first)).toBeUndefined();
    // Waits for toolA; holds nothing meanwhile, and reserves the batch's room.
    const second = new CapClaim([toolA, batch], [1, 3]);
    let isSecondIn = false;
    void gate.enter(second)?.then(() => (isSecondIn = true));
    expect(gate.held(batch)).toBe(1);
    // The batch has room, but a claim waits before it on the batch: it waits too.
    const third = new CapClaim([toolB, batch], [1, 3]);
    let isThirdIn = false;
    void gate.enter(third)?.then(() => (isThirdIn = true));
    await settle();
    expect([isSecondIn, isThirdIn]).toEqual([false, false]);
    gate.leave(first);
    await settle();
    expect([isSecondIn, isThirdIn]).toEqual([true, true]);
    expect(gate.held(batch)).toBe(2);
  });

  it("runs a nested claim in its ancestor's slot where the key is full, and gives back only its own slots", () => {
    const gate = new CapGate();
    const [tool, batch, other] = [{}, {}, {}];
    const parent = new CapClaim([tool, batch], [1, 1]);
    expect(gate.enter(parent)).toBeUndefined();
    const child = new CapClaim([tool, batch], [1, 1], parent);
    expect(gate.enter(child)).toBeUndefined();
    const grandchild = new CapClaim([other, batch], [1, 1], child);
    expect(gate.enter(grandchild)).toBeUndefined();
    expect([gate.held(tool), gate.held(batch), gate.held(other)]).toEqual([1, 1, 1]);
    gate.leave(grandchild);
    gate.leave(child);
    expect([gate.held(tool), gate.held(batch), gate.held(other)]).toEqual([1, 1, 0]);
    // Without an ancestor holding the key, a claim waits.
    const stranger = new CapClaim([tool], [1]);
    expect(gate.enter(stranger)).toBeInstanceOf(Promise);
    gate.leave(parent);
    expect(gate.held(tool)).toBe(1);
  });

  it("lends an ancestor's slot to one descendant at a time, passing it to the next waiting one as each gives it back", async () => {
    const gate = new CapGate();
    const session = {};
    const parent = new CapClaim([session], [2]);
    expect(gate.enter(parent)).toBeUndefined();
    const children = Array.from({ length: 4 }, () => new CapClaim([session], [2], parent));
    const admitted: number[] = [];
    children.forEach((child, index) => {
      const entered = gate.enter(child);
      if (entered === undefined) admitted.push(index);
      else void entered.then(() => admitted.push(index));
    });
    await settle();
    // One child in the free slot, one in the parent's: no more than the cap run at once.
    expect(admitted).toEqual([0, 1]);
    expect(gate.held(session)).toBe(2);
    expect(gate.waiting).toBe(2);
    // The child in the parent's slot gives it back: the next child gets it.
    gate.leave(children[1]!);
    await settle();
    expect(admitted).toEqual([0, 1, 2]);
    // A grandchild runs in the slot its parent runs in, one at a time as well.
    const grandchildren = [0, 1].map(() => new CapClaim([session], [2], children[2]));
    expect(gate.enter(grandchildren[0]!)).toBeUndefined();
    let isSecondGrandchildIn = false;
    void gate.enter(grandchildren[1]!)?.then(() => (isSecondGrandchildIn = true));
    await settle();
    expect(isSecondGrandchildIn).toBe(false);
    gate.leave(grandchildren[0]!);
    await settle();
    expect(isSecondGrandchildIn).toBe(true);
    gate.leave(grandchildren[1]!);
    gate.leave(children[2]!);
    await settle();
    expect(admitted).toEqual([0, 1, 2, 3]);
    gate.leave(children[3]!);
    gate.leave(children[0]!);
    gate.leave(parent);
    expect([gate.held(session), gate.waiting]).toEqual([0, 0]);
  });

  it("lets a waiting descendant be withdrawn, and passes the slot on to the one behind it", async () => {
    const gate = new CapGate();
    const tool = {};
    const parent = new CapClaim([tool], [1]);
    gate.enter(parent);
    const [first, withdrawn, behind] = [0, 1, 2].map(() => new CapClaim([tool], [1], parent));
    expect(gate.enter(first!)).toBeUndefined();
    const admits: string[] = [];
    expect(gate.tryEnter(withdrawn!, () => admits.push("withdrawn"))).toBe(false);
    expect(gate.tryEnter(behind!, () => admits.push("behind"))).toBe(false);
    expect(gate.waitingClaims()).toEqual([withdrawn, behind]);
    expect(gate.withdraw(withdrawn!)).toBe(true);
    expect(admits).toEqual([]);
    gate.leave(first!);
    expect(admits).toEqual(["behind"]);
    expect(gate.held(tool)).toBe(1);
  });

  it("lets a nested claim pass claims that wait on a slot its ancestor holds", () => {
    const gate = new CapGate();
    const [session, tool] = [{}, {}];
    const parent = new CapClaim([session], [1]);
    expect(gate.enter(parent)).toBeUndefined();
    // Another batch of the session waits for the session's slot, reserving the tool too.
    const waiting = new CapClaim([tool, session], [1, 1]);
    expect(gate.enter(waiting)).toBeInstanceOf(Promise);
    // The parent's child needs the tool: waiting behind `waiting` would wait on the parent.
    const child = new CapClaim([tool, session], [1, 1], parent);
    expect(gate.enter(child)).toBeUndefined();
  });

  it("admits the claims behind a withdrawn one", () => {
    const gate = new CapGate();
    const [toolA, toolB] = [{}, {}];
    const holder = new CapClaim([toolA], [1]);
    gate.enter(holder);
    const blocked = new CapClaim([toolA, toolB], [1, 1]);
    const admits: string[] = [];
    expect(gate.tryEnter(blocked, () => admits.push("blocked"))).toBe(false);
    const behind = new CapClaim([toolB], [1]);
    expect(gate.tryEnter(behind, () => admits.push("behind"))).toBe(false);
    expect(gate.withdraw(blocked)).toBe(true);
    expect(admits).toEqual(["behind"]);
    expect(gate.withdraw(blocked)).toBe(false);
  });

  it("forgets the keys of finished claims, so that one key per batch does not pile up", () => {
    const gate = new CapGate();
    const tool = {};
    const held = new CapClaim([tool], [1_000]);
    gate.enter(held);
    for (let batch = 0; batch < 1_000; batch++) {
      const claim = new CapClaim([tool, {}], [1_000, 1]);
      expect(gate.enter(claim)).toBeUndefined();
      gate.leave(claim);
    }
    expect(gate.trackedKeys).toBeLessThanOrEqual(2 * 65 + 1);
    expect(gate.held(tool)).toBe(1);
  });
});
