/**
 * The options of `toolpool mcp`, as commander hands them over (apart from
 * the command, so that the server's module and the command's need not
 * import each other).
 *
 * @module
 */
import type { PiVersion, ToolExecutionMode } from "../index.js";
import type { ConnectionCliOptions } from "./cli-options.js";
import type { McpLimitCliOptions } from "./mcp-limit-options.js";

/** Where `--http` listens. */
export interface HttpAddress {
  host: string;
  port: number;
}

/** The options of `mcp`, as commander hands them over. */
export interface McpCliOptions extends ConnectionCliOptions, McpLimitCliOptions {
  http?: HttpAddress;
  token?: string;
  tokenFile?: string;
  allowHost: string[];
  allowOrigin: string[];
  tools: string[];
  hooks?: string;
  threads?: number;
  /** `--max-concurrency`: caps by tool name. */
  maxConcurrency?: Record<string, number>;
  mode?: ToolExecutionMode;
  pi?: PiVersion;
  root?: string;
  allowWrite?: boolean;
  codingTools?: true | string[];
  bashTimeout?: number;
  fleet?: string;
  remote?: "all" | string[];
}
