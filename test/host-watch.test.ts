// How a spawn helper tells its host's death from its thread's end (host-watch.ts): by the host's
// process number and start time, a zombie counting as gone; by its number alone where /proc cannot
// be read, and never gone only because its start time cannot be read.
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";

import { builtCodingToolsUrl, hasHostEnded, isHostGone, watchHost } from "./support/built.js";

/** A stat line of a process in `state`, started at `startTime`, its command name holding a space and a ")". */
const statLine = (pid: number, state: string, startTime: string) =>
  `${pid} (a) b) ${state} ${Array.from({ length: 18 }, (_, i) => i + 1).join(" ")} ${startTime} 0 0\n`;

async function startSleeper() {
  const host = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  await once(host, "spawn");
  return host;
}

/** Whether this machine lets a process hide /proc behind an empty file system in a mount namespace of its own. */
const canHideProc =
  process.platform === "linux" && spawnSync("unshare", ["-m", "sh", "-c", "mount -t tmpfs none /proc && test ! -e /proc/self"]).status === 0;

describe("host watch", () => {
  it("sees a running process as there, and the same process killed by a signal as gone", async () => {
    const host = await startSleeper();
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

  it("knows a host by its number alone when its stat cannot be read: running is there, ended is gone", async () => {
    const host = await startSleeper();
    const watched = watchHost(host.pid!, () => undefined);
    expect(watched.startTime).toBeUndefined();
    expect(isHostGone(watched)).toBe(false);
    expect(await hasHostEnded(watched, 50)).toBe(false);
    host.kill("SIGKILL");
    await once(host, "exit");
    expect(isHostGone(watched)).toBe(true);
  });

  it("sees its host's number taken by a process started at another time, or a zombie, as gone, as its stat says", async () => {
    const host = await startSleeper();
    try {
      let stat = statLine(host.pid!, "S", "1000");
      const watched = watchHost(host.pid!, () => stat);
      expect(watched.startTime).toBe("1000");
      expect(isHostGone(watched)).toBe(false);
      stat = statLine(host.pid!, "S", "2000");
      expect(isHostGone(watched)).toBe(true);
      stat = statLine(host.pid!, "Z", "1000");
      expect(isHostGone(watched)).toBe(true);
      // Unreadable now: the running process that holds the number is the host.
      stat = undefined as unknown as string;
      expect(isHostGone(watched)).toBe(false);
    } finally {
      host.kill("SIGKILL");
    }
  });

  it.skipIf(!canHideProc)(
    "where /proc cannot be read, sees its running host as there, and a bash call outlives the helper's polls of its host",
    async () => {
      const run = spawn(
        "unshare",
        [
          "-m",
          "sh",
          "-c",
          'mount -t tmpfs none /proc && exec "$0" "$@"',
          process.execPath,
          fileURLToPath(new URL("./fixtures/coding/no-proc-host.mjs", import.meta.url)),
          builtCodingToolsUrl.href,
        ],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      let output = "";
      run.stdout.on("data", (data: Buffer) => {
        output += data;
      });
      await once(run, "close");
      expect(JSON.parse(output)).toEqual({ hasProc: false, isSelfGone: false, code: 0, signal: null, stdout: "done\n" });
    },
    60_000,
  );
});
