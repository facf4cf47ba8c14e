/** `toolpool node --redis URL`: serves its `--tools` modules' worker tools to the fleet until SIGTERM or SIGINT. */
import { type Command, InvalidArgumentError, Option } from "commander";

import { FleetNode, type PiVersion } from "../index.js";
import { pi16MinimumNode } from "../options.js";
import { parseThreads, piOption, toolsOption } from "./cli-options.js";
import { toolsFromFlags } from "./runtime-from-flags.js";
import { toInputError, UsageError } from "./usage-error.js";

interface NodeCliOptions {
  redis: string;
  tools: string[];
  pi?: PiVersion;
  threads?: number;
  concurrency?: number;
  name?: string;
  lockDuration?: number;
  stalledInterval?: number;
  prefix?: string;
}

/** Prints `node ready …` on stdout once it serves; on SIGTERM or SIGINT lets running calls finish, then returns. */
async function serveNode(options: NodeCliOptions): Promise<void> {
  if (!/^rediss?:\/\//.test(options.redis)) throw new UsageError(`--redis: expected a redis:// URL, got "${options.redis}"`);
  const tools = await toolsFromFlags({ tools: options.tools });
  let stop!: (signal: string) => void;
  const stopped = new Promise<string>((resolve) => (stop = resolve));
  // Listening before the start: a SIGTERM during start-up must also shut down gracefully.
  const onSignal = (signal: NodeJS.Signals) => stop(signal);
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    const node = await FleetNode.start({
      redis: options.redis,
      tools,
      ...(options.pi === undefined ? {} : { pi: options.pi }),
      ...(options.name === undefined ? {} : { name: options.name }),
      ...(options.threads === undefined ? {} : { threads: options.threads }),
      ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
      ...(options.lockDuration === undefined ? {} : { lockDurationMs: options.lockDuration }),
      ...(options.stalledInterval === undefined ? {} : { stalledIntervalMs: options.stalledInterval }),
      ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
      onError: (error) => process.stderr.write(`toolpool node: ${String((error as Error)?.message ?? error)}\n`),
    }).catch((error: unknown) => {
      // An invalid option (a name, `--pi 1.6` on too old a Node) is bad usage: exit 2.
      throw toInputError(error);
    });
    process.stdout.write(`node ready name=${node.name} threads=${node.threads} toolset=${node.toolsetHash.slice(0, 16)} pi=${node.pi}\n`);
    const signal = await stopped;
    process.stderr.write(`toolpool node: ${signal}: finishing ${node.running} running calls\n`);
    await node.close();
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
  }
}

export function addNodeCommand(program: Command): Command {
  const milliseconds = (value: string) => {
    const ms = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(ms) || ms < 50) throw new InvalidArgumentError("Expected an integer >= 50 (milliseconds).");
    return ms;
  };
  return program
    .command("node")
    .description("serve worker tools to a fleet's coordinators through Redis, until SIGTERM or SIGINT")
    .addOption(new Option("--redis <url>", "the fleet's Redis (redis://host:port)").makeOptionMandatory())
    .addOption(toolsOption())
    .addOption(
      piOption(
        `the pi of the coordinators this node serves: 0.73 or 1.6 (needs Node >= ${pi16MinimumNode.join(".")}); it must match their runtime's pi, or their calls end TP_ERR_TOOL_MISMATCH (default: 0.73)`,
      ),
    )
    .addOption(new Option("--threads <n>", "worker threads of the node's pool (default: the number of CPUs)").argParser(parseThreads))
    .addOption(new Option("--concurrency <n>", "calls taken from the queue at once (default: --threads)").argParser(parseThreads))
    .addOption(new Option("--name <name>", "the node's name in the fleet (default: <hostname>-<pid>)"))
    .addOption(
      new Option("--lock-duration <ms>", "BullMQ lockDuration; as the coordinators' fleet.lockDurationMs (default: 10000)").argParser(milliseconds),
    )
    .addOption(new Option("--stalled-interval <ms>", "BullMQ stalledInterval; as the coordinators' (default: 5000)").argParser(milliseconds))
    .addOption(new Option("--prefix <prefix>", "key prefix in Redis; as the coordinators' (default: toolpool)"))
    .action((options: NodeCliOptions) => serveNode(options));
}
