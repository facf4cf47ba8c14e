/**
 * The options `run` and `demo` share, as commander options with their parsers.
 *
 * @module
 */
import { InvalidArgumentError, Option } from "commander";

import type { ToolExecutionMode } from "../index.js";

/** The options common to `run` and `demo`, as commander hands them over. */
export interface BatchCliOptions {
  threads?: number;
  ndjson?: boolean;
}

/** The options of `run`, as commander hands them over. */
export interface RunCliOptions extends BatchCliOptions {
  tools: string[];
  hooks?: string;
  mode?: ToolExecutionMode;
  root?: string;
  allowWrite?: boolean;
}

const toolExecutionModes: readonly ToolExecutionMode[] = ["parallel", "sequential"];

/**
 * Parses `--threads`: digits only, at least 1. Commander reports the thrown
 * error as a usage error naming the option.
 */
export function parseThreads(value: string): number {
  const threads = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(threads) || threads < 1) {
    throw new InvalidArgumentError("Expected an integer >= 1.");
  }
  return threads;
}

/** `--threads N`: a fixed pool of N worker threads. */
export function threadsOption(): Option {
  return new Option("--threads <n>", "worker threads in the pool (default: the number of CPUs)").argParser(parseThreads);
}

/** `--ndjson`: machine-readable output. */
export function ndjsonOption(): Option {
  return new Option("--ndjson", 'print every event as one JSON line, then a final {"type":"batch_end",…} line');
}

/** `--mode parallel|sequential`: pi's `toolExecution`. */
export function modeOption(): Option {
  return new Option("--mode <mode>", "how the batch runs, as pi's toolExecution (default: parallel)").choices(
    toolExecutionModes,
  );
}

/** `--tools MODULE`, repeatable: collects every module in the order given. */
export function toolsOption(): Option {
  return new Option("--tools <module>", "ES module whose default export is an array of tools (repeatable)")
    .argParser((value: string, previous: string[]) => [...previous, value])
    .default([], "the built-in tools");
}

/** `--hooks MODULE`. */
export function hooksOption(): Option {
  return new Option("--hooks <module>", "ES module exporting beforeToolCall and/or afterToolCall");
}

/** `--root DIR`: the built-in tools' workspace root. */
export function rootOption(): Option {
  return new Option("--root <dir>", "workspace root of the built-in tools: paths outside it are refused (default: the current directory)");
}

/** `--allow-write`: lets the built-in `patch` write files. */
export function allowWriteOption(): Option {
  return new Option("--allow-write", "let the built-in patch tool write files inside the root (default: it only returns the patched text)");
}
