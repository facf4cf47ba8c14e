import { createRequire } from "node:module";

import type { Ajv, ErrorObject } from "ajv";

import { compiledValidator } from "../compiled-validators.js";
import { describeThrown, describeValue, ToolpoolError } from "../errors.js";
import type { ToolDefinition } from "../options.js";
import type { AgentTool, JsonSchema } from "../types.js";
import { isWorkerTool, type WorkerTool } from "../worker-tool.js";

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
 * Throws, with ajv's `errorsText`, unless `schema` is valid against its
 * meta-schema, as `new Ajv({ strict: false }).validateSchema(schema)` decides.
 * A schema without `$schema` (draft-07, ajv's default) takes the meta-schema
 * validator compiled at build time; one naming its own `$schema` takes ajv
 * itself, loaded then.
 */
function checkAgainstMetaSchema(schema: Record<string, unknown>): void {
  if (schema.$schema === undefined) {
    const validate = compiledValidator("json-schema-draft-07");
    if (!validate(schema)) throw new Error(errorsText(validate.errors));
    return;
  }
  metaSchemaAjv ??= new (createRequire(import.meta.url)("ajv").Ajv as typeof Ajv)({ strict: false, validateSchema: true });
  if (!metaSchemaAjv.validateSchema(schema)) throw new Error(metaSchemaAjv.errorsText(metaSchemaAjv.errors));
}

let metaSchemaAjv: Ajv | undefined;

/** ajv's `errorsText` with its default separator and data name. */
function errorsText(errors: ErrorObject[] | null | undefined): string {
  if (errors === null || errors === undefined || errors.length === 0) return "No errors";
  return errors.map((error) => `data${error.instancePath} ${error.message}`).join(", ");
}
