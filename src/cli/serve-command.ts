/** `toolpool serve`: the HTTP server in front of a runtime, until SIGTERM or SIGINT shuts it down gracefully. */
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";

import { Ajv, type ErrorObject } from "ajv";
import { type Command, InvalidArgumentError, Option } from "commander";

import { createServer, type PiVersion, type PoolOptions, type ServerOptions, type ToolExecutionMode, type ToolpoolServer } from "../index.js";
import { isLoopbackHost, serverOptionsSchema } from "../server/server-options.js";
import { readBearerToken, TOKEN_ENV } from "./bearer-token.js";
import {
  codingThreadsPerSession,
  codingThreadsPerSessionOption,
  describeGeneratedToken,
  requireCodingRoot,
  resolveServedToken,
  unsafeNoTokenOption,
  type CodingServeCliOptions,
} from "./coding-tools-serving.js";
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
  type ConnectionCliOptions,
  type RuntimeCliOptions,
} from "./cli-options.js";
import { closestName } from "../closest-name.js";
import { describeThrown } from "../errors.js";
import { describeLiveViewLink, type LinkedToken } from "./live-view-link.js";
import { runtimeFromFlags } from "./runtime-from-flags.js";
import { resolveServedSandbox, type SandboxCliOptions, sandboxOptions } from "./sandbox-options.js";
import { inputErrors, UsageError } from "./usage-error.js";

interface ServeCliOptions extends RuntimeCliOptions, ConnectionCliOptions, CodingServeCliOptions, SandboxCliOptions {
  host?: string;
  port?: number;
  token?: string;
  tokenFile?: string;
  maxBody?: number;
  config?: string;
  callTimeout?: number;
  updateArgs?: boolean;
  ui?: boolean;
}

/** A config file's settings beyond `createServer`'s options. */
interface ServeRuntimeConfig {
  tokenFile?: string;
  root?: string;
  allowWrite?: boolean;
  callTimeoutMs?: number;
  tools?: string[];
  hooks?: string;
  threads?: number;
  toolExecution?: ToolExecutionMode;
  /** `--pi` overrides it. */
  pi?: PiVersion;
  /** `threads` overrides the thread counts. */
  pool?: PoolOptions;
  /** `--max-concurrency` adds to them, and wins for its tools. */
  maxConcurrency?: Record<string, number>;
}

/**
 * A `--config` file: every option of `createServer` and the runtime's settings; paths are relative to the file's folder.
 * The command line wins over the file, and `TOOLPOOL_TOKEN` over the file's token.
 */
type ServeConfig = ServerOptions & ServeRuntimeConfig;

const serverOptionNames = Object.keys(serverOptionsSchema.properties) as (keyof ServerOptions)[];

/** Values are checked by the code that takes them, whose messages name the option: only the shape is checked here. */
function shapeOf(schema: { type?: string; items?: { type?: string } }): Record<string, unknown> {
  return schema.items === undefined ? { type: schema.type } : { type: schema.type, items: { type: schema.items.type } };
}

const configSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    ...Object.fromEntries(
      Object.entries(serverOptionsSchema.properties).map(([name, schema]) => [name, shapeOf(schema as { type?: string; items?: { type?: string } })]),
    ),
    tokenFile: { type: "string" },
    root: { type: "string" },
    allowWrite: { type: "boolean" },
    callTimeoutMs: { type: "integer" },
    tools: { type: "array", items: { type: "string" } },
    hooks: { type: "string" },
    threads: { type: "integer", minimum: 1 },
    toolExecution: { enum: ["parallel", "sequential"] },
    // Any value: createRuntime's message names the choices (`"pi": 1.6`, a number, is the likely slip).
    pi: {},
    pool: { type: "object" },
    maxConcurrency: { type: "object" },
  },
};

const validateConfig = new Ajv({ allErrors: true, strict: true }).compile(configSchema);

