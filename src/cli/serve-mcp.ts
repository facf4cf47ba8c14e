/**
 * `toolpool mcp`'s work: serves MCP on stdio until input ends (and the requests read are answered), or on Streamable HTTP
 * until SIGTERM or SIGINT. On stdio, stdout belongs to the protocol: everything else goes to stderr.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

import type { Runtime } from "../index.js";
import { McpCallGate } from "../mcp/mcp-call-gate.js";
import { mcpToolPools } from "../mcp/mcp-gate-pools.js";
import { McpHttpServer } from "../mcp/mcp-http-server.js";
import { cancelReasons, McpRefusal } from "../mcp/mcp-refusal.js";
import { createMcpServer, type McpServerOptions } from "../mcp/mcp-server.js";
import type { McpEarlyRefusals } from "../mcp/mcp-session.js";
import { McpStdioTransport } from "../mcp/mcp-stdio-transport.js";
import { builtinToolAnnotations } from "../mcp/mcp-tools.js";
import { isLoopbackHost } from "../server/server-options.js";
import { callGateOptions, checkHttpOnlyLimits, defaultDrainTimeoutMs, sessionLimits } from "./mcp-limit-options.js";
import type { McpCliOptions } from "./mcp-cli-options.js";
import { readPackageVersion } from "./package-version.js";
import { readBearerToken, TOKEN_ENV } from "./bearer-token.js";
import { codingThreadsPerSession, describeGeneratedToken, resolveServedToken } from "./coding-tools-serving.js";
import { runtimeFromFlags } from "./runtime-from-flags.js";
import { resolveServedSandbox } from "./sandbox-options.js";
import { inputErrors, UsageError } from "./usage-error.js";

const maxStdioMessageBytes = 16 * 1024 * 1024;

export async function serveMcp(options: McpCliOptions): Promise<void> {
  checkHttpOnlyLimits(options, options.http !== undefined);
  const isBuiltin = options.tools.length === 0;
  const allowWrite = options.allowWrite === true;
  const given = await readBearerToken({ token: options.token, tokenFile: options.tokenFile });
  // Read, then removed: no worker thread (they copy the environment) ever sees it.
  delete process.env[TOKEN_ENV];
  if (options.http !== undefined && given === undefined && !isLoopbackHost(options.http.host)) {
    throw new UsageError(`--http ${options.http.host} is not a loopback address: set --token or ${TOKEN_ENV} to require a bearer token`);
  }
  if (options.http === undefined && options.unsafeNoToken === true)
    throw new UsageError("--unsafe-no-token needs --http: on stdio there is no token");
  // On stdio the client is the process that started this one: no token to require.
  const { token, isGenerated } = options.http === undefined ? { token: given, isGenerated: false } : resolveServedToken(given, options);
  const sandbox = resolveServedSandbox("toolpool mcp", options.codingTools, options, [options.tokenFile]);
  const runtime: Runtime = await runtimeFromFlags({
    ...options,
    codingThreadsPerSession: codingThreadsPerSession(options),
    sandbox: sandbox.option,
  });
  const log = (line: string) => void process.stderr.write(`toolpool mcp: ${line}\n`);
  if (sandbox.line !== undefined) process.stderr.write(`${sandbox.line}\n`);
  const serverOptions: McpServerOptions = {
    version: readPackageVersion(),
    // The built-in patch writes only with --allow-write: only then is it destructive.
    annotations: isBuiltin ? builtinToolAnnotations({ allowWrite }) : {},
    log,
    // One gate for every session: calls wait there for a thread, not in the pool's queue.
    callGate: inputErrors(() => new McpCallGate(callGateOptions(runtime, options, options.http !== undefined))),
  };
  try {
    if (options.http === undefined) await serveStdio(runtime, serverOptions, options.drainTimeout ?? defaultDrainTimeoutMs);
    else await serveHttp(runtime, serverOptions, options, token, isGenerated);
  } finally {
    // The client is gone or the server stopped: results are owed to nobody.
    await runtime.close({ force: true });
  }
}

/**
 * Requests already read when input ends are answered first, so a piped client (`cat requests | toolpool mcp`) gets every
 * answer. Calls still running after `drainTimeoutMs` (at once on a signal) get `TP_ERR_CLOSED`, as over HTTP, and are aborted.
 */
async function serveStdio(runtime: Runtime, serverOptions: McpServerOptions, drainTimeoutMs: number): Promise<void> {
  const server = createMcpServer(runtime, serverOptions);
  const ended = new Promise<"end of input" | "SIGTERM" | "SIGINT">((resolve) => {
    process.stdin.once("end", () => resolve("end of input"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  const transport = new McpStdioTransport(new StdioServerTransport(process.stdin, process.stdout, { maxBufferSize: maxStdioMessageBytes }));
  await server.connect(transport);
  const reason = await ended;
  const isEndOfInput = reason === "end of input";
  const refusal = new McpRefusal("TP_ERR_CLOSED", isEndOfInput ? cancelReasons.inputEnded : cancelReasons.serverClosing);
  if (transport.inFlight > 0) serverOptions.log?.(`${reason}: answering the ${transport.inFlight} requests in flight before stopping`);
  const refused = await transport.drain(isEndOfInput ? drainTimeoutMs : 0, refusal);
  if (refused > 0) serverOptions.log?.(`${refused} requests were still running and were answered TP_ERR_CLOSED`);
  await server.close();
  // Resolves once every answer is out of the process.
  await new Promise<void>((resolve) => process.stdout.write("", () => resolve()));
}

async function serveHttp(
  runtime: Runtime,
  serverOptions: McpServerOptions,
  options: McpCliOptions,
  token: string | undefined,
  isTokenGenerated: boolean,
): Promise<void> {
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
    ...earlyRefusalsOf(runtime, serverOptions.callGate),
  });
  const stopped = new Promise<void>((resolve) => {
    process.once("SIGTERM", () => resolve());
    process.once("SIGINT", () => resolve());
  });
  const url = await http.listen();
  process.stdout.write(`listening on ${url}\n`);
  if (isTokenGenerated) process.stderr.write(describeGeneratedToken("toolpool mcp", token!, url, options.codingTools));
  await stopped;
  await http.close();
}

/** The calls of a POST the gate refuses as it arrives, before the SDK's server handles them (see `McpSessionLimits.earlyRefusals`). */
function earlyRefusalsOf(runtime: Runtime, gate: McpCallGate | undefined): { earlyRefusals?: McpEarlyRefusals } {
  if (gate === undefined) return {};
  const toolPools = mcpToolPools(runtime);
  return {
    earlyRefusals: (sessionKey, tools) =>
      gate.refusalsOf(
        sessionKey,
        tools.map((name) => toolPools.get(name) ?? false),
      ),
  };
}
