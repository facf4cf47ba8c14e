import { describe, expect, it } from "vitest";

import { CallQueue, type QueuedCall } from "./support/internals.js";

let nextSeq = 0;
const task = (session: string, cost = 1, enqueuedAt = 0): QueuedCall => ({ seq: ++nextSeq, session, cost, enqueuedAt });
const labelOf = (call: QueuedCall | null) => `${String(call?.session)}${call?.seq}`;
/** Shifts until the queue is empty, as the pool does while threads are free. */
const drain = (queue: CallQueue) => {
  const order: string[] = [];
  for (let entry = queue.shift(); entry !== null; entry = queue.shift()) order.push(labelOf(entry));
  return order;
};
const newQueue = () => new CallQueue({ now: () => 100 });

describe("CallQueue", () => {
  it("gives sessions turns, one call each, in order of arrival; a session's calls in their order", () => {
    nextSeq = 0;
    const queue = newQueue();
    for (const session of ["a", "a", "a", "a", "b", "b", "c", "c"]) queue.push(task(session));
    expect(queue.size).toBe(8);
    expect(queue.sessionsWaiting).toBe(3);
    expect(drain(queue)).toEqual(["a1", "b5", "c7", "a2", "b6", "c8", "a3", "a4"]);
    expect(queue.size).toBe(0);
  });

  it("lets a call of cost 3 use three turns of its session's share", () => {
    nextSeq = 0;
    const queue = newQueue();
    for (let i = 0; i < 3; i++) queue.push(task("h", 3));
    for (let i = 0; i < 9; i++) queue.push(task("l", 1));
    const order = drain(queue);
    // Between two heavy calls the light session starts three calls.
    const heavyAt = order.flatMap((label, index) => (label.startsWith("h") ? [index] : []));
    expect(heavyAt).toHaveLength(3);
    expect(heavyAt[1]! - heavyAt[0]! - 1).toBe(3);
    expect(heavyAt[2]! - heavyAt[1]! - 1).toBe(3);
    expect(order.filter((label) => label.startsWith("l"))).toEqual(["l4", "l5", "l6", "l7", "l8", "l9", "l10", "l11", "l12"]);
  });

  it("never lets a flood starve a session that arrives later", () => {
    nextSeq = 0;
    const queue = newQueue();
    for (let i = 0; i < 1_000; i++) queue.push(task("flood"));
    expect(labelOf(queue.shift())).toBe("flood1");
    queue.push(task("light"));
    // The flood keeps its turn at most once more, then the light session's call starts.
    const next = [labelOf(queue.shift()), labelOf(queue.shift())];
    expect(next).toContain("light1001");
  });

  it("is work-conserving: while calls may start, a shift always returns one", () => {
    nextSeq = 0;
    const queue = newQueue();
    let state = 7;
    const random = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    let pushed = 0;
    let shifted = 0;
    for (let step = 0; step < 5_000; step++) {
      if (random() < 0.55) {
        queue.push(task(`s${Math.floor(random() * 7)}`, 1 + Math.floor(random() * 4)));
        pushed += 1;
      } else if (queue.size > 0) {
        expect(queue.shift()).not.toBeNull();
        shifted += 1;
      } else {
        expect(queue.shift()).toBeNull();
      }
    }
    shifted += drain(queue).length;
    expect(shifted).toBe(pushed);
  });

  it("undoes a shift the pool hands back, so a refusal costs no session its turn", () => {
    nextSeq = 0;
    const queue = newQueue();
    for (const session of ["a", "a", "b", "b"]) queue.push(task(session));
    const first = queue.shift();
    queue.unshift(first!);
    expect(drain(queue)).toEqual(["a1", "b3", "a2", "b4"]);
    // With costs, a refused shift that passed over lines leaves no credit behind.
    const costs = [
      ["h", 3],
      ["l", 1],
      ["l", 1],
      ["h", 3],
    ] as const;
    const costly = newQueue();
    for (const [session, cost] of costs) costly.push(task(session, cost));
    const reference = newQueue();
    nextSeq = 0;
    for (const [session, cost] of costs) reference.push(task(session, cost));
    const expected = drain(reference);
    const order: string[] = [];
    for (let entry = costly.shift(); entry !== null; entry = costly.shift()) {
      costly.unshift(entry);
      entry = costly.shift()!;
      order.push(labelOf(entry).replace(/\d+$/, (n) => String(Number(n) - 4)));
    }
    expect(order).toEqual(expected);
    // A call never shifted (the pool's direct path) counts as a new arrival.
    queue.push(task("a"));
    const fresh = task("c");
    queue.unshift(fresh);
    expect(drain(queue)).toEqual(["a5", "c6"]);
  });

  it("takes a waiting call out, and reports the longest wait", () => {
    nextSeq = 0;
    const queue = newQueue();
    const early = task("a", 1, 40);
    const late = task("b", 1, 90);
    queue.push(early);
    queue.push(late);
    expect(queue.longestWaitMs()).toBe(60);
    expect(queue.take(early)).toBe(true);
    expect(queue.take(early)).toBe(false);
    expect(queue.longestWaitMs()).toBe(10);
    expect(drain(queue)).toEqual(["b2"]);
    expect(queue.longestWaitMs()).toBe(0);
  });
});