/** Resolves once a signal has shut the server down; a second signal aborts in-flight batches at once. */
async function serve(options: ServeCliOptions): Promise<void> {
  const config = options.config === undefined ? {} : await loadServeConfig(options.config);
  // Read, then removed: no worker thread (they copy the environment) ever sees the token.
  const { serverOptions, isTokenGenerated } = await resolveServerCliOptions(options, config);
  delete process.env[TOKEN_ENV];
  const root = options.root ?? config.root;
  requireCodingRoot(options.codingTools, root);
  const sandbox = resolveServedSandbox("toolpool serve", options.codingTools, options, [options.config, options.tokenFile, config.tokenFile]);
  const runtime = await runtimeFromFlags(
    {
      tools: options.tools.length > 0 ? options.tools : (config.tools ?? []),
      root,
      allowWrite: options.allowWrite ?? config.allowWrite,
      codingTools: options.codingTools,
      bashTimeout: options.bashTimeout,
      codingThreadsPerSession: codingThreadsPerSession(options),
      sandbox: sandbox.option,
      callTimeout: options.callTimeout ?? config.callTimeoutMs,
      hooks: options.hooks ?? config.hooks,
      threads: options.threads ?? config.threads,
      mode: options.mode ?? config.toolExecution,
      pi: options.pi ?? config.pi,
      maxConcurrency: config.maxConcurrency === undefined ? options.maxConcurrency : { ...config.maxConcurrency, ...options.maxConcurrency },
      fleet: options.fleet,
      remote: options.remote,
    },
    config.pool,
  );
  let server: ToolpoolServer;
  try {
    server = inputErrors(() => createServer(runtime, serverOptions));
  } catch (error) {
    await runtime.close();
    throw error;
  }
  if (sandbox.line !== undefined) process.stderr.write(`${sandbox.line}\n`);
  // Before `listen`: a SIGTERM during start-up must shut down gracefully too.
  const signals = watchSignals(server);
  try {
    const url = await server.listen();
    process.stdout.write(`listening on ${url}\n`);
    if (isTokenGenerated) process.stderr.write(describeGeneratedToken("toolpool serve", serverOptions.token!, url, options.codingTools));
    if (server.options.ui) process.stderr.write(describeLiveViewLink("toolpool serve", url, linkedTokenOf(serverOptions.token, isTokenGenerated)));
    const signal = await signals.first;
    process.stderr.write(`toolpool serve: ${signal}: answering new requests 503, in-flight batches have ${server.options.shutdownGraceMs} ms\n`);
  } finally {
    try {
      await server.close();
    } finally {
      signals.dispose();
    }
  }
}

function linkedTokenOf(token: string | undefined, isGenerated: boolean): LinkedToken {
  if (token === undefined) return { kind: "none" };
  return isGenerated ? { kind: "generated", token } : { kind: "given" };
}

export function addServeCommand(program: Command): Command {
  const command = program
    .command("serve")
    .description("serve batches over HTTP (Server-Sent Events or JSON) until SIGTERM or SIGINT")
    .addOption(new Option("--host <host>", "address to listen on; beyond loopback a token is required (default: 127.0.0.1)"))
    .addOption(new Option("--port <port>", "TCP port; 0 picks a free one (default: 8080)").argParser(parsePort))
    .addOption(new Option("--token <token>", `bearer token clients must send; visible in ps, prefer --token-file or $${TOKEN_ENV}`))
    .addOption(new Option("--token-file <path>", "file holding the bearer token (surrounding whitespace is trimmed)"))
    .addOption(toolsOption())
    .addOption(hooksOption())
    .addOption(new Option("--max-body <bytes>", "largest request body, in bytes (default: 1048576)").argParser(parseMaxBody))
    .addOption(threadsOption())
    .addOption(maxConcurrencyOption())
    .addOption(modeOption())
    .addOption(piOption())
    .addOption(fleetOption())
    .addOption(remoteOption())
    .addOption(rootOption())
    .addOption(allowWriteOption())
    .addOption(codingToolsOption())
    .addOption(bashTimeoutOption())
    .addOption(codingThreadsPerSessionOption())
    .addOption(unsafeNoTokenOption());
  for (const option of sandboxOptions()) command.addOption(option);
  command
    .addOption(
      new Option("--call-timeout <ms>", "time limit of every worker tool without one of its own (default: 30000 for the built-ins)").argParser(
        parseCallTimeout,
      ),
    )
    // Both forms, so that commander sets no default and the config file's `updateArgs` applies unless one is given.
    .addOption(new Option("--update-args", "repeat each call's args in its SSE tool_execution_update events, as pi does (default)"))
    .addOption(new Option("--no-update-args", "leave args out of SSE tool_execution_update events (tool_execution_start carries them)"))
    .addOption(new Option("--ui", "serve the live view at /ui and the pool's event stream at /v1/pool/events (default)"))
    .addOption(new Option("--no-ui", "serve neither the live view nor the pool's event stream"));
  for (const option of connectionOptions()) command.addOption(option);
  return command
    .addOption(new Option("--config <file>", "JSON file with any of these settings; the command line wins"))
    .action((options: ServeCliOptions) => serve(options));
}

