/**
 * With a sandbox, what read, write and edit open is checked where it lies
 * once open (its /proc/self/fd link), inside the workspace or refused:
 * confine's check of the path comes before the open, and a sandboxed command
 * running beside them may swap a folder for a link in between, which pi's
 * tools, outside the sandbox, would follow (docs/coding-tools.md, "The
 * sandbox"). Contents are read and written only through the checked handle.
 * @module
 */
import { constants } from "node:fs";
import { access, type FileHandle, mkdir, open, readdir, readlink, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, relative, sep } from "node:path";

import { quotePathAlways } from "../quote-path.js";

/** Where an opened file may lie: the workspace's real path, and other real folders. */
export interface Containment {
  root: string;
  alsoAllowed: readonly string[];
}

function isInside(path: string, folder: string): boolean {
  const fromFolder = relative(folder, path);
  return fromFolder === "" || (!isAbsolute(fromFolder) && fromFolder !== ".." && !fromFolder.startsWith(`..${sep}`));
}

/** `path` opened with `flags`, or closed again and refused where the opened file lies outside. */
export async function openContained(path: string, flags: number | string, within: Containment): Promise<FileHandle> {
  const handle = await open(path, flags, 0o666);
  try {
    const landed = await readlink(`/proc/self/fd/${handle.fd}`);
    if (isInside(landed, within.root) || within.alsoAllowed.some((folder) => isInside(landed, folder))) return handle;
    throw new Error(
      `Path ${quotePathAlways(path)} is outside the workspace ${quotePathAlways(within.root)}: it led to ${quotePathAlways(landed)} as it was opened (a link put in its way); it was not read or written`,
    );
  } catch (error) {
    await handle.close();
    throw error;
  }
}

async function readContained(path: string, within: Containment): Promise<Buffer> {
  const handle = await openContained(path, "r", within);
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/**
 * An existing file opened and checked; a new one made in its checked folder
 * (through that folder's handle, the name not followed), so that no file is
 * made outside either. A dangling link is followed as pi would, and checked.
 */
async function openForWriting(path: string, within: Containment): Promise<FileHandle> {
  try {
    return await openContained(path, constants.O_WRONLY, within);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const folder = await openContained(dirname(path), constants.O_RDONLY | constants.O_DIRECTORY, within);
  try {
    return await open(`/proc/self/fd/${folder.fd}/${basename(path)}`, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o666);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return await openContained(path, constants.O_WRONLY | constants.O_CREAT, within);
  } finally {
    await folder.close();
  }
}

/** Truncated only once checked: a refused write leaves what it reached unchanged. */
async function writeContained(path: string, content: string, within: Containment): Promise<void> {
  const handle = await openForWriting(path, within);
  try {
    await handle.truncate(0);
    await handle.writeFile(content, "utf-8");
  } finally {
    await handle.close();
  }
}

/**
 * pi's read operations, as pi's own do them (a regular file streamed up to
 * its size when opened), on checked handles. `detectImageMimeType`: pi's,
 * given the checked handle's /proc path, which names the opened file itself.
 */
export function containedReadOperations(within: Containment, detectImageMimeType: (path: string) => Promise<string | null | undefined>) {
  return {
    readFile: (path: string) => readContained(path, within),
    access: (path: string) => access(path, constants.R_OK),
    async *createReadStream(path: string): AsyncGenerator<Buffer> {
      const handle = await openContained(path, "r", within);
      try {
        const stats = await handle.stat();
        const end = stats.isFile() && stats.size > 0 ? stats.size - 1 : undefined;
        yield* handle.createReadStream({ end, autoClose: false });
      } finally {
        await handle.close();
      }
    },
    async detectImageMimeType(path: string) {
      const handle = await openContained(path, "r", within);
      try {
        return await detectImageMimeType(`/proc/self/fd/${handle.fd}`);
      } finally {
        await handle.close();
      }
    },
  };
}

/** pi's write operations on checked handles. */
export function containedWriteOperations(within: Containment) {
  return {
    writeFile: (path: string, content: string) => writeContained(path, content, within),
    mkdir: (folder: string) => mkdir(folder, { recursive: true }).then(() => undefined),
  };
}

/** Reads and writes for edit's checked operations (`checked-file-operations.ts`). */
export function containedFileIo(within: Containment) {
  return {
    readFile: (path: string) => readContained(path, within),
    writeFile: (path: string, content: string) => writeContained(path, content, within),
  };
}

/** pi's ls operations, the listing read through the folder's checked handle; `exists`: pi's. */
export function containedLsOperations(within: Containment, exists: (path: string) => Promise<boolean>) {
  return {
    exists,
    stat: (path: string) => stat(path),
    async readdir(path: string): Promise<string[]> {
      const folder = await openContained(path, constants.O_RDONLY | constants.O_DIRECTORY, within);
      try {
        return await readdir(`/proc/self/fd/${folder.fd}`);
      } finally {
        await folder.close();
      }
    },
  };
}
