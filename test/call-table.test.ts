import { describe, expect, it } from "vitest";

import { CallTable } from "./support/internals.js";

const call = (seq: number) => ({ seq });

describe("CallTable", () => {
  it("finds, counts and removes calls by number", () => {
    const table = new CallTable<{ seq: number }>();
    const calls = [1, 2, 3].map(call);
    for (const each of calls) table.add(each);
    expect(table.size).toBe(3);
    expect(table.get(2)).toBe(calls[1]);
    expect(table.get(4)).toBeUndefined();
    expect(table.delete(2)).toBe(true);
    expect(table.delete(2)).toBe(false);
    expect(table.get(2)).toBeUndefined();
    expect(table.size).toBe(2);
    expect(table.inOrder().map((each) => each.seq)).toEqual([1, 3]);
  });

  it("keeps calls whose numbers share a slot (one far behind the others), and tells them apart", () => {
    const table = new CallTable<{ seq: number }>();
    const old = call(5);
    table.add(old);
    // 64 and 128 numbers later: the same slot of a 64-slot array, and of a 128-slot one.
    const later = [call(5 + 64), call(5 + 128)];
    for (const each of later) table.add(each);
    expect(table.get(5)).toBe(old);
    expect(table.get(69)).toBe(later[0]);
    expect(table.get(133)).toBe(later[1]);
    expect(table.delete(69)).toBe(true);
    expect(table.get(69)).toBeUndefined();
    expect(table.get(133)).toBe(later[1]);
    expect(table.inOrder().map((each) => each.seq)).toEqual([5, 133]);
  });

  it("grows past its first size and shrinks back, losing no call", () => {
    const table = new CallTable<{ seq: number }>();
    const seqs = Array.from({ length: 1_000 }, (_, index) => index * 3 + 1);
    for (const seq of seqs) table.add(call(seq));
    expect(table.size).toBe(1_000);
    for (const seq of seqs) expect(table.get(seq)?.seq).toBe(seq);
    for (const seq of seqs.slice(0, 990)) expect(table.delete(seq)).toBe(true);
    expect(table.size).toBe(10);
    expect(table.inOrder().map((each) => each.seq)).toEqual(seqs.slice(990));
    expect([...table.values()].length).toBe(10);
  });

  it("shrinks after a burst, and keeps its size while batches come and go", () => {
    const table = new CallTable<{ seq: number }>();
    for (let seq = 1; seq <= 10_000; seq++) table.add(call(seq));
    expect(table.slots).toBeGreaterThanOrEqual(20_000);
    for (let seq = 1; seq <= 9_990; seq++) table.delete(seq);
    expect(table.slots).toBe(1_024);
    let seq = 10_000;
    const sizes: number[] = [];
    for (let batch = 0; batch < 3; batch++) {
      const added = Array.from({ length: 64 }, () => call(++seq));
      for (const each of added) table.add(each);
      for (const each of added) table.delete(each.seq);
      sizes.push(table.slots);
    }
    expect(sizes).toEqual([1_024, 1_024, 1_024]);
    expect(table.size).toBe(10);
  });

  it("lists numbers that wrapped around after the ones before the wrap", () => {
    const table = new CallTable<{ seq: number }>();
    for (const seq of [0x7fff_fffe, 0x7fff_ffff, 1, 2]) table.add(call(seq));
    expect(table.inOrder().map((each) => each.seq)).toEqual([0x7fff_fffe, 0x7fff_ffff, 1, 2]);
  });
});
