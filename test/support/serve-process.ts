import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(ROOT, "dist", "cli", "main.js");

/** A `toolpool` process started by {@link spawnToolpool}. */
export interface ToolpoolProcess {
  child: ChildProcess;
  /** What it has written to stderr so far. */
  stderr: () => string;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
}

/**
 * Spawns `toolpool ARGS` (the built CLI) from the repository root, its
 * stdout piped for the caller and its stderr collected. A token in the
 * developer's environment never leaks into a test that sets none. The child
 * goes into `children`, for the test file to kill.
 */
export function spawnToolpool(
  args: readonly string[],
  { env = {}, children, stdin = "ignore" }: { env?: Record<string, string>; children: ChildProcess[]; stdin?: "ignore" | "pipe" },
): ToolpoolProcess {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, TOOLPOOL_TOKEN: "", ...env },
    stdio: [stdin, "pipe", "pipe"],
  });
  children.push(child);
  const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return { child, stderr: () => stderr, exited };
}

/** A `toolpool serve` process that has printed where it listens. */
export interface ServeProcess extends ToolpoolProcess {
  url: string;
  port: number;
}

/**
 * Spawns `toolpool serve ARGS` ({@link spawnToolpool}) and resolves once it
 * prints `listening on URL`; rejects, with its stderr, if it exits first.
 */
export async function spawnServe(args: string[], env: Record<string, string>, children: ChildProcess[]): Promise<ServeProcess> {
  // A free port unless the test names one: suites run at once on one machine (CI runs two Nodes together).
  const portArgs = args.includes("--port") ? [] : ["--port", "0"];
  const { child, stderr, exited } = spawnToolpool(["serve", ...portArgs, ...args], { env, children });
  const lines = createInterface({ input: child.stdout! });
  const first = await Promise.race([
    once(lines, "line").then(([line]) => line as string),
    exited.then(([code]) => {
      throw new Error(`toolpool serve exited with ${code} before listening: ${stderr()}`);
    }),
  ]);
  const match = /^listening on (http:\/\/127\.0\.0\.1:(\d+))$/.exec(first);
  if (match === null) throw new Error(`toolpool serve printed ${JSON.stringify(first)} instead of where it listens`);
  return { child, url: match[1]!, port: Number(match[2]), stderr, exited };
}
