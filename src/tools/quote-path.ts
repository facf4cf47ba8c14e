/**
 * Paths in the built-in tools' output, written so that no name can forge a
 * line. A file may be named `x.txt:1: FORGED⏎real.txt`; printed as it is,
 * a `grep` result would show a match that does not exist. So a path holding
 * a control character (or a quote or backslash, which would make the quoted
 * form ambiguous) is shown the way git shows such names (`core.quotePath`),
 * and the way `diff`'s headers already show them: in double quotes, with
 * C-style escapes (`\n`, `\t`, `\"`, `\\`, and octal UTF-8 bytes for the
 * others). Other non-ASCII characters are kept as they are.
 *
 * Loaded inside a worker thread; imports nothing.
 *
 * @module
 */

/**
 * What must not reach the output raw: C0 controls, DEL and C1 controls (line
 * breaks, carriage returns, terminal escapes), the Unicode line and paragraph
 * separators, and the bidirectional formatting characters that reorder how a
 * line is displayed.
 */
const unsafeInPath = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069"\\]/u;

/** The same set without quote and backslash, and without tab: what a free text (a file's line, a system message) may not hold raw. */
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

/** One character as a C-style escape: its name, or its UTF-8 bytes in octal. */
function escapeCharacter(ch: string): string {
  const named = namedEscapes[ch];
  if (named !== undefined) return named;
  let escaped = "";
  for (const byte of Buffer.from(ch, "utf8")) escaped += `\\${byte.toString(8).padStart(3, "0")}`;
  return escaped;
}

/**
 * `path` as it may appear in a tool's output: unchanged when it holds no
 * control character, quote or backslash; otherwise in double quotes with
 * C-style escapes, as git quotes paths.
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

/** Like {@link quotePath}, but always in double quotes: for a path set apart inside a sentence. */
export function quotePathAlways(path: string): string {
  const quoted = quotePath(path);
  return quoted.startsWith('"') ? quoted : `"${quoted}"`;
}

/**
 * `text` with its control characters (tab excepted) and line separators
 * written as C-style escapes, without quotes: for a line of a file shown in a
 * result, or a message from the system that may embed a path.
 */
export function escapeControlCharacters(text: string): string {
  return text.replace(unsafeInText, escapeCharacter);
}

/** An error's message with its control characters escaped (see {@link escapeControlCharacters}). */
export function messageOf(error: unknown): string {
  return escapeControlCharacters(error instanceof Error ? error.message : String(error));
}
