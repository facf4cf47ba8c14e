/**
 * The HTTP stack loads on first use, since most users of the runtime never start a server ("Cold start" in docs/design.md).
 * Both are CommonJS, so a synchronous `require` keeps `createServer` synchronous.
 */
import type * as Fastify from "fastify";
import type * as PromClient from "prom-client";
import type UnderPressure from "@fastify/under-pressure";

import { requireOptional } from "../optional-packages.js";

// Optional peer dependencies: a missing one throws TP_ERR_MISSING_PACKAGE with the install line.
export function loadFastify(): typeof Fastify {
  return requireOptional("server", "fastify");
}

export function loadPromClient(): typeof PromClient {
  return requireOptional("server", "prom-client");
}

export function loadUnderPressure(): typeof UnderPressure {
  return requireOptional("server", "@fastify/under-pressure");
}
