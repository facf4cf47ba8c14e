/**
 * The JSON body of the server's error answers, in a module of its own with
 * no Fastify in it: toolpool's public types include it, and must compile
 * where the optional fastify package is not installed.
 *
 * @module
 */

/** One failing part of a request body, as ajv reports it. */
export interface RequestBodyError {
  /** JSON Pointer into the body (`""` is the body itself). */
  path: string;
  /** What is wrong there. */
  message: string;
}

/**
 * The body of every error answer. `code` is stable: a toolpool code
 * (`TP_ERR_INVALID_BATCH` for a 400, `TP_ERR_QUEUE_FULL` for a 429,
 * `TP_ERR_CLOSED` or `TP_ERR_OVERLOADED` for a 503, `TP_ERR_UNAUTHORIZED`
 * for a 401, `TP_ERR_FORBIDDEN` for a 403, `TP_ERR_HEADERS_TIMEOUT` for the
 * 408 of a connection whose headers were too slow), and
 * Fastify's own for the errors Fastify raises (`FST_ERR_CTP_BODY_TOO_LARGE`
 * for a 413).
 */
export interface ErrorBody {
  statusCode: number;
  error: string;
  code?: string;
  message: string;
  /** Every problem of an invalid body (400). */
  errors?: RequestBodyError[];
}
