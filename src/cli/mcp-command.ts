/** `toolpool mcp`: the command's options. The MCP SDK loads only when it runs (serve-mcp.ts), so no other command pays for it. */
import { type Command, InvalidArgumentError, Option } from "commander";

import {
  allowWriteOption,
  bashTimeoutOption,
  codingToolsOption,
  connectionOptions,
  fleetOption,
  hooksOption,
  modeOption,
  piOption,
  remoteOption,
  rootOption,
  maxConcurrencyOption,
  threadsOption,
  toolsOption,
} from "./cli-options.js";
import { codingThreadsPerSessionOption, unsafeNoTokenOption } from "./coding-tools-serving.js";
import type { HttpAddress, McpCliOptions } from "./mcp-cli-options.js";
import { mcpLimitOptions } from "./mcp-limit-options.js";
import { sandboxOptions } from "./sandbox-options.js";
import { importOptional } from "../optional-packages.js";

/** Adds the `mcp` command to `program`. */
export function addMcpCommand(program: Command): Command {
  const collect = (value: string, previous: string[]) => [...previous, value];
  const command = program
    .command("mcp")
    .description("serve the tools over the Model Context Protocol: on stdio, or on Streamable HTTP with --http")
    .addOption(
      new Option("--http <[host:]port>", "serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (host default: 127.0.0.1)").argParser(
        parseHttpAddress,
      ),
    )
    .addOption(
      new Option("--token <token>", "with --http: bearer token clients must send (default: $TOOLPOOL_TOKEN); visible in ps, prefer --token-file"),
    )
    .addOption(new Option("--token-file <path>", "with --http: file holding the bearer token (surrounding whitespace is trimmed)"))
    .addOption(
      new Option("--allow-host <host>", "with --http and no token: a Host header to accept besides localhost (repeatable)")
        .argParser(collect)
        .default([]),
    )
    .addOption(
      new Option("--allow-origin <origin>", "with --http: an Origin header to accept (repeatable; default: none)").argParser(collect).default([]),
    );
  for (const option of connectionOptions()) command.addOption(option);
  command
    .addOption(toolsOption())
    .addOption(hooksOption())
    .addOption(threadsOption())
    .addOption(maxConcurrencyOption())
    .addOption(modeOption())
    .addOption(piOption())
    .addOption(rootOption())
    .addOption(allowWriteOption())
    .addOption(codingToolsOption())
    .addOption(bashTimeoutOption())
    .addOption(codingThreadsPerSessionOption())
    .addOption(unsafeNoTokenOption())
    .addOption(fleetOption())
    .addOption(remoteOption());
  for (const option of sandboxOptions()) command.addOption(option);
  for (const option of mcpLimitOptions()) command.addOption(option);
  return command.action(async (options: McpCliOptions) => {
    // The MCP SDK is an optional peer dependency: a missing one is TP_ERR_MISSING_PACKAGE with the install line.
    const { serveMcp } = await importOptional("mcp", () => import("./serve-mcp.js"));
    await serveMcp(options);
  });
}

/** Parses `PORT`, `HOST:PORT` or `[IPV6]:PORT`. */
function parseHttpAddress(value: string): HttpAddress {
  const match = /^(?:(\[[0-9a-fA-F:.]+\]|[^:[\]]+):)?(\d{1,5})$/.exec(value);
  const port = match === null ? Number.NaN : Number(match[2]);
  if (match === null || !(port >= 0 && port <= 65_535)) {
    throw new InvalidArgumentError("Expected PORT or HOST:PORT, with a port from 0 to 65535.");
  }
  const host = match[1] ?? "127.0.0.1";
  return { host: host.startsWith("[") ? host.slice(1, -1) : host, port };
}
