import { ToolpoolError } from "../errors.js";

/** Bad usage or invalid input exits 2 with one line on stderr; any other failure is a bug or the environment's (exit 1). */

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** Thrown for bad usage or invalid input; `main` prints `toolpool: <message>` on one line and exits with {@link EXIT_USAGE}. */
export class UsageError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "UsageError";
  }
}

/** `run --fail-on-error` once the batch was shown: `main` prints the message and exits with {@link EXIT_FAILURE}. */
export class CallsFailed extends Error {
  constructor(errors: number, calls: number) {
    super(`${errors} of ${calls} call${calls === 1 ? "" : "s"} ended in an error result (--fail-on-error)`);
    this.name = "CallsFailed";
  }
}

/** One line, as the contract promises: Node's messages (a `SyntaxError` in a module) or commander's hints may span several. */
export function toOneLine(message: string): string {
  return message
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .join(" ");
}

/** The runtime's, the server's and the built-in tools' option errors are, seen from the command line, invalid input. */
export function inputErrors<T>(create: () => T): T {
  try {
    return create();
  } catch (error) {
    throw toInputError(error);
  }
}

/** `TP_ERR_INVALID_OPTION`, `_TOOL` or `_BATCH` as a {@link UsageError}; anything else unchanged. */
export function toInputError(error: unknown): unknown {
  const isInputError =
    error instanceof ToolpoolError &&
    (error.code === "TP_ERR_INVALID_OPTION" || error.code === "TP_ERR_INVALID_TOOL" || error.code === "TP_ERR_INVALID_BATCH");
  return isInputError ? new UsageError(error.message, { cause: error }) : error;
}
