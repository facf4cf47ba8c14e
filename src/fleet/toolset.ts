import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import type { PiVersion } from "../options.js";
import type { WorkerTool } from "../contracts/worker-tool.js";

/** Part of every toolset hash, so that two protocol versions never share a queue. 4: an end envelope may carry `repeats`. */
export const fleetProtocolVersion = 4;

export interface Toolset {
  /** sha256 over every fingerprint, the pi, the protocol version and Node's major version. */
  readonly hash: string;
  readonly pi: PiVersion;
  readonly fingerprints: ReadonlyMap<string, string>;
}

/**
 * What decides how a call runs on a node must be equal on both sides: name, export, mode, limits, idempotence, schema,
 * and the module file's bytes (not the modules it imports; `prepareArguments` runs on the coordinator only). Node's
 * major version counts, since arguments cross as `v8.serialize` bytes; so does the pi, so that a fleet speaks one pi
 * and a mismatch ends `TP_ERR_TOOL_MISMATCH`.
 */
export function describeToolset(tools: readonly WorkerTool[], pi: PiVersion): Toolset {
  const fingerprints = new Map<string, string>();
  for (const tool of tools) fingerprints.set(tool.name, fingerprintTool(tool));
  const hash = sha256(
    canonicalJson({
      protocol: fleetProtocolVersion,
      node: process.versions.node.split(".")[0],
      pi,
      tools: [...fingerprints].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    }),
  );
  return Object.freeze({ hash, pi, fingerprints });
}

function fingerprintTool(tool: WorkerTool): string {
  let moduleHash: string;
  try {
    moduleHash = sha256(readFileSync(fileURLToPath(tool.moduleUrl)));
  } catch {
    // Fails every call with TP_ERR_TOOL_LOAD on a node, as locally: both sides agree that it is missing.
    moduleHash = "unreadable";
  }
  return sha256(
    canonicalJson({
      name: tool.name,
      exportName: tool.exportName,
      executionMode: tool.executionMode ?? null,
      timeoutMs: tool.timeoutMs ?? null,
      maxResultBytes: tool.maxResultBytes ?? null,
      resourceLimits: tool.resourceLimits ?? null,
      idempotent: tool.idempotent,
      parameters: tool.parameters,
      module: moduleHash,
    }),
  );
}

function sha256(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Sorted keys at every level, so equal values give equal text. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, field: unknown) => {
    if (typeof field !== "object" || field === null || Array.isArray(field)) return field;
    return Object.fromEntries(Object.entries(field).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}
