/**
 * The live view's link. The token goes in the fragment, which a browser never sends, so it stays out of request logs.
 * Only a token the server generated (and printed already) goes in: a given one is never written to stderr, often a log.
 */

/** How the server's token came about, for {@link describeLiveViewLink}. */
export type LinkedToken = { kind: "none" } | { kind: "generated"; token: string } | { kind: "given" };

/** The line, ending in a newline, with the live view's link of the server at `url`. */
export function describeLiveViewLink(prefix: string, url: string, token: LinkedToken): string {
  const page = `${url}/ui/`;
  if (token.kind === "none") return `${prefix}: live view: ${page}\n`;
  if (token.kind === "generated")
    return `${prefix}: live view, connected by this link (it holds the token): ${page}#token=${encodeURIComponent(token.token)}\n`;
  return `${prefix}: live view: ${page}#token=... (your token, URL-encoded, in place of ...: this server never prints a token it was given)\n`;
}