/**
 * The token comes from `--token`, `--token-file`, `$TOOLPOOL_TOKEN`, then the file; with coding tools that run commands
 * or write, a loopback server without one gets a generated token, which `isTokenGenerated` says to show.
 */
async function resolveServerCliOptions(
  options: ServeCliOptions,
  config: ServeConfig,
): Promise<{ serverOptions: ServerOptions; isTokenGenerated: boolean }> {
  const given = await readBearerToken({
    token: options.token,
    tokenFile: options.tokenFile,
    configToken: config.token,
    configTokenFile: config.tokenFile,
  });
  const host = options.host ?? config.host;
  if (host !== undefined && given === undefined && !isLoopbackHost(host)) {
    throw new UsageError(`--host ${host} is not a loopback address: set --token or ${TOKEN_ENV} to require a bearer token`);
  }
  const { token, isGenerated } = resolveServedToken(given, options);
  const fromFlags: ServerOptions = {
    host,
    port: options.port,
    token,
    maxBodyBytes: options.maxBody,
    maxConnections: options.maxConnections,
    maxConnectionsPerAddress: options.maxConnectionsPerAddress,
    headersTimeoutMs: options.headersTimeout,
    updateArgs: options.updateArgs,
    ui: options.ui,
  };
  const picked = Object.fromEntries(serverOptionNames.map((name) => [name, name === "token" ? token : (fromFlags[name] ?? config[name])]));
  const serverOptions = Object.fromEntries(Object.entries(picked).filter(([, value]) => value !== undefined)) as ServerOptions;
  return { serverOptions, isTokenGenerated: isGenerated };
}

function unknownSetting(name: string): string {
  const closest = closestName(name, Object.keys(configSchema.properties));
  return `unknown setting "${name}"${closest === undefined ? "" : `; did you mean "${closest}"?`}`;
}

/** Module paths become absolute. */
async function loadServeConfig(path: string): Promise<ServeConfig> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, "utf8"));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(`cannot read config file ${path}: ${code === "ENOENT" ? "no such file" : describeThrown(error)}`, {
      cause: error,
    });
  }
  if (!validateConfig(json)) {
    const problems = (validateConfig.errors as ErrorObject[]).map((error) =>
      error.keyword === "additionalProperties"
        ? unknownSetting((error.params as { additionalProperty: string }).additionalProperty)
        : `${error.instancePath.slice(1) || "the file"} ${error.message ?? "is invalid"}`,
    );
    throw new UsageError(`invalid config file ${path}: ${problems.join("; ")}`);
  }
  const config = json as ServeConfig;
  const base = dirname(resolve(path));
  return {
    ...config,
    ...(config.tools === undefined ? {} : { tools: config.tools.map((tool) => resolve(base, tool)) }),
    ...(config.hooks === undefined ? {} : { hooks: resolve(base, config.hooks) }),
    ...(config.root === undefined ? {} : { root: resolve(base, config.root) }),
    ...(config.tokenFile === undefined ? {} : { tokenFile: resolve(base, config.tokenFile) }),
  };
}

/** The first SIGTERM or SIGINT; any later one ends in-flight batches at once. */
function watchSignals(server: ToolpoolServer): { first: Promise<NodeJS.Signals>; dispose(): void } {
  let resolveFirst!: (signal: NodeJS.Signals) => void;
  const first = new Promise<NodeJS.Signals>((resolve) => (resolveFirst = resolve));
  let count = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    count += 1;
    if (count === 1) resolveFirst(signal);
    else void server.close({ graceMs: 0 }).catch(() => {});
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  return {
    first,
    dispose: () => {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
    },
  };
}

function parsePort(value: string): number {
  const port = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(port >= 0 && port <= 65_535)) throw new InvalidArgumentError("Expected an integer from 0 to 65535.");
  return port;
}

function parseCallTimeout(value: string): number {
  const ms = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms < 1 || ms > 2_147_483_647) throw new InvalidArgumentError("Expected an integer from 1 to 2147483647.");
  return ms;
}

function parseMaxBody(value: string): number {
  const bytes = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new InvalidArgumentError("Expected an integer >= 1.");
  return bytes;
}
