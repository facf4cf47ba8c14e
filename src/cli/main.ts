#!/usr/bin/env node
/**
 * The `toolpool` executable. Exit codes: 0 when the batch ran (1 with `run --fail-on-error` and an error result),
 * 2 with one line on stderr for bad usage or input, 1 for anything unexpected.
 */
import { CommanderError } from "commander";

import { createProgram } from "./program.js";
import { describeThrown } from "../errors.js";
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, toOneLine, UsageError } from "./usage-error.js";

async function main(argv: readonly string[]): Promise<number> {
  try {
    // Commander answers a missing command with its whole help; the contract is one line for any usage error.
    if (argv.length <= 2) throw new UsageError("missing command: expected run, demo, serve, mcp or doctor (see toolpool --help)");
    await createProgram().parseAsync(argv);
    return EXIT_OK;
  } catch (error) {
    // Commander has already printed its message (see createProgram's outputError).
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    process.stderr.write(`toolpool: ${toOneLine(describeThrown(error))}\n`);
    return error instanceof UsageError ? EXIT_USAGE : EXIT_FAILURE;
  }
}

function flush(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => stream.write("", () => resolve()));
}

// A reader that goes away (`toolpool run … --ndjson | head -1`) is not a crash.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(EXIT_FAILURE);
  throw error;
});

const exitCode = await main(process.argv);
await Promise.all([flush(process.stdout), flush(process.stderr)]);
// A user's tool or hook may have left a timer or socket open: the command must not hang on it.
process.exit(exitCode);
