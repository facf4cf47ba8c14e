/**
 * The worker side of trace propagation: a call whose task carries a
 * `traceparent` runs with that span context active, so that a tool using
 * `@opentelemetry/api` in its thread starts spans as children of the call's
 * span (given the thread has a tracer provider and a context manager of its
 * own: a worker thread is a separate realm and shares none of the main
 * thread's OpenTelemetry set-up).
 *
 * @module
 */
import { loadOtelApi } from "./otel-api.js";
import { parseTraceparent } from "./traceparent.js";

/** Runs `fn` with the span context of `traceparent` as the active context; just runs it without `@opentelemetry/api`. */
export function runWithRemoteParent<T>(traceparent: string, fn: () => T): T {
  const api = loadOtelApi();
  const spanContext = api === undefined ? undefined : parseTraceparent(traceparent);
  if (api === undefined || spanContext === undefined) return fn();
  return api.context.with(api.trace.setSpanContext(api.context.active(), spanContext), fn);
}
