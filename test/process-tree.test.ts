import { once } from "node:events";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

import { afterAll, describe, expect, it } from "vitest";

import { markedProcesses, sleepers } from "./support/processes.js";
import { builtCodingToolsUrl } from "./support/build-paths.js";

const dist = builtCodingToolsUrl;
const bashThread = new URL("./fixtures/coding/bash-thread.mjs", import.meta.url);
const nestedBash = fileURLToPath(new URL("./fixtures/coding/nested-bash.mjs", import.meta.url));

/** A worker thread running `command` as a bash call, once the command has written "started". */
async function startBashThread(command: string): Promise<{ worker: Worker; prefix: string }> {
  const worker = new Worker(bashThread, { workerData: { command, cwd: tmpdir() } });
  const [message] = (await once(worker, "message")) as [string];
  expect(message).toBe("started");
  const { threadMarkerPrefix } = await import(new URL("process-tree.js", dist).href);
  return { worker, prefix: threadMarkerPrefix(worker.threadId) };
}

/** `text` as one bash word, expanded to nothing else. */
const shellQuoted = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

// A child that setsid's away, a double fork, and a shell still running.
const escaping = "setsid sleep 1000 & ( sleep 1000 & ); echo started; sleep 1000";

describe.skipIf(process.platform !== "linux")("sweepThreadProcesses", () => {
  afterAll(async () => {
    const { killMarkedProcessesSync } = await import(new URL("process-tree.js", dist).href);
    killMarkedProcessesSync(`${process.pid}:`);
  });

  it("ends what a terminated worker thread's bash calls left running, only that thread's, and only once sweeps are enabled", async () => {
    const { sweepThreadProcesses, enableProcessSweeps } = await import(new URL("process-tree.js", dist).href);
    const first = await startBashThread(escaping);
    const second = await startBashThread(escaping);
    try {
      // The shell, the setsid'd sleep and the double-forked one, at least.
      expect(markedProcesses(first.prefix).length).toBeGreaterThanOrEqual(3);
      expect(markedProcesses(second.prefix).length).toBeGreaterThanOrEqual(3);

      const firstId = first.worker.threadId;
      await first.worker.terminate();
      // The thread is gone, its processes are not: they are the process's, not the thread's.
      expect(markedProcesses(first.prefix).length).toBeGreaterThanOrEqual(3);
      // A process whose runtime never enabled sweeps (no codingTools with bash) reads no /proc.
      await sweepThreadProcesses(firstId);
      expect(markedProcesses(first.prefix).length).toBeGreaterThanOrEqual(3);

      enableProcessSweeps();
      await sweepThreadProcesses(firstId);
      expect(markedProcesses(first.prefix)).toEqual([]);
      // The other thread's call runs on.
      expect(markedProcesses(second.prefix).length).toBeGreaterThanOrEqual(3);

      const secondId = second.worker.threadId;
      await second.worker.terminate();
      await sweepThreadProcesses(secondId);
      expect(markedProcesses(second.prefix)).toEqual([]);
    } finally {
      await Promise.all([first.worker.terminate(), second.worker.terminate()]);
    }
  }, 60_000);

  it("ends the calls of a toolpool run from a bash call: they carry the outer call's marker after their own", async () => {
    const { sweepThreadProcesses, enableProcessSweeps } = await import(new URL("process-tree.js", dist).href);
    enableProcessSweeps();
    // The inner call's sleep leaves the inner shell's group, which itself is not in the outer call's group.
    // It says "started" once the sleep runs (at most 500 looks at it).
    const inner =
      "setsid sleep 1000.75 & for _ in $(seq 1 500); do [ \"$(tr '\\0' ' ' < /proc/$!/cmdline)\" = 'sleep 1000.75 ' ] && break; sleep 0.01; done; echo started; sleep 1000";
    const outer = await startBashThread([process.execPath, nestedBash, inner].map(shellQuoted).join(" "));
    try {
      expect(sleepers("1000.75")).toHaveLength(1);
      expect(markedProcesses(outer.prefix)).toEqual(expect.arrayContaining(sleepers("1000.75")));
      const outerId = outer.worker.threadId;
      await outer.worker.terminate();
      await sweepThreadProcesses(outerId);
      expect(markedProcesses(outer.prefix)).toEqual([]);
      expect(sleepers("1000.75")).toEqual([]);
    } finally {
      await outer.worker.terminate();
      for (const pid of sleepers("1000.75")) process.kill(pid, "SIGKILL");
    }
  }, 60_000);
});
