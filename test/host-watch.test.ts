// How a spawn helper tells its host's death from its thread's end (host-watch.ts): by the host's
// process number and start time, a zombie counting as gone.
import { spawn } from "node:child_process";
import { once } from "node:events";

import { describe, expect, it } from "vitest";

import { hasHostEnded, isHostGone, watchHost } from "./support/internals.js";

describe("host watch", () => {
  it("sees a running process as there, and the same process killed by a signal as gone", async () => {
    const host = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    await once(host, "spawn");
    const watched = watchHost(host.pid!);
    expect(isHostGone(watched)).toBe(false);
    // Still running at the bound: a thread ended, not its host.
    expect(await hasHostEnded(watched, 50)).toBe(false);
    host.kill("SIGKILL");
    await once(host, "exit");
    expect(isHostGone(watched)).toBe(true);
    expect(await hasHostEnded(watched, 10_000)).toBe(true);
  });

  it.skipIf(process.platform !== "linux")("sees a killed process that its parent has not reaped yet (a zombie) as gone", async () => {
    // The shell starts a sleep it never waits for, then prints the sleep's number and stays.
    const parent = spawn("sh", ["-c", "sleep 60 & echo $!; exec sleep 60"], { stdio: ["ignore", "pipe", "ignore"] });
    const [line] = (await once(parent.stdout, "data")) as [Buffer];
    const watched = watchHost(Number(line.toString().trim()));
    expect(isHostGone(watched)).toBe(false);
    process.kill(watched.pid, "SIGKILL");
    expect(await hasHostEnded(watched, 10_000)).toBe(true);
    parent.kill("SIGKILL");
  });

  it("sees a process that was never there as gone", () => {
    expect(isHostGone(watchHost(2 ** 22 + 1))).toBe(true);
  });
});
