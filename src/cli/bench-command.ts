/** `toolpool bench [flags]`: the benchmark lives in the repository (`dist-bench/`), not the package; elsewhere it exits 2. */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

import type { Command } from "commander";

import { UsageError } from "./usage-error.js";

function locateBenchEntry(moduleUrl: string = import.meta.url): string {
  return fileURLToPath(new URL("../../dist-bench/main.js", moduleUrl));
}

/** Resolves when the benchmark exits 0; a `UsageError` when it is not built or rejected its flags, else an `Error`. */
async function runBench(args: readonly string[], entry: string = locateBenchEntry()): Promise<void> {
  if (!existsSync(entry)) {
    throw new UsageError("the benchmark runs from a checkout of the toolpool repository: run `npm run bench` there");
  }
  const exitCode = await new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, [entry, ...args], { stdio: "inherit" });
    child.once("error", reject);
    child.once("exit", (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
  });
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
