import { createRequire } from "node:module";

import type { Ajv, ErrorObject, ValidateFunction } from "ajv";

import { compiledValidator } from "../compiled-validators.js";
import { describeThrown, describeValue, ToolpoolError } from "../errors.js";
import type { ToolDefinition } from "../options.js";
import type { AgentTool, JsonSchema } from "../types.js";
import { isWorkerTool, type WorkerTool } from "../contracts/worker-tool.js";

/** A registered tool: where its execute runs decides how the coordinator calls it. */
export type RegisteredTool = { kind: "inline"; tool: AgentTool } | { kind: "worker"; tool: WorkerTool };

/**
 * The tools of a runtime by name. Checks every definition once; its schema
 * is checked and compiled by {@link compileToolSchemas}.
 */
export function createToolRegistry(tools: readonly ToolDefinition[]): ReadonlyMap<string, RegisteredTool> {
  const registry = new Map<string, RegisteredTool>();
  tools.forEach((tool, index) => {
    const entry = registerTool(tool, index);
    if (registry.has(entry.tool.name)) {
      throw new ToolpoolError("TP_ERR_INVALID_TOOL", `Two tools are named "${entry.tool.name}"; tool names must be unique`);
    }
    registry.set(entry.tool.name, entry);
  });
  return registry;
}

function registerTool(tool: ToolDefinition, index: number): RegisteredTool {
  const where = `tools[${index}]`;
  if (isWorkerTool(tool)) {
    return { kind: "worker", tool };
  }
  if (typeof tool !== "object" || tool === null) {
    throw invalid(`Expected \`${where}\` to be a pi AgentTool or a workerTool(...) definition`, tool);
  }
  const candidate = tool as Partial<AgentTool>;
  if (typeof candidate.name !== "string" || candidate.name.length === 0) {
    throw invalid(`Expected \`${where}.name\` to be a non-empty string`, candidate.name);
  }
  if (typeof candidate.execute !== "function") {
    throw invalid(`Expected \`${where}.execute\` of tool "${candidate.name}" to be a function`, candidate.execute);
  }
  if (typeof candidate.parameters !== "object" || candidate.parameters === null) {
    throw invalid(`Expected \`${where}.parameters\` of tool "${candidate.name}" to be a JSON Schema object`, candidate.parameters);
  }
  return { kind: "inline", tool: tool as AgentTool };
}

/**
 * Checks every registered tool's schema and compiles its validator up front
 * (with `compile`, the batch's pi's), so that a bad schema fails at
 * `createRuntime`, not in the middle of a batch. Each schema is first checked
 * against the JSON Schema meta-schema: TypeBox compiles nearly anything
 * (`{ type: "nonsense" }` would fail every call with "Unknown validation
 * error"), and a broken schema is the definition's fault.
 */
export function compileToolSchemas(registry: ReadonlyMap<string, RegisteredTool>, compile: (schema: JsonSchema) => void): void {
  for (const { tool } of registry.values()) compileSchema(tool.name, tool.parameters, compile);
}

function compileSchema(name: string, schema: JsonSchema, compile: (schema: JsonSchema) => void): void {
  try {
    checkAgainstMetaSchema(schema);
    compile(schema);
  } catch (error) {
    throw new ToolpoolError("TP_ERR_INVALID_TOOL", `The parameters schema of tool "${name}" does not compile: ${describeThrown(error)}`, {
      cause: error,
    });
  }
}

function invalid(expectation: string, received: unknown): ToolpoolError {
  return new ToolpoolError("TP_ERR_INVALID_TOOL", `${expectation}, got ${describeValue(received)}`);
}

/**
 * Throws, with ajv's `errorsText`, unless `schema` is valid against the
 * meta-schema its `$schema` names, as ajv (`strict: false`) decides. JSON
 * Schema 2020-12 and 2019-09 are checked by ajv's classes for them, draft-06
 * by ajv with that meta-schema added, and draft-07, a schema without
 * `$schema`, or one naming a meta-schema ajv does not ship (draft-04, whose
 * boolean `exclusiveMinimum`/`exclusiveMaximum` are left out of the check; a
 * meta-schema of one's own) by draft-07's meta-schema, compiled at build
 * time. The address is read as JSON Schema writes it in the wild: `http` or
 * `https`, with or without the empty fragment (`#`). pi checks no
 * meta-schema and validates with every one of these: toolpool's check only
 * refuses a schema that is malformed under its own draft.
 */
