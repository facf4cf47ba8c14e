import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { Worker } from "node:worker_threads";

import { describe, expect, it } from "vitest";

const dist = new URL("../dist/tools/coding/", import.meta.url);
const bashThread = new URL("./fixtures/coding/bash-thread.mjs", import.meta.url);

/**
 * The live processes whose environment holds a bash call marker starting
 * with `prefix`, read straight from /proc. Zombies (exited, not yet reaped)
 * have no environment, so they are not counted.
 */
function marked(prefix: string): number[] {
  const needle = Buffer.from(`TOOLPOOL_BASH_CALL=${prefix}`);
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`).includes(needle)) found.push(Number(name));
    } catch {}
  }
  return found;
}

/** A worker thread running `command` as a bash call, once the command has written "started". */
async function startBashThread(command: string): Promise<{ worker: Worker; prefix: string }> {
  const worker = new Worker(bashThread, { workerData: { command, cwd: tmpdir() } });
  const [message] = (await once(worker, "message")) as [string];
  expect(message).toBe("started");
  return { worker, prefix: `${process.pid}:${worker.threadId}:` };
}

// A child that setsid's away, a double fork, and a shell still running.
const escaping = "setsid sleep 1000 & ( sleep 1000 & ); echo started; sleep 1000";

describe.skipIf(process.platform !== "linux")("sweepThreadProcesses", () => {
  it("ends what a terminated worker thread's bash calls left running, only that thread's, and only once sweeps are enabled", async () => {
    const { sweepThreadProcesses, enableProcessSweeps } = await import(new URL("process-tree.js", dist).href);
    const first = await startBashThread(escaping);
    const second = await startBashThread(escaping);
    try {
      // The shell, the setsid'd sleep and the double-forked one, at least.
      expect(marked(first.prefix).length).toBeGreaterThanOrEqual(3);
      expect(marked(second.prefix).length).toBeGreaterThanOrEqual(3);

      const firstId = first.worker.threadId;
      await first.worker.terminate();
      // The thread is gone, its processes are not: they are the process's, not the thread's.
      expect(marked(first.prefix).length).toBeGreaterThanOrEqual(3);
      // A process whose runtime never enabled sweeps (no codingTools with bash) reads no /proc.
      await sweepThreadProcesses(firstId);
      expect(marked(first.prefix).length).toBeGreaterThanOrEqual(3);

      enableProcessSweeps();
      await sweepThreadProcesses(firstId);
      expect(marked(first.prefix)).toEqual([]);
      // The other thread's call runs on.
      expect(marked(second.prefix).length).toBeGreaterThanOrEqual(3);

      const secondId = second.worker.threadId;
      await second.worker.terminate();
      await sweepThreadProcesses(secondId);
      expect(marked(second.prefix)).toEqual([]);
    } finally {
      await Promise.all([first.worker.terminate(), second.worker.terminate()]);
      const { killMarkedProcessesSync } = await import(new URL("process-tree.js", dist).href);
      killMarkedProcessesSync(`${process.pid}:`);
    }
  }, 60_000);
});
