import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import type { PiVersion } from "../options.js";
import type { WorkerTool } from "../contracts/worker-tool.js";

/**
 * The version of the coordinator–node protocol; part of every toolset hash,
 * so that coordinators and nodes of two versions never share a queue. 4: an
 * end envelope may carry `repeats`.
 */
export const fleetProtocolVersion = 4;

/** The worker tools a coordinator sends to the fleet, or a node serves, with their fingerprints. */
export interface Toolset {
  /** sha256 (hex) over every tool's fingerprint, the pi, the protocol version and Node's major version. */
  readonly hash: string;
  /** The pi whose rules the coordinator follows, or whose coordinators the node serves. */
  readonly pi: PiVersion;
  /** Fingerprint of each tool, by name. */
  readonly fingerprints: ReadonlyMap<string, string>;
}

/**
 * Fingerprints worker tools under a pi: what decides how a call runs on a
 * node must be the same on both sides. Covered: name, export, execution mode,
 * time and size limits, heap limits, idempotence, the parameters schema, and
 * the bytes of the tool's module file (read from each side's own path: paths
 * differ across hosts, content must not). Not covered: modules the tool's
 * module imports in turn. `prepareArguments` runs in the coordinator only.
 *
 * Node's major version is part of the hash: arguments and results cross as
 * `v8.serialize` bytes, whose format only one major version is sure to read.
 *
 * The pi is part of the hash so that a fleet speaks one pi: a coordinator
 * following pi 1.6 and a node started for pi 0.73 (or the other way round)
 * listen on different queues, and the call ends `TP_ERR_TOOL_MISMATCH`. The
 * rules themselves run on the coordinator; the node's choice is its promise
 * to serve that pi's coordinators only, on a Node that pi runs on.
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
    // A module that cannot be read fails every call with TP_ERR_TOOL_LOAD on a
    // node, as locally; both sides agree that it is missing.
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

/** JSON with object keys sorted at every level, so equal values give equal text. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, field: unknown) => {
    if (typeof field !== "object" || field === null || Array.isArray(field)) return field;
    return Object.fromEntries(Object.entries(field).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}
