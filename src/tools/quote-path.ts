/**
 * Paths in the built-in tools' output, written so that no name can forge a
 * line (`x.txt:1: FORGED⏎real.txt`): a path holding a control character,
 * quote or backslash is quoted as git does (`core.quotePath`), with C-style
 * escapes and octal UTF-8 bytes; other non-ASCII characters are kept.
 *
 * @module
 */

/** C0, DEL, C1, Unicode line separators and bidi formatting characters (which reorder a displayed line). */
const unsafeInPath = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069"\\]/u;

/** Without quote, backslash and tab: what free text (a file's line, a message) may not hold raw. */
const unsafeInText = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029]/gu;

const namedEscapes: Readonly<Record<string, string>> = {
  "\u0007": "\\a",
  "\b": "\\b",
  "\t": "\\t",
  "\n": "\\n",
  "\u000b": "\\v",
  "\f": "\\f",
  "\r": "\\r",
  '"': '\\"',
  "\\": "\\\\",
};

function escapeCharacter(ch: string): string {
  const named = namedEscapes[ch];
  if (named !== undefined) return named;
  let escaped = "";
  for (const byte of Buffer.from(ch, "utf8")) escaped += `\\${byte.toString(8).padStart(3, "0")}`;
  return escaped;
}

/**
 * `path` as it may appear in a tool's output: unchanged, or quoted with
 * C-style escapes as git quotes paths.
 *
 * @example
 * ```ts
 * quotePath("src/a.ts"); // src/a.ts
 * quotePath("x.txt:1: FORGED\nreal.txt"); // "x.txt:1: FORGED\nreal.txt" (one line, with a backslash and an n)
 * ```
 */
export function quotePath(path: string): string {
  if (!unsafeInPath.test(path)) return path;
  let quoted = '"';
  for (const ch of path) quoted += unsafeInPath.test(ch) ? escapeCharacter(ch) : ch;
  return `${quoted}"`;
}

/** Always in double quotes: for a path set apart inside a sentence. */
export function quotePathAlways(path: string): string {
  const quoted = quotePath(path);
  return quoted.startsWith('"') ? quoted : `"${quoted}"`;
}

/** Escapes control characters (tab excepted) and line separators, without quotes: for a file's line or a message. */
export function escapeControlCharacters(text: string): string {
  return text.replace(unsafeInText, escapeCharacter);
}

export function messageOf(error: unknown): string {
  return escapeControlCharacters(error instanceof Error ? error.message : String(error));
}
