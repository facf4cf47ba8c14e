// The command line as users run it: the built bin, in a child process.
import { execFile } from "node:child_process";

import { builtCliPath } from "./build-paths.js";

/** How a run of the CLI ended: its exit code (0 on success), stdout and stderr. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Where and how `runCli` runs the CLI. */
export interface CliRunOptions {
  /** The working folder. @default the test process's */
  cwd?: string;
  /** Set in its environment, over the test process's own. @default nothing more */
  env?: Record<string, string>;
  /** Written to its stdin, which is then closed. @default nothing */
  input?: string;
  /** The bin to run (another install's `dist/cli/main.js`). @default the build's */
  cli?: string;
  /** Generous: a bound against a hang, never a measure. @default 60000 */
  timeoutMs?: number;
}

/**
 * Runs `node <cli> ...args` and resolves with how it ended, failed or not: a
 * non-zero exit is a result to check, not a rejection. Rejects only when the
 * CLI could not be run or was killed (its timeout, a signal).
 */
export function runCli(args: readonly string[], options: CliRunOptions = {}): Promise<CliRun> {
  const { cwd, env, input, cli = builtCliPath, timeoutMs = 60_000 } = options;
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [cli, ...args],
      { cwd, env: { ...process.env, ...env }, encoding: "utf8", timeout: timeoutMs },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== "number") return reject(error);
        resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
      },
    );
    child.stdin?.end(input);
  });
}
