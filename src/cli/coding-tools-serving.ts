/**
 * What `toolpool serve` and `toolpool mcp --http` require before they serve
 * pi's coding tools: a bearer token when the tools can run commands or write
 * files (generated and shown to the operator when none is given), and, for
 * `serve`, a `--root` under which each session's folder lies. See
 * docs/coding-tools.md, "Serving them".
 *
 * @module
 */
import { randomBytes } from "node:crypto";

import { InvalidArgumentError, Option } from "commander";

import { defaultIoThreads } from "../coding-tools.js";
import { TOKEN_ENV } from "./bearer-token.js";
import { UsageError } from "./usage-error.js";

/** pi's coding tools that run commands or write files: served, they make the server a shell for whoever reaches it. */
const commandOrWriteTools: readonly string[] = ["bash", "edit", "write"];

/** What `--coding-tools` alone serves: pi's default four. */
const defaultCodingTools: readonly string[] = ["read", "bash", "edit", "write"];

/** The options of a server that may serve coding tools, as commander hands them over. */
export interface CodingServeCliOptions {
  codingTools?: true | string[];
  /** `--unsafe-no-token`. */
  unsafeNoToken?: boolean;
  /** `--coding-threads-per-session`. */
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

/** The served coding tools, out of `--coding-tools`, that run commands or write files. */
export function commandOrWriteToolsOf(codingTools: true | string[] | undefined): string[] {
  if (codingTools === undefined) return [];
  return (codingTools === true ? defaultCodingTools : codingTools).filter((name) => commandOrWriteTools.includes(name));
}

/** The server's token: the one given, one generated for it, or none. */
export interface ServedToken {
  token: string | undefined;
  /** The token was generated here: the operator must be shown it. */
  isGenerated: boolean;
}

/**
 * The token a server of `options`' tools runs with. A server whose coding
 * tools run commands or write files (bash, edit, write) is a shell for
 * whoever reaches it, loopback included (any local user, program or
 * container sharing the network namespace): without a token given it gets a
 * generated one (32 random bytes, base64url), unless `--unsafe-no-token`
 * says to serve without. `--unsafe-no-token` is refused where it could not
 * apply: beside a token, or with no such tool served.
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

/**
 * The lines that show the operator a generated token (on stderr, as Jupyter
 * shows its own), with where to send it; `prefix` names the command.
 */
export function describeGeneratedToken(prefix: string, token: string, url: string, codingTools: true | string[] | undefined): string {
  const tools = commandOrWriteToolsOf(codingTools).join(", ");
  return [
    `${prefix}: ${tools} run commands or write files as this user, so every request needs a bearer token, even on loopback.`,
    `${prefix}: generated one (set your own with --token-file or $${TOKEN_ENV}; --unsafe-no-token serves without one). Send it to ${url} as:`,
    `${prefix}:     Authorization: Bearer ${token}`,
    "",
  ].join("\n");
}

/**
 * `serve --coding-tools` needs a root: every batch without a session key runs
 * in the root itself, and each session in a folder under it, so the current
 * folder (where the server happened to start) is never a workspace by accident.
 */
export function requireCodingRoot(codingTools: true | string[] | undefined, root: string | undefined): void {
  if (codingTools !== undefined && root === undefined) {
    throw new UsageError(
      "--coding-tools needs --root DIR: each session (X-Toolpool-Session or sessionKey) works in a folder of its own under DIR, and batches without one in DIR itself",
    );
  }
}

/**
 * The servers' share of the coding-io pool per session: `--coding-threads-per-session`,
 * else half of the pool's threads (at least 1), so that one session's long
 * bash calls leave the other half to the other sessions. Refused without
 * `--coding-tools`, where it would change nothing.
 */
export function codingThreadsPerSession(options: CodingServeCliOptions): number | undefined {
  if (options.codingTools === undefined) {
    if (options.codingThreadsPerSession !== undefined) throw new UsageError("--coding-threads-per-session needs --coding-tools");
    return undefined;
  }
  return options.codingThreadsPerSession ?? Math.max(1, Math.floor(defaultIoThreads() / 2));
}
