/**
 * The HTTP stack, loaded on first use. Importing toolpool must not cost what
 * Fastify and prom-client take to load (about as long as the rest of the
 * package: see "Cold start" in docs/design.md), since most users of the runtime
 * never start a server. Both are CommonJS, so a synchronous
 * `require` keeps `createServer` synchronous.
 */
import { createRequire } from "node:module";

import type * as Fastify from "fastify";
import type * as PromClient from "prom-client";
import type UnderPressure from "@fastify/under-pressure";

const require = createRequire(import.meta.url);

export function loadFastify(): typeof Fastify {
  return require("fastify") as typeof Fastify;
}

export function loadPromClient(): typeof PromClient {
  return require("prom-client") as typeof PromClient;
}

export function loadUnderPressure(): typeof UnderPressure {
  return require("@fastify/under-pressure") as typeof UnderPressure;
}
