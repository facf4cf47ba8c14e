import { describe, expect, it } from "vitest";

import { BusyWindow } from "./support/internals.js";

describe("BusyWindow (a pool's utilization)", () => {
  it("splits an ended call over the seconds it ran in", () => {
    const window = new BusyWindow(0);
    window.addRun(500, 2500, 2500);
    expect(window.utilization(3000, 1, [])).toBeCloseTo(2000 / 3000, 10);
    expect(window.utilization(3000, 2, [])).toBeCloseTo(2000 / 6000, 10);
  });

  it("counts running calls from their start or the window's, whichever is later", () => {
    const window = new BusyWindow(0);
    expect(window.utilization(4000, 2, [1000, 3000])).toBeCloseTo((3000 + 1000) / 8000, 10);
    expect(window.utilization(30_000, 1, [0])).toBe(1);
  });

  it("forgets what ended before the last 10 seconds", () => {
    const window = new BusyWindow(0);
    window.addRun(0, 20_000, 20_000);
    expect(window.utilization(20_000, 1, [])).toBe(1);
    expect(window.utilization(25_000, 1, [])).toBeCloseTo(5000 / 10_000, 10);
    expect(window.utilization(31_000, 1, [])).toBe(0);
  });
});
