/**
 * Bearer-token authentication of requests.
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";

/**
 * Checks `Authorization: Bearer TOKEN` headers against one token, in constant
 * time: both sides are hashed first, because `timingSafeEqual` needs equal
 * lengths and comparing lengths would leak the token's.
 */
export class BearerAuth {
  readonly #expected: Buffer;

  constructor(token: string) {
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
