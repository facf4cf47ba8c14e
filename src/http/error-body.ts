/** The error answers' JSON body, free of Fastify: public types include it and must compile without the optional package. */

export interface RequestBodyError {
  /** JSON Pointer into the body (`""` is the body itself). */
  path: string;
  message: string;
}

/** The body of every error answer; `code` is stable: a `TP_ERR_*` code, or Fastify's own (`FST_ERR_CTP_BODY_TOO_LARGE`). */
export interface ErrorBody {
  statusCode: number;
  error: string;
  code?: string;
  message: string;
  /** Every problem of an invalid body (400). */
  errors?: RequestBodyError[];
}
