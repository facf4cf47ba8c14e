/** Bearer-token authentication, and the rule for a token clients can send at all. */
import { createHash, timingSafeEqual } from "node:crypto";

import { ToolpoolError } from "../errors.js";

/** Why `token` cannot be sent as a bearer token (clients send visible ASCII only), or `undefined`; never quotes the token. */
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

/** Throws `TP_ERR_INVALID_OPTION` when no client could send `token`: the server would refuse every request. */
export function checkBearerToken(token: string): void {
  const reason = unsendableTokenReason(token);
  if (reason === undefined) return;
  throw new ToolpoolError(
    "TP_ERR_INVALID_OPTION",
    `Expected \`token\` to be visible ASCII characters (0x21–0x7E), the only ones clients send in "Authorization: Bearer TOKEN"; got a token that ${reason}`,
  );
}

/** Constant-time check: both sides are hashed first, since `timingSafeEqual` needs equal lengths and comparing lengths leaks. */
export class BearerAuth {
  readonly #expected: Buffer;

  constructor(token: string) {
    checkBearerToken(token);
    this.#expected = digest(token);
  }

  isAuthorized(header: string | undefined): boolean {
    const match = header === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    // Compare even without a token, so a missing header takes as long as a wrong one.
    const presented = digest(match?.[1] ?? "");
    return timingSafeEqual(presented, this.#expected) && match !== null;
  }
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}
