/**
 * pi's edit `operations`, refusing to overwrite a file that changed on disk
 * after the edit read it. pi's edit reads the file, applies the edits in
 * memory and writes the result; a change made meanwhile by anyone else (a
 * formatter, a build, a person, a process outside the pool) would be
 * overwritten and lost. Here the read records the file's identity (device,
 * inode, size, modification and change times in nanoseconds, taken before
 * the read) and the bytes it read; the write checks the identity again just
 * before writing, and the bytes too when the timestamps cannot tell (below);
 * a change refuses the write with an error saying so, nothing written.
 * Otherwise the write is pi's own (in place, UTF-8), so results stay pi's.
 *
 * When the timestamps cannot tell: a file's times are set from a clock
 * coarser than their nanosecond fields (the kernel's tick, or 1-2 s on some
 * file systems), so a change of the same size made within the tick of the
 * last one leaves the identity as it was. That can only happen when the
 * file's change time, as the read saw it, lies within {@link coarseWindowNs}
 * of the moment of the read; then the bytes are read again and compared.
 * Older files are told apart by the identity alone.
 *
 * What is left: a change made between the last check and the write itself
 * (a write in place is not compare-and-swap; the window is one `stat`, and
 * the re-read when there is one); and a clock of the file's server more
 * than {@link coarseWindowNs} behind this machine's (a network file
 * system). Edits and writes through the pool never race this way: they hold
 * the path's lock (`path-locks.ts`).
 *
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

/** What a read saw: the identity before it, the wall clock then, and the bytes. */
interface ReadRecord {
  identity: Identity;
  readAtNs: bigint;
  bytes: Buffer;
}

/** How recent a change time is too recent for the timestamps to tell a later change (2 s: FAT's granularity). */
const coarseWindowNs = 2_000_000_000n;

async function identityOf(path: string): Promise<Identity> {
  const { dev, ino, size, mtimeNs, ctimeNs } = await stat(path, { bigint: true });
  return { dev, ino, size, mtimeNs, ctimeNs };
}

function isSame(a: Identity, b: Identity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/** Whether the file is still what `read` read. */
async function isUnchanged(path: string, read: ReadRecord): Promise<boolean> {
  const now = await identityOf(path).catch(() => undefined);
  if (now === undefined || !isSame(read.identity, now)) return false;
  if (read.readAtNs - read.identity.ctimeNs >= coarseWindowNs) return true;
  return (await readFile(path)).equals(read.bytes);
}

/**
 * The message of a refused write. `path` as the edit's caller gave it, as
 * pi's own messages name it.
 */
function changedOnDiskMessage(path: string): string {
  return `File ${path} was changed on disk after the edit read it; nothing was written. Read it again and redo the edit against what it holds now.`;
}

/**
 * Edit operations for one call (they remember what the call read). `path`:
 * the file as the call named it, for the refusal's message (pi's messages
 * name the path as given); the absolute path when absent.
 *
 * @example
 * ```ts
 * const tool = createEditTool(cwd, { operations: checkedEditOperations(args.path) });
 * ```
 */
export function checkedEditOperations(path?: string): EditOperations {
  const reads = new Map<string, ReadRecord>();
  return {
    access: (absolutePath) => access(absolutePath, constants.R_OK | constants.W_OK),
    async readFile(absolutePath) {
      const readAtNs = BigInt(Date.now()) * 1_000_000n;
      const identity = await identityOf(absolutePath);
      const bytes = await readFile(absolutePath);
      reads.set(absolutePath, { identity, readAtNs, bytes });
      return bytes;
    },
    async writeFile(absolutePath, content) {
      const read = reads.get(absolutePath);
      if (read !== undefined && !(await isUnchanged(absolutePath, read))) throw new Error(changedOnDiskMessage(path ?? absolutePath));
      await writeFile(absolutePath, content, "utf-8");
    },
  };
}
