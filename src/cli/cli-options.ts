/** The options commands share, as commander options with their parsers. */
import { InvalidArgumentError, Option } from "commander";

import type { PiVersion, ToolExecutionMode } from "../index.js";
import { pi16MinimumNode } from "../options.js";

/** The options common to `run` and `demo`, as commander hands them over. */
export interface BatchCliOptions {
  threads?: number;
  ndjson?: boolean;
}

/** The options a runtime is made from (`run`, `serve`, `mcp`), as commander hands them over. */
export interface RuntimeCliOptions extends FleetCliOptions {
  tools: string[];
  hooks?: string;
  threads?: number;
  mode?: ToolExecutionMode;
  pi?: PiVersion;
  root?: string;
  allowWrite?: boolean;
  codingTools?: true | string[];
  bashTimeout?: number;
  maxConcurrency?: Record<string, number>;
}

/** The options of `run`, as commander hands them over. */
export interface RunCliOptions extends BatchCliOptions, RuntimeCliOptions {
  full?: boolean;
  failOnError?: boolean;
}

const toolExecutionModes: readonly ToolExecutionMode[] = ["parallel", "sequential"];

/** Parses `--threads`: digits only, at least 1 (commander reports a throw as a usage error naming the option). */
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

/** Parses one `--max-concurrency TOOL=N`: a later one for the same tool wins; whether TOOL exists, the runtime says. */
export function parseMaxConcurrency(value: string, previous: Record<string, number> | undefined): Record<string, number> {
  const match = /^(.+)=(\d+)$/.exec(value);
  const cap = match === null ? Number.NaN : Number(match[2]);
  if (match === null || !Number.isSafeInteger(cap) || cap < 1) throw new InvalidArgumentError("Expected TOOL=N, with N an integer >= 1.");
  return { ...previous, [match[1]!]: cap };
}

/** `--max-concurrency TOOL=N`, repeatable: most calls of a tool running at once (the runtime's `maxConcurrency`). */
export function maxConcurrencyOption(): Option {
  return new Option("--max-concurrency <tool=n>", "most calls of a tool running at once, e.g. bash=4; calls over it wait (repeatable)").argParser(
    parseMaxConcurrency,
  );
}

/** `--ndjson`: machine-readable output. */
export function ndjsonOption(): Option {
  return new Option("--ndjson", 'print every event as one JSON line, then a final {"type":"batch_end",…} line');
}

/** `--mode parallel|sequential`: pi's `toolExecution`. */
export function modeOption(): Option {
  return new Option("--mode <mode>", "how the batch runs, as pi's toolExecution (default: parallel)").choices(toolExecutionModes);
}

const piVersions: readonly PiVersion[] = ["0.73", "1.6"];

/**
 * `--pi 0.73|1.6`: left undefined when absent, so the runtime's (or config file's) default applies; the runtime refuses
 * a Node too old for 1.6. `description` replaces the help text (a fleet node's `--pi` means more).
 */
export function piOption(
  description = `which pi's tool-execution rules batches follow: 0.73 (pi-agent-core 0.73.1) or 1.6 (pi-agent-core 1.6.0, needs Node >= ${pi16MinimumNode.join(".")}) (default: 0.73)`,
): Option {
  return new Option("--pi <version>", description).choices(piVersions);
}

/** `--tools MODULE`, repeatable: collects every module in the order given. */
export function toolsOption(): Option {
  return new Option("--tools <module>", "ES module whose default export is an array of tools (repeatable)")
    .argParser((value: string, previous: string[]) => [...previous, value])
    .default([], "the built-in tools");
}

export function hooksOption(): Option {
  return new Option("--hooks <module>", "ES module exporting beforeToolCall and/or afterToolCall");
}

/** The fleet options of `run` and `serve`, as commander hands them over. */
export interface FleetCliOptions {
  fleet?: string;
  remote?: "all" | string[];
}

/** `--fleet URL`: run worker calls on the fleet behind this Redis. */
export function fleetOption(): Option {
  return new Option("--fleet <url>", "run worker calls on the fleet of `toolpool node`s behind this Redis (redis://host:port)");
}

