/**
 * pi's edit `operations`, refusing to overwrite a file changed on disk after
 * the edit read it. The write re-checks the file's identity (dev, inode,
 * size, ns times), and its bytes when the change is too recent for coarse
 * file-system clocks ({@link coarseWindowNs}). Pool edits also hold the
 * path's lock (`path-locks.ts`): a check is not compare-and-swap.
 * @module
 */
import { constants } from "node:fs";
import { access, readFile, stat, writeFile } from "node:fs/promises";

/** pi's `EditOperations`. */
interface EditOperations {
  readFile(absolutePath: string): Promise<Buffer>;
  writeFile(absolutePath: string, content: string): Promise<void>;
  access(absolutePath: string): Promise<void>;
}

interface Identity {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

interface ReadRecord {
  identity: Identity;
  readAtNs: bigint;
  bytes: Buffer;
}

/** FAT's 2 s granularity. */
const coarseWindowNs = 2_000_000_000n;

async function identityOf(path: string): Promise<Identity> {
  const { dev, ino, size, mtimeNs, ctimeNs } = await stat(path, { bigint: true });
  return { dev, ino, size, mtimeNs, ctimeNs };
}

function isSame(a: Identity, b: Identity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

async function isUnchanged(path: string, read: ReadRecord): Promise<boolean> {
  const now = await identityOf(path).catch(() => undefined);
  if (now === undefined || !isSame(read.identity, now)) return false;
  if (read.readAtNs - read.identity.ctimeNs >= coarseWindowNs) return true;
  return (await readFile(path)).equals(read.bytes);
}

function changedOnDiskMessage(path: string): string {
  return `File ${path} was changed on disk after the edit read it; nothing was written. Read it again and redo the edit against what it holds now.`;
}

/**
 * Edit operations for one call. `path`: as the caller named it, for the
 * refusal's message (pi names paths as given).
 */
export function checkedEditOperations(
  path?: string,
  io: Pick<EditOperations, "readFile" | "writeFile"> = { readFile, writeFile: (file, content) => writeFile(file, content, "utf-8") },
): EditOperations {
  const reads = new Map<string, ReadRecord>();
  return {
    access: (absolutePath) => access(absolutePath, constants.R_OK | constants.W_OK),
    async readFile(absolutePath) {
      const readAtNs = BigInt(Date.now()) * 1_000_000n;
      const identity = await identityOf(absolutePath);
      const bytes = await io.readFile(absolutePath);
      reads.set(absolutePath, { identity, readAtNs, bytes });
      return bytes;
    },
    async writeFile(absolutePath, content) {
      const read = reads.get(absolutePath);
      if (read !== undefined && !(await isUnchanged(absolutePath, read))) throw new Error(changedOnDiskMessage(path ?? absolutePath));
      await io.writeFile(absolutePath, content);
    },
  };
}
