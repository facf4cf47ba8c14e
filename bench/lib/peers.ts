/**
 * The peer worker pools measured beside toolpool: tinypool and workerpool.
 * Both are optional (devDependencies): a pool whose package is missing is
 * left out, with a note in the report, and every suite runs without it.
 */
import type { Tinypool as TinypoolClass } from "tinypool";
import type workerpoolModule from "workerpool";

import { logStep } from "./progress.js";

/** The smallest interface of a pool that the suites drive. */
export interface PeerPool {
  /** Runs one task; `task` is handed to the worker's function. */
  run: (task: unknown) => Promise<unknown>;
  close: () => Promise<void>;
}

export interface Peers {
  tinypool: typeof TinypoolClass | undefined;
  workerpool: typeof workerpoolModule | undefined;
  versions: Record<string, string>;
  /** One line per peer that is missing. */
  notes: string[];
}

let loaded: Promise<Peers> | undefined;

/** Imports the peers that are installed; the same answer every time. */
export function loadPeers(): Promise<Peers> {
  loaded ??= (async () => {
    const peers: Peers = { tinypool: undefined, workerpool: undefined, versions: {}, notes: [] };
    try {
      peers.tinypool = (await import("tinypool")).Tinypool;
      peers.versions.tinypool = await packageVersion("tinypool");
    } catch (error) {
      peers.notes.push(`tinypool is not installed (${errorCode(error)}): its rows are left out; \`npm install\` adds it.`);
    }
    try {
      peers.workerpool = (await import("workerpool")).default;
      peers.versions.workerpool = await packageVersion("workerpool");
    } catch (error) {
      peers.notes.push(`workerpool is not installed (${errorCode(error)}): its rows are left out; \`npm install\` adds it.`);
    }
    for (const note of peers.notes) logStep(note);
    return peers;
  })();
  return loaded;
}

/** A tinypool running the default export of `module`, sized like the others. */
export function createTinypool(Tinypool: typeof TinypoolClass, module: URL, threads: number, idleTimeout: number): PeerPool {
  const pool = new Tinypool({ filename: module.href, minThreads: threads, maxThreads: threads, idleTimeout, isolateWorkers: false });
  return { run: (task) => pool.run(task) as Promise<unknown>, close: () => pool.destroy() };
}

const workerpoolScript = new URL("../tools/workerpool-worker.js", import.meta.url);

/** A workerpool of threads calling `method` of bench/tools/workerpool-worker.ts. */
export function createWorkerpool(workerpool: typeof workerpoolModule, method: string, threads: number): PeerPool {
  const pool = workerpool.pool(workerpoolScript.pathname, { minWorkers: threads, maxWorkers: threads, workerType: "thread" });
  return {
    run: (task) => pool.exec(method, [task]) as unknown as Promise<unknown>,
    close: async () => {
      await pool.terminate();
    },
  };
}

async function packageVersion(name: string): Promise<string> {
  const { readFile } = await import("node:fs/promises");
  // Walk up from the resolved entry to the package's own package.json.
  let url = new URL(".", import.meta.resolve(name));
  for (let depth = 0; depth < 4; depth++) {
    try {
      const manifest = JSON.parse(await readFile(new URL("package.json", url), "utf8")) as { name?: string; version?: string };
      if (manifest.name === name) return manifest.version ?? "unknown";
    } catch {
      // not here; one level up
    }
    url = new URL("..", url);
  }
  return "unknown";
}

function errorCode(error: unknown): string {
  return String((error as { code?: unknown } | null)?.code ?? error);
}
