import { readFile } from "node:fs/promises";

import { describeThrown } from "../errors.js";
import { unsendableTokenReason } from "../http/bearer-auth.js";
import { UsageError } from "./usage-error.js";

/** The environment variable a server's bearer token may come from. */
export const TOKEN_ENV = "TOOLPOOL_TOKEN";

interface BearerTokenSources {
  /** `--token` (visible in `ps`). */
  token?: string | undefined;
  tokenFile?: string | undefined;
  /** A config file's `token`, then its `tokenFile`: last, after `$TOOLPOOL_TOKEN`. */
  configToken?: string | undefined;
  configTokenFile?: string | undefined;
}

/**
 * The token from `--token`, `--token-file`, `$TOOLPOOL_TOKEN`, then a config file. One that is not visible ASCII
 * could never authenticate, so it is refused. The caller removes `$TOOLPOOL_TOKEN` before any worker starts.
 */
export async function readBearerToken(sources: BearerTokenSources): Promise<string | undefined> {
  const envToken = process.env[TOKEN_ENV];
  const token =
    sources.token ??
    (sources.tokenFile === undefined ? undefined : await readTokenFile(sources.tokenFile, "--token-file")) ??
    (envToken === undefined || envToken === "" ? undefined : envToken) ??
    sources.configToken ??
    (sources.configTokenFile === undefined ? undefined : await readTokenFile(sources.configTokenFile, "tokenFile"));
  const reason = token === undefined ? undefined : unsendableTokenReason(token);
  if (reason !== undefined) {
    throw new UsageError(
      `the bearer token ${reason}: clients send "Authorization: Bearer TOKEN" in visible ASCII (0x21–0x7E), so it could never match`,
    );
  }
  return token;
}

async function readTokenFile(path: string, where: string): Promise<string> {
  try {
    return (await readFile(path, "utf8")).trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(`cannot read ${where} ${path}: ${code === "ENOENT" ? "no such file" : describeThrown(error)}`, {
      cause: error,
    });
  }
}
