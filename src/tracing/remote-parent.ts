/** The worker side of trace propagation: a worker is a separate realm, so its tools' spans nest only under its own OTel set-up. */
import { loadOtelApi } from "./otel-api.js";
import { parseTraceparent } from "./traceparent.js";

/** Without `@opentelemetry/api`, just runs `fn`. */
export function runWithRemoteParent<T>(traceparent: string, fn: () => T): T {
  const api = loadOtelApi();
  const spanContext = api === undefined ? undefined : parseTraceparent(traceparent);
  if (api === undefined || spanContext === undefined) return fn();
  return api.context.with(api.trace.setSpanContext(api.context.active(), spanContext), fn);
}
