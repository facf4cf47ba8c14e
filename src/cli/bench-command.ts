/**
 * `toolpool bench [flags]`: runs the repository's benchmark with the same
 * flags. The benchmark lives in the repository (`bench/`, built into
 * `dist-bench/` by `npm run bench`), not in the published package, so from
 * an installed package the command says where to run it and exits 2.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

import type { Command } from "commander";

import { UsageError } from "./usage-error.js";

/** `dist-bench/main.js` of the checkout this CLI was built in: two levels up from `dist/cli/`. */
function locateBenchEntry(moduleUrl: string = import.meta.url): string {
  return fileURLToPath(new URL("../../dist-bench/main.js", moduleUrl));
}

/**
 * Runs the built benchmark in a child Node process (this Node, `process.execPath`),
 * its output going straight to this process's stdout and stderr. Resolves when
 * it exits with 0; throws a `UsageError` when there is no built benchmark or it
 * rejected its flags (exit 2), and an `Error` when it fails (it has printed why).
 */
async function runBench(args: readonly string[], entry: string = locateBenchEntry()): Promise<void> {
  if (!existsSync(entry)) {
    throw new UsageError("the benchmark runs from a checkout of the toolpool repository: run `npm run bench` there");
  }
  const exitCode = await new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, [entry, ...args], { stdio: "inherit" });
    child.once("error", reject);
    child.once("exit", (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
  });
  // The benchmark exits 2 for flags it rejects, after saying which.
  if (exitCode === 2) throw new UsageError("the benchmark rejected its flags (see above)");
  if (exitCode !== 0) throw new Error(`the benchmark exited with code ${exitCode}`);
}

/** Adds the `bench` command to `program`; every flag after `bench` goes to the benchmark. */
export function addBenchCommand(program: Command): Command {
  return (
    program
      .command("bench")
      .description("run the benchmarks from a checkout (npm run bench), with the same flags: --quick, --suite, --threads, --help")
      // The benchmark parses its own flags, --help included.
      .helpOption(false)
      .allowUnknownOption()
      .allowExcessArguments()
      .action((_options: unknown, command: Command) => runBench(command.args))
  );
}