/** `--remote all|NAME,...`: which worker tools go to the fleet. */
export function remoteOption(): Option {
  return new Option("--remote <tools>", "with --fleet: all, or a comma-separated list of worker tool names (default: all)").argParser(
    (value: string) =>
      value === "all"
        ? "all"
        : value
            .split(",")
            .map((name) => name.trim())
            .filter((name) => name.length > 0),
  );
}

/** The runtime's `fleet` option from `--fleet` and `--remote`; undefined without `--fleet`. */
export function fleetFromCli(options: FleetCliOptions): { redis: string; remote: "all" | string[] } | undefined {
  if (options.fleet === undefined) return undefined;
  return { redis: options.fleet, remote: options.remote ?? "all" };
}

/** `--root DIR`: the built-in tools' workspace root. */
export function rootOption(): Option {
  return new Option("--root <dir>", "workspace root of the built-in tools: paths outside it are refused (default: the current directory)");
}

/** `--coding-tools [NAMES]`: pi 1.6's coding tools, each session in a folder of its own under `--root`. */
export function codingToolsOption(): Option {
  return new Option(
    "--coding-tools [names]",
    "offer pi 1.6's coding tools (read,bash,edit,write by default; any of read,bash,edit,write,grep,find,ls), each session in a folder of its own under --root, paths confined to it (implies --pi 1.6)",
  ).argParser((value: string) => {
    const names = value
      .split(",")
      .map((name) => name.trim())
      .filter((name) => name.length > 0);
    const known = ["read", "bash", "edit", "write", "grep", "find", "ls"];
    const unknown = names.find((name) => !known.includes(name));
    if (names.length === 0 || unknown !== undefined)
      throw new InvalidArgumentError(`Expected names out of ${known.join(",")}, got "${unknown ?? value}".`);
    return names;
  });
}

/** `--bash-timeout MS`: the deadline of coding-tool bash calls that give none. */
export function bashTimeoutOption(): Option {
  return new Option(
    "--bash-timeout <ms>",
    "with --coding-tools: the deadline of a bash call that gives no timeout of its own (default 120000)",
  ).argParser((value: string) => {
    const ms = Number(value);
    if (!(Number.isInteger(ms) && ms >= 1 && ms <= 2_147_483_647)) throw new InvalidArgumentError("Expected an integer from 1 to 2147483647.");
    return ms;
  });
}

/** `--allow-write`: lets the built-in `patch` write files. */
export function allowWriteOption(): Option {
  return new Option("--allow-write", "let the built-in patch tool write files inside the root (default: it only returns the patched text)");
}

/** The connection limits of `serve` and `mcp --http`, as commander hands them over. */
export interface ConnectionCliOptions {
  maxConnections?: number;
  maxConnectionsPerAddress?: number;
  headersTimeout?: number;
}

/** `--max-connections N`, `--max-connections-per-address N`, `--headers-timeout MS`: the connection guard's limits. */
export function connectionOptions(): Option[] {
  return [
    new Option(
      "--max-connections <n>",
      "most connections open at once; past it a new one replaces one with no request in flight (idle longest, else the oldest without complete headers) (default: 1024)",
    ).argParser(parseCount),
    new Option(
      "--max-connections-per-address <n>",
      "most connections from one IPv4 address or IPv6 /64, the same way; behind a proxy raise it to --max-connections (default: 256)",
    ).argParser(parseCount),
    new Option("--headers-timeout <ms>", "most time from a connection's opening to its first request's complete headers (default: 5000)").argParser(
      parseMilliseconds,
    ),
  ];
}

function parseCount(value: string): number {
  const count = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(count) || count < 1) throw new InvalidArgumentError("Expected an integer >= 1.");
  return count;
}

function parseMilliseconds(value: string): number {
  const ms = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms < 1 || ms > 2_147_483_647) throw new InvalidArgumentError("Expected an integer from 1 to 2147483647.");
  return ms;
}
