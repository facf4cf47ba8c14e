import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Redis } from "ioredis";

/** A redis-server of a test file's own, on a free loopback port. */
export interface TestRedis {
  readonly url: string;
  readonly port: number;
  /** A client for the test's own looks (commandstats, keys). */
  client(): Redis;
  /** Stops the server (SIGKILL: nothing to save). */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  /** Freezes the server (SIGSTOP): connections stay open, nothing answers. */
  pause(): void;
  /** Lets a paused server go on (SIGCONT). */
  resume(): void;
  /** Stops it for good and removes its directory. */
  dispose(): Promise<void>;
}

/** Whether redis-server is installed; with CI=true its absence is a failure, not a skip. */
export function hasRedisServer(): boolean {
  const found = spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
  if (!found && process.env.CI === "true") throw new Error("redis-server is not installed: CI must install it (see .ci/run)");
  if (!found) console.warn("\n*** redis-server is not installed: the fleet tests are SKIPPED (apt-get install redis-server) ***\n");
  return found;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function waitForPong(port: number, child: ChildProcess): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    const client = new Redis({ port, host: "127.0.0.1", lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on("error", () => {});
    try {
      await client.connect();
      if ((await client.ping()) === "PONG") return;
    } catch {
      // not listening yet
    } finally {
      client.disconnect();
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`redis-server on port ${port} did not answer`);
}

/** Starts redis-server on a free port (retrying a port lost to a race), with no persistence. */
export async function startRedis(): Promise<TestRedis> {
  const dir = mkdtempSync(join(tmpdir(), "toolpool-redis-"));
  let child: ChildProcess | undefined;
  let port = 0;
  const clients: Redis[] = [];
  const launch = async (): Promise<void> => {
    child = spawn(
      "redis-server",
      ["--bind", "127.0.0.1", "--port", String(port), "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction", "--dir", dir],
      { stdio: "ignore" },
    );
    await waitForPong(port, child);
  };
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    try {
      await launch();
      break;
    } catch (error) {
      child?.kill("SIGKILL");
      if (attempt >= 9) throw error;
    }
  }
  const stop = async () => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill("SIGKILL");
    await exited;
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    client() {
      const client = new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: null });
      client.on("error", () => {});
      clients.push(client);
      return client;
    },
    stop: async () => {
      await stop();
    },
    pause: () => {
      child?.kill("SIGSTOP");
    },
    resume: () => {
      child?.kill("SIGCONT");
    },
    restart: async () => {
      await stop();
      await launch();
    },
    dispose: async () => {
      for (const client of clients) client.disconnect();
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
