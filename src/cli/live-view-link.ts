/**
 * The link `toolpool serve` prints to its live view. The token goes in the
 * fragment (`/ui/#token=…`): a browser never sends a fragment to the server,
 * so it stays out of request lines and logs, and the page removes it from
 * the address bar as it connects. Only a token the server generated, and
 * printed already, goes into the link: one the operator gave (a file, the
 * environment) is never written to the server's stderr, which is often its
 * log; its link shows where to put it, as Jupyter shows a token it did not
 * make.
 *
 * @module
 */

/** How the server's token came about, for {@link describeLiveViewLink}. */
export type LinkedToken = { kind: "none" } | { kind: "generated"; token: string } | { kind: "given" };

/** The line (ending in a newline) that shows the live view's link of the server at `url` (`http://HOST:PORT`). */
export function describeLiveViewLink(prefix: string, url: string, token: LinkedToken): string {
  const page = `${url}/ui/`;
  if (token.kind === "none") return `${prefix}: live view: ${page}\n`;
  if (token.kind === "generated")
    return `${prefix}: live view, connected by this link (it holds the token): ${page}#token=${encodeURIComponent(token.token)}\n`;
  return `${prefix}: live view: ${page}#token=... (your token, URL-encoded, in place of ...: this server never prints a token it was given)\n`;
}
