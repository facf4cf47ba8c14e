/**
 * What `serve` and `mcp --http` require before serving pi's coding tools: a token when they can run commands or write
 * files, and for `serve` a `--root` (docs/coding-tools.md, "Serving them").
 */
import { randomBytes } from "node:crypto";

import { InvalidArgumentError, Option } from "commander";

import { defaultIoThreads } from "../coding-tools.js";
import { TOKEN_ENV } from "./bearer-token.js";
import { UsageError } from "./usage-error.js";

/** Served, these make the server a shell for whoever reaches it. */
const commandOrWriteTools: readonly string[] = ["bash", "edit", "write"];

const defaultCodingTools: readonly string[] = ["read", "bash", "edit", "write"];

export interface CodingServeCliOptions {
  codingTools?: true | string[];
  unsafeNoToken?: boolean;
  codingThreadsPerSession?: number;
}

/** `--unsafe-no-token`: serve bash, edit or write on loopback without a token. */
export function unsafeNoTokenOption(): Option {
  return new Option(
    "--unsafe-no-token",
    "with --coding-tools that run commands or write (bash, edit, write): serve them on loopback without a token, to every local user and program (default: a token is required, generated and printed when none is given)",
  );
}

/** `--coding-threads-per-session N`: most threads of the coding-io pool one session holds. */
export function codingThreadsPerSessionOption(): Option {
  return new Option(
    "--coding-threads-per-session <n>",
    "with --coding-tools: most threads of the pool of bash, grep, find and ls that one session holds at once; its other calls wait while other sessions' calls run (default: half of that pool's threads)",
  ).argParser((value: string) => {
    const threads = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!(Number.isSafeInteger(threads) && threads >= 1 && threads <= 1024)) throw new InvalidArgumentError("Expected an integer from 1 to 1024.");
    return threads;
  });
}

export function commandOrWriteToolsOf(codingTools: true | string[] | undefined): string[] {
  if (codingTools === undefined) return [];
  return (codingTools === true ? defaultCodingTools : codingTools).filter((name) => commandOrWriteTools.includes(name));
}

export interface ServedToken {
  token: string | undefined;
  /** Generated here: the operator must be shown it. */
  isGenerated: boolean;
}

/**
 * A server of bash, edit or write is a shell for whoever reaches it, loopback included (any local user, or a container
 * sharing the network namespace): without a token it gets a generated one, unless `--unsafe-no-token`. That flag is
 * refused where it cannot apply.
 */
export function resolveServedToken(token: string | undefined, options: CodingServeCliOptions): ServedToken {
  const risky = commandOrWriteToolsOf(options.codingTools);
  if (options.unsafeNoToken === true) {
    if (token !== undefined) throw new UsageError(`--unsafe-no-token and a token (--token, --token-file or $${TOKEN_ENV}) contradict each other`);
    if (risky.length === 0) {
      throw new UsageError(
        "--unsafe-no-token applies only with --coding-tools serving bash, edit or write: a loopback server of other tools needs no token by default",
      );
    }
    return { token: undefined, isGenerated: false };
  }
  if (token !== undefined || risky.length === 0) return { token, isGenerated: false };
  return { token: randomBytes(32).toString("base64url"), isGenerated: true };
}

/** Shows the operator a generated token (on stderr, as Jupyter does); `prefix` names the command. */
export function describeGeneratedToken(prefix: string, token: string, url: string, codingTools: true | string[] | undefined): string {
  const tools = commandOrWriteToolsOf(codingTools).join(", ");
  return [
    `${prefix}: ${tools} run commands or write files as this user, so every request needs a bearer token, even on loopback.`,
    `${prefix}: generated one (set your own with --token-file or $${TOKEN_ENV}; --unsafe-no-token serves without one). Send it to ${url} as:`,
    `${prefix}:     Authorization: Bearer ${token}`,
    "",
  ].join("\n");
}

/** Each session works in a folder under the root, so the folder the server happened to start in is never a workspace by accident. */
export function requireCodingRoot(codingTools: true | string[] | undefined, root: string | undefined): void {
  if (codingTools !== undefined && root === undefined) {
    throw new UsageError(
      "--coding-tools needs --root DIR: each session (X-Toolpool-Session or sessionKey) works in a folder of its own under DIR, and batches without one in DIR itself",
    );
  }
}

/**
 * `--coding-threads-per-session`, else half the coding-io pool (at least 1), so one session's long bash calls leave
 * the rest to others. Refused without `--coding-tools`.
 */
export function codingThreadsPerSession(options: CodingServeCliOptions): number | undefined {
  if (options.codingTools === undefined) {
    if (options.codingThreadsPerSession !== undefined) throw new UsageError("--coding-threads-per-session needs --coding-tools");
    return undefined;
  }
  return options.codingThreadsPerSession ?? Math.max(1, Math.floor(defaultIoThreads() / 2));
}
