/**
 * `toolpool mcp`'s work: a runtime from the command line's tools and hooks,
 * served over MCP on stdio until standard input ends, or on Streamable HTTP
 * until SIGTERM or SIGINT.
 *
 * On stdio, standard output belongs to the protocol: everything else toolpool
 * has to say goes to standard error.
 *
 * @module
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

import type { Runtime } from "../index.js";
import { McpCallGate } from "../mcp/mcp-call-gate.js";
import { McpHttpServer } from "../mcp/mcp-http-server.js";
import { createMcpServer, type McpServerOptions } from "../mcp/mcp-server.js";
import { builtinToolAnnotations } from "../mcp/mcp-tools.js";
import { isLoopbackHost } from "../server/server-options.js";
import { callGateOptions, checkHttpOnlyLimits, sessionLimits } from "./mcp-limit-options.js";
import type { McpCliOptions } from "./mcp-cli-options.js";
import { readPackageVersion } from "./package-version.js";
import { readBearerToken, TOKEN_ENV } from "./bearer-token.js";
import { runtimeFromFlags } from "./runtime-from-flags.js";
import { inputErrors, UsageError } from "./usage-error.js";

/** Largest MCP message read from standard input, in bytes. */
const maxStdioMessageBytes = 16 * 1024 * 1024;

/** Runs the MCP server until its client goes away (stdio) or a signal stops it (HTTP). */
export async function serveMcp(options: McpCliOptions): Promise<void> {
  checkHttpOnlyLimits(options, options.http !== undefined);
  const isBuiltin = options.tools.length === 0;
  const allowWrite = options.allowWrite === true;
  const token = await readBearerToken({ token: options.token, tokenFile: options.tokenFile });
  // Read, then removed: no worker thread (they copy the environment) ever sees it.
  delete process.env[TOKEN_ENV];
  if (options.http !== undefined && token === undefined && !isLoopbackHost(options.http.host)) {
    throw new UsageError(`--http ${options.http.host} is not a loopback address: set --token or ${TOKEN_ENV} to require a bearer token`);
  }
  const runtime: Runtime = await runtimeFromFlags(options);
  const log = (line: string) => void process.stderr.write(`toolpool mcp: ${line}\n`);
  const serverOptions: McpServerOptions = {
    version: readPackageVersion(),
    // The built-in patch writes only with --allow-write: only then is it destructive.
    annotations: isBuiltin ? builtinToolAnnotations({ allowWrite }) : {},
    log,
    // One gate for every session: calls wait there for a thread, not in the pool's queue.
    callGate: inputErrors(() => new McpCallGate(callGateOptions(runtime, options))),
  };
  try {
    if (options.http === undefined) await serveStdio(runtime, serverOptions);
    else await serveHttp(runtime, serverOptions, options, token);
  } finally {
    // The client is gone or the server stopped: results are owed to nobody.
    await runtime.close({ force: true });
  }
}

async function serveStdio(runtime: Runtime, serverOptions: McpServerOptions): Promise<void> {
  const server = createMcpServer(runtime, serverOptions);
  const ended = new Promise<string>((resolve) => {
    process.stdin.once("end", () => resolve("end of input"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  await server.connect(new StdioServerTransport(process.stdin, process.stdout, { maxBufferSize: maxStdioMessageBytes }));
  await ended;
  await server.close();
}

async function serveHttp(runtime: Runtime, serverOptions: McpServerOptions, options: McpCliOptions, token: string | undefined): Promise<void> {
  const http = new McpHttpServer(() => createMcpServer(runtime, serverOptions), {
    host: options.http!.host,
    port: options.http!.port,
    ...(token === undefined ? {} : { token }),
    allowedHosts: options.allowHost,
    allowedOrigins: options.allowOrigin,
    ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections }),
    ...(options.maxConnectionsPerAddress === undefined ? {} : { maxConnectionsPerAddress: options.maxConnectionsPerAddress }),
    ...(options.headersTimeout === undefined ? {} : { headersTimeoutMs: options.headersTimeout }),
    ...sessionLimits(options),
    ...(serverOptions.log === undefined ? {} : { log: serverOptions.log }),
  });
  const stopped = new Promise<void>((resolve) => {
    process.once("SIGTERM", () => resolve());
    process.once("SIGINT", () => resolve());
  });
  const url = await http.listen();
  process.stdout.write(`listening on ${url}\n`);
  await stopped;
  await http.close();
}
