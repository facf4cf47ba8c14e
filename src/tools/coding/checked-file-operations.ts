/**
 * pi's edit `operations`, refusing to overwrite a file that changed on disk
 * after the edit read it. pi's edit reads the file, applies the edits in
 * memory and writes the result; a change made meanwhile by anyone else (a
 * formatter, a build, a person, a process outside the pool) would be
 * overwritten and lost. Here the read records the file's identity (device,
 * inode, size, modification and change times in nanoseconds) and the write
 * checks it first, and the bytes too while the file's change time is within
 * 2 s of now (file systems with coarse timestamps); a change refuses the
 * write with an error saying so, nothing written. Otherwise the write is
 * pi's own (in place, UTF-8), so results stay pi's.
 *
 * What is left: a change between the check and the write itself (a write in
 * place is not compare-and-swap). Edits and writes through the pool never
 * race this way: they hold the path's lock (`path-locks.ts`).
 *
 * @module
 */
import { constants } from "node:fs";
import { access, readFile, stat, writeFile } from "node:fs/promises";

/** pi's `EditOperations`. */
export interface EditOperations {
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

const coarseWindowNs = 2_000_000_000n;

async function identityOf(path: string): Promise<Identity> {
  const { dev, ino, size, mtimeNs, ctimeNs } = await stat(path, { bigint: true });
  return { dev, ino, size, mtimeNs, ctimeNs };
}

function isSame(a: Identity, b: Identity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/** The message of a refused write. */
export function changedOnDiskMessage(path: string): string {
  return `File ${path} was changed on disk after the edit read it; nothing was written. Read it again and redo the edit against what it holds now.`;
}

/** Edit operations for one call (they remember what the call read). */
export function checkedEditOperations(): EditOperations {
  const read = new Map<string, { identity: Identity; bytes: Buffer }>();
  return {
    access: (path) => access(path, constants.R_OK | constants.W_OK),
    async readFile(path) {
      const identity = await identityOf(path);
      const bytes = await readFile(path);
      read.set(path, { identity, bytes });
      return bytes;
    },
    async writeFile(path, content) {
      const before = read.get(path);
      if (before !== undefined) {
        const now = await identityOf(path).catch(() => undefined);
        const isRecent = now !== undefined && BigInt(Date.now()) * 1_000_000n - now.ctimeNs < coarseWindowNs;
        if (now === undefined || !isSame(before.identity, now) || (isRecent && !(await readFile(path)).equals(before.bytes))) {
          throw new Error(changedOnDiskMessage(path));
        }
      }
      await writeFile(path, content, "utf-8");
    },
  };
}