function checkAgainstMetaSchema(schema: Record<string, unknown>): void {
  const declared = schema.$schema;
  if (declared !== undefined && typeof declared !== "string") throw new Error(`$schema must be a string, got ${describeValue(declared)}`);
  const draft = declared === undefined ? "draft-07" : draftOf(declared);
  if (draft === "draft-07" || draft === "draft-04") {
    // The compiled validator checks `$schema` as a string and looks nothing up by it.
    const validate = compiledValidator("json-schema-draft-07");
    // Draft-04's boolean exclusiveMinimum/exclusiveMaximum are draft-07's numbers: not checked.
    if (!validate(draft === "draft-04" ? withoutBooleanExclusives(schema) : schema)) throw new Error(errorsText(validate.errors));
    return;
  }
  const validate = metaSchemaValidator(draft);
  if (!validate(schema)) throw new Error(errorsText(validate.errors));
}

/** The drafts whose meta-schemas ajv checks against, by their canonical address. */
const metaSchemaAddresses = {
  "2020-12": "https://json-schema.org/draft/2020-12/schema",
  "2019-09": "https://json-schema.org/draft/2019-09/schema",
  "draft-06": "http://json-schema.org/draft-06/schema",
  "draft-07": "http://json-schema.org/draft-07/schema",
} as const;
type Draft = keyof typeof metaSchemaAddresses;

/** An address without its scheme and empty fragment: `http` and `https`, with or without `#`, name one meta-schema. */
function addressPath(address: string): string {
  return address.replace(/^https?:\/\//, "").replace(/#$/, "");
}

const draft04Path = "json-schema.org/draft-04/schema";

/** The draft a `$schema` address names: draft-04, or one ajv has a meta-schema for; draft-07 for any other address. */
function draftOf(address: string): Draft | "draft-04" {
  const path = addressPath(address);
  if (path === draft04Path) return "draft-04";
  for (const [draft, canonical] of Object.entries(metaSchemaAddresses)) {
    if (addressPath(canonical) === path) return draft as Draft;
  }
  return "draft-07";
}

/** A copy of `node` without the boolean `exclusiveMinimum` and `exclusiveMaximum` of draft-04, at any depth. */
function withoutBooleanExclusives(node: unknown, copies = new WeakMap<object, unknown>()): unknown {
  if (typeof node !== "object" || node === null) return node;
  const known = copies.get(node);
  if (known !== undefined) return known;
  if (Array.isArray(node)) {
    const copy: unknown[] = [];
    copies.set(node, copy);
    for (const item of node) copy.push(withoutBooleanExclusives(item, copies));
    return copy;
  }
  const copy: Record<string, unknown> = {};
  copies.set(node, copy);
  for (const [key, value] of Object.entries(node)) {
    if ((key === "exclusiveMinimum" || key === "exclusiveMaximum") && typeof value === "boolean") continue;
    copy[key] = withoutBooleanExclusives(value, copies);
  }
  return copy;
}

/** Meta-schema validators beyond draft-07's, each made (with its ajv) on first use. */
const metaSchemaValidators = new Map<Draft, ValidateFunction>();

function metaSchemaValidator(draft: Exclude<Draft, "draft-07">): ValidateFunction {
  let validate = metaSchemaValidators.get(draft);
  if (validate === undefined) {
    const load = createRequire(import.meta.url);
    const options = { strict: false, validateSchema: false } as const;
    let ajv: Ajv;
    if (draft === "2020-12") ajv = new (load("ajv/dist/2020").Ajv2020 as typeof Ajv)(options);
    else if (draft === "2019-09") ajv = new (load("ajv/dist/2019").Ajv2019 as typeof Ajv)(options);
    else {
      ajv = new (load("ajv").Ajv as typeof Ajv)(options);
      ajv.addMetaSchema(load("ajv/dist/refs/json-schema-draft-06.json") as object);
    }
    validate = ajv.getSchema(metaSchemaAddresses[draft]);
    if (validate === undefined) throw new Error(`ajv has no meta-schema ${metaSchemaAddresses[draft]}`);
    metaSchemaValidators.set(draft, validate);
  }
  return validate;
}

/** ajv's `errorsText` with its default separator and data name. */
function errorsText(errors: ErrorObject[] | null | undefined): string {
  if (errors === null || errors === undefined || errors.length === 0) return "No errors";
  return errors.map((error) => `data${error.instancePath} ${error.message}`).join(", ");
}
