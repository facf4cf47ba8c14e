/** The options of `toolpool mcp`, apart from the command so that the server's module and the command's need not import each other. */
import type { ConnectionCliOptions, RuntimeCliOptions } from "./cli-options.js";
import type { CodingServeCliOptions } from "./coding-tools-serving.js";
import type { McpLimitCliOptions } from "./mcp-limit-options.js";
import type { SandboxCliOptions } from "./sandbox-options.js";

export interface HttpAddress {
  host: string;
  port: number;
}

export interface McpCliOptions extends ConnectionCliOptions, McpLimitCliOptions, RuntimeCliOptions, CodingServeCliOptions, SandboxCliOptions {
  http?: HttpAddress;
  token?: string;
  tokenFile?: string;
  allowHost: string[];
  allowOrigin: string[];
}
