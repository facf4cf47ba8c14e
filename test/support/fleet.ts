import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { builtCliPath } from "./build-paths.js";

const cli = builtCliPath;

/**
 * Short lock and stall settings, only for the node a test kills (and the
 * checks that must notice it): a lost node is noticed within ~2 s (lock + 2 ×
 * stall + 1 s at most).
 */
export const testLockMs = 1_000;
export const testStalledMs = 500;

/** `startNode`'s settings for the node a test kills. */
export const losableNode = { lockMs: testLockMs, stalledMs: testStalledMs } as const;

/** The fleet issue's bound on noticing a lost node of `losableNode`'s settings. */
export const nodeLossBoundMs = testLockMs + 2 * testStalledMs + 1_000;

/**
 * Lock and stall settings for every node and coordinator that a test does not
 * lose on purpose (`startNode`'s default): with `maxStalledCount: 0`, a node
 * starved for a second (a busy CI machine) would lose its lock and its call as
 * TP_ERR_NODE_LOST under the short settings, and a starved coordinator's
 * presence key (it lives lock + 2 × stall) would lapse, so that its nodes stop
 * its calls.
 */
export const steadyLockMs = 8_000;
export const steadyStalledMs = 4_000;

/** A coordinator's fleet settings to match the steady nodes'. */
export const steadyCoordinator = { lockDurationMs: steadyLockMs, stalledIntervalMs: steadyStalledMs } as const;

/**
 * A coordinator's fleet settings when it must notice a lost node soon: its
 * stalled checker looks every `testStalledMs / 2`, while its presence key
 * (lock + 2 × stall) still survives a starved second or two. The lost node's
 * own lock is the short one (`startNode({ lockMs: testLockMs, stalledMs: testStalledMs })`).
 */
export const watchfulCoordinator = { lockDurationMs: steadyLockMs, stalledIntervalMs: testStalledMs } as const;

/** A `toolpool node` child process. */
export interface TestNode {
  readonly name: string;
  readonly process: ChildProcess;
  /** The `node ready …` line it printed. */
  readonly readyLine: string;
  /** Resolves with the exit code (null after a signal). */
  readonly exited: Promise<number | null>;
  /** stderr so far. */
  stderr(): string;
  kill(signal?: NodeJS.Signals): void;
}

export interface NodeSpec {
  redis: string;
  tools: URL;
  name: string;
  threads?: number;
  concurrency?: number;
  /** `--pi`; absent, the node's default. */
  pi?: "0.73" | "1.6";
  env?: Record<string, string>;
  /** `--lock-duration`; @default steadyLockMs */
  lockMs?: number;
  /** `--stalled-interval`; @default steadyStalledMs */
  stalledMs?: number;
}

/** Starts `toolpool node` and resolves once it printed its `node ready` line. */
export function startNode(spec: NodeSpec): Promise<TestNode> {
  const args = [
    cli,
    "node",
    "--redis",
    spec.redis,
    "--tools",
    fileURLToPath(spec.tools),
    "--threads",
    String(spec.threads ?? 1),
    "--name",
    spec.name,
    "--lock-duration",
    String(spec.lockMs ?? steadyLockMs),
    "--stalled-interval",
    String(spec.stalledMs ?? steadyStalledMs),
    ...(spec.concurrency === undefined ? [] : ["--concurrency", String(spec.concurrency)]),
    ...(spec.pi === undefined ? [] : ["--pi", spec.pi]),
  ];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...spec.env } });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      if (!line.startsWith("node ready")) return;
      resolve({
        name: spec.name,
        process: child,
        readyLine: line,
        exited,
        stderr: () => stderr,
        kill: (signal = "SIGKILL") => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        },
      });
    });
    void exited.then((code) => reject(new Error(`node ${spec.name} exited with ${code} before it was ready: ${stderr}`)));
  });
}

/** Kills nodes and waits for them to be gone. */
export async function stopNodes(nodes: readonly TestNode[]): Promise<void> {
  await Promise.all(
    nodes.map(async (node) => {
      node.kill("SIGKILL");
      await node.exited;
    }),
  );
}
