// Placeholder until the pi-schema validation module lands; replaced on merge.
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

import type { JsonSchema } from "../types.js";
import { formatReceivedArguments } from "./received-arguments.js";

interface Parser {
  parse(value: unknown): { ok: true; value: unknown } | { ok: false; errors: { path: string; message: string }[] };
}
let piSchema: { compile(schema: unknown, options: unknown): Parser; formats: unknown } | undefined;
function load() {
  if (piSchema === undefined) {
    const require = createRequire(import.meta.url);
    const main = require(fileURLToPath(import.meta.resolve("@earendil-works/pi-schema")));
    const formats = require(fileURLToPath(import.meta.resolve("@earendil-works/pi-schema/formats")));
    piSchema = { compile: main.compile, formats: formats.formats };
  }
  return piSchema;
}
const validators = new WeakMap<object, Parser>();
export function compileArgumentValidator16(schema: JsonSchema): Parser {
  let validator = validators.get(schema);
  if (validator === undefined) {
    const lib = load();
    validator = lib.compile(schema, { formats: lib.formats, coerce: true, unresolvedRefs: "reject" });
    validators.set(schema, validator);
  }
  return validator;
}
function dotted(pointer: string): string {
  if (pointer === "") return "root";
  return pointer.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~")).join(".");
}
export function validateToolArguments16(toolName: string, schema: JsonSchema, args: unknown, argumentsError?: unknown): unknown {
  if (argumentsError) throw new Error(`Invalid arguments for tool "${toolName}": ${String(argumentsError)}`);
  const result = compileArgumentValidator16(schema).parse(structuredClone(args));
  if (result.ok) return result.value;
  const lines = result.errors.map((error) => `  - ${dotted(error.path)}: ${error.message}`).join("\n");
  throw new Error(`Validation failed for tool "${toolName}":\n${lines}\n\nReceived arguments:\n${formatReceivedArguments(args)}`);
}
