/**
 * Built-in worker tool `hash`: hex digest of a file or of a text. Runs in a
 * worker; synchronous reads on purpose (see diff.ts).
 *
 * @module
 */

import { createHash } from "node:crypto";
import { closeSync, readSync } from "node:fs";
import type { AgentToolResult, JsonSchema, WorkerToolContext } from "../types.js";
import { quotePath } from "./quote-path.js";
import { openRegularFile } from "./regular-file.js";
import { resolveInWorkspace, workspaceFromModuleUrl, type Workspace } from "./workspace.js";

const HASH_ALGORITHMS = ["sha256", "sha1", "md5"] as const;
type HashAlgorithm = (typeof HASH_ALGORITHMS)[number];

/** The signal is checked between chunks. */
const CHUNK_BYTES = 1024 * 1024;
const PROGRESS_INTERVAL_MS = 200;

interface HashArgs {
  text?: string;
  path?: string;
  algorithm?: HashAlgorithm;
}

interface HashDetails {
  algorithm: HashAlgorithm;
  /** "" in progress updates. */
  hex: string;
  bytes: number;
}

export const hashSpec = {
  name: "hash",
  label: "Hash",
  description:
    'Compute the hex digest (sha256, sha1 or md5; default sha256) of a file ("path") or of a UTF-8 text ("text"). ' +
    "Give exactly one of text or path.",
  parameters: {
    type: "object",
    properties: {
      text: { type: "string", description: "Text to hash (UTF-8)." },
      path: { type: "string", description: "File to hash." },
      algorithm: { type: "string", enum: [...HASH_ALGORITHMS], description: 'Digest algorithm (default "sha256").' },
    },
    additionalProperties: false,
  },
} as const satisfies { name: string; label: string; description: string; parameters: JsonSchema };

/** Streams files in chunks, checking `ctx.signal` between them and throttling progress updates. */
export const execute = createHashTool(workspaceFromModuleUrl(import.meta.url));

export function createHashTool(workspace: Workspace): (args: HashArgs, ctx: WorkerToolContext<HashDetails>) => Promise<AgentToolResult<HashDetails>> {
  return (args, ctx) => executeHash(workspace, args, ctx);
}

async function executeHash(workspace: Workspace, args: HashArgs, ctx: WorkerToolContext<HashDetails>): Promise<AgentToolResult<HashDetails>> {
  const { signal } = ctx;
  signal.throwIfAborted();

  const hasText = args.text !== undefined;
  const hasPath = args.path !== undefined;
  if (hasText === hasPath) throw new Error('hash: give exactly one of "text" or "path"');
  const algorithm = args.algorithm ?? "sha256";
  if (!(HASH_ALGORITHMS as readonly string[]).includes(algorithm)) {
    throw new Error(`hash: unknown algorithm ${JSON.stringify(algorithm)}; use one of ${HASH_ALGORITHMS.join(", ")}`);
  }

  const hash = createHash(algorithm);
  let bytes: number;
  let label: string;
  if (args.text !== undefined) {
    const buf = Buffer.from(args.text, "utf8");
    hash.update(buf);
    bytes = buf.length;
    label = "(text)";
  } else {
    label = quotePath(args.path!);
    bytes = hashFile(resolveInWorkspace(workspace, "hash", "path", args.path!, "file"), label, hash, algorithm, ctx);
  }
  signal.throwIfAborted();

  const hex = hash.digest("hex");
  return {
    content: [{ type: "text", text: `${algorithm} ${hex}  ${label}` }],
    details: { algorithm, hex, bytes },
  };
}

/** `path` is how messages name the file (quoted already). */
function hashFile(
  realPath: string,
  path: string,
  hash: ReturnType<typeof createHash>,
  algorithm: HashAlgorithm,
  ctx: WorkerToolContext<HashDetails>,
): number {
  const { fd, stats: info } = openRegularFile(realPath, `hash: ${path}`);
  try {
    // Sized to the file: most are small, and a full-size buffer per call is garbage.
    const chunkBytes = Math.max(1, Math.min(CHUNK_BYTES, info.size));
    const buf = Buffer.allocUnsafe(chunkBytes);
    let total = 0;
    let nextUpdate = performance.now() + PROGRESS_INTERVAL_MS;
    for (;;) {
      ctx.signal.throwIfAborted();
      const bytesRead = readSync(fd, buf, 0, chunkBytes, null);
      if (bytesRead === 0) return total;
      hash.update(buf.subarray(0, bytesRead));
      total += bytesRead;
      const now = performance.now();
      if (now >= nextUpdate) {
        nextUpdate = now + PROGRESS_INTERVAL_MS;
        ctx.onUpdate({
          content: [{ type: "text", text: `hash: ${algorithm} of ${path}: ${formatMiB(total)} hashed` }],
          details: { algorithm, hex: "", bytes: total },
        });
      }
    }
  } finally {
    closeSync(fd);
  }
}

function formatMiB(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
