import { ToolpoolError } from "../errors.js";

/**
 * The error of the command line's second channel: bad usage or unreadable /
 * invalid input. It exits with code 2 and one line on stderr, where any other
 * failure is a bug or an environment problem (exit 1).
 *
 * @module
 */

/** Exit code of a batch that ran, error results included. */
export const EXIT_OK = 0;
/** Exit code of an unexpected failure (a bug, a broken pipe, …). */
export const EXIT_FAILURE = 1;
/** Exit code of bad usage or unreadable / invalid input. */
export const EXIT_USAGE = 2;

/**
 * Thrown for bad usage or invalid input; `main` prints `toolpool: <message>`
 * on one line and exits with {@link EXIT_USAGE}.
 *
 * @example
 * ```ts
 * throw new UsageError(`cannot read batch file ${path}: no such file`);
 * ```
 */
export class UsageError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "UsageError";
  }
}

/**
 * Thrown by `run --fail-on-error` once the batch ran and was shown, when any
 * call ended in an error result: `main` prints `toolpool: <message>` and
 * exits with {@link EXIT_FAILURE}.
 */
export class CallsFailed extends Error {
  constructor(errors: number, calls: number) {
    super(`${errors} of ${calls} call${calls === 1 ? "" : "s"} ended in an error result (--fail-on-error)`);
    this.name = "CallsFailed";
  }
}

/**
 * Folds a message onto one line: the contract promises exactly one line on
 * stderr, and messages from Node (a `SyntaxError` in an imported module) or
 * commander (a "Did you mean" hint) may span several.
 */
export function toOneLine(message: string): string {
  return message
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .join(" ");
}

/**
 * Runs `create`; the runtime's, the server's and the built-in tools' option
 * errors are, seen from the command line, invalid input.
 */
export function inputErrors<T>(create: () => T): T {
  try {
    return create();
  } catch (error) {
    throw toInputError(error);
  }
}

/**
 * A `TP_ERR_INVALID_OPTION`, `TP_ERR_INVALID_TOOL` or `TP_ERR_INVALID_BATCH` error as a
 * {@link UsageError} with its message; any other thrown value unchanged.
 * For errors that arrive as rejections (see {@link inputErrors}).
 */
export function toInputError(error: unknown): unknown {
  const isInputError =
    error instanceof ToolpoolError &&
    (error.code === "TP_ERR_INVALID_OPTION" || error.code === "TP_ERR_INVALID_TOOL" || error.code === "TP_ERR_INVALID_BATCH");
  return isInputError ? new UsageError(error.message, { cause: error }) : error;
}
