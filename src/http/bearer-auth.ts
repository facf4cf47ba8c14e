/**
 * Bearer-token authentication of requests, and the rule for a token that
 * clients can send at all.
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";

import { ToolpoolError } from "../errors.js";

/**
 * What makes `token` impossible to present in `Authorization: Bearer TOKEN`,
 * or `undefined` when nothing does. Clients send header values as visible
 * ASCII (0x21–0x7E) around whitespace: `fetch` refuses any other character,
 * and Node reads a header's bytes as Latin-1, so a token with `€` in it
 * could never match what arrives. Names the first offending character by
 * its code point and position, never the token itself.
 *
 * @example
 * ```ts
 * unsendableTokenReason("secret€token"); // "holds U+20AC at character 7, outside visible ASCII (0x21–0x7E)"
 * ```
 */
export function unsendableTokenReason(token: string): string | undefined {
  if (token === "") return "is empty";
  let position = 0;
  for (const character of token) {
    position += 1;
    const code = character.codePointAt(0)!;
    if (code >= 0x21 && code <= 0x7e) continue;
    const name = `U+${code.toString(16).toUpperCase().padStart(4, "0")}`;
    return /\s/u.test(character)
      ? `holds whitespace (${name} at character ${position})`
      : `holds ${name} at character ${position}, outside visible ASCII (0x21–0x7E)`;
  }
  return undefined;
}

/**
 * Throws `TP_ERR_INVALID_OPTION` when no client could send `token` (see
 * {@link unsendableTokenReason}): a server started with it would refuse
 * every request.
 */
export function checkBearerToken(token: string): void {
  const reason = unsendableTokenReason(token);
  if (reason === undefined) return;
  throw new ToolpoolError(
    "TP_ERR_INVALID_OPTION",
    `Expected \`token\` to be visible ASCII characters (0x21–0x7E), the only ones clients send in "Authorization: Bearer TOKEN"; got a token that ${reason}`,
  );
}

/**
 * Checks `Authorization: Bearer TOKEN` headers against one token, in constant
 * time: both sides are hashed first, because `timingSafeEqual` needs equal
 * lengths and comparing lengths would leak the token's.
 */
export class BearerAuth {
  readonly #expected: Buffer;

  /** Throws `TP_ERR_INVALID_OPTION` for a token no client could send (see {@link checkBearerToken}). */
  constructor(token: string) {
    checkBearerToken(token);
    this.#expected = digest(token);
  }

  /** Whether `header` (the raw `Authorization` value) carries the token. */
  isAuthorized(header: string | undefined): boolean {
    const match = header === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    // Compare even without a token, so that a missing header takes as long as a wrong one.
    const presented = digest(match?.[1] ?? "");
    return timingSafeEqual(presented, this.#expected) && match !== null;
  }
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}
