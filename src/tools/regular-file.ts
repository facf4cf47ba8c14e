/**
 * Bounded reads of regular files. Sizes from `stat` lie (`/dev/zero`,
 * `/proc` say 0) and opening a FIFO blocks in `open()` where neither an abort
 * nor `Worker.terminate()` reaches; so files open non-blocking, the
 * descriptor is `fstat`ed, anything but a regular file is refused, and the
 * byte cap counts bytes actually read. Synchronous on purpose (see diff.ts).
 *
 * @module
 */
import { closeSync, constants, existsSync, fstatSync, openSync, readlinkSync, readSync, statSync, type BigIntStats, type Stats } from "node:fs";
import { messageOf } from "./quote-path.js";

/** `O_NOFOLLOW` refuses a final symlink swapped in after the path was resolved. */
const openFlags = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0);

interface RegularFile {
  readonly fd: number;
  readonly stats: Stats;
}

/** Throws naming `label` (e.g. `hash: path /x`) for a missing file, a directory, and anything that is not a regular file. */
export function openRegularFile(path: string, label: string): RegularFile {
  let fd: number;
  try {
    fd = openSync(path, openFlags);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") throw new Error(`${label} not found`);
    if (code === "ELOOP") throw new Error(`${label} is a symbolic link that changed while it was opened`);
    if (code === "ENXIO") throw new Error(`${label} is not a regular file (a socket or an unopened device)`);
    throw new Error(`${label} cannot be opened: ${messageOf(error)}`);
  }
  try {
    const stats = fstatSync(fd);
    if (!isOpenedAt(fd, path, stats)) throw new Error(`${label} changed while it was opened (a folder on its path was replaced); not read`);
    if (stats.isDirectory()) throw new Error(`${label} is a directory, not a file`);
    if (!stats.isFile()) throw new Error(`${label} is not a regular file (${describeKind(stats)}); only regular files are read`);
    return { fd, stats };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

const hasFdPaths = existsSync("/proc/self/fd");

/**
 * `O_NOFOLLOW` guards the last part of a path only, so a folder earlier on it
 * swapped for a symlink after resolution would open a file outside the
 * workspace. Linux names the file a descriptor holds; elsewhere device and
 * inode are compared, which narrows the window only.
 */
function isOpenedAt(fd: number, path: string, stats: Stats = fstatSync(fd)): boolean {
  if (hasFdPaths) {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path;
    } catch {
      return false;
    }
  }
  try {
    const now = statSync(path);
    return now.dev === stats.dev && now.ino === stats.ino;
  } catch {
    return false;
  }
}

/** At most `maxBytes`, counted while reading: `stat` may say 0 for a file that is not empty. */
export function readRegularFile(path: string, label: string, maxBytes: number): Buffer {
  return readRegularFileWithStats(path, label, maxBytes).bytes;
}

/** Also gives the descriptor's `fstat`, taken before reading, for `patch` to compare before it replaces the file. */
export function readRegularFileWithStats(path: string, label: string, maxBytes: number): { bytes: Buffer; stats: BigIntStats } {
  const scratch: ReadScratch = { buffer: Buffer.alloc(0) };
  const file = openRegularFile(path, label);
  try {
    // Before reading: a change made during the read then differs from these stats.
    const stats = fstatSync(file.fd, { bigint: true });
    const length = readOpenedFile(file, label, maxBytes, scratch);
    return { bytes: scratch.buffer.subarray(0, length), stats };
  } finally {
    closeSync(file.fd);
  }
}

export interface ReadScratch {
  buffer: Buffer;
}

/** One `read` call for a file whose size `fstat` gives: a short read is its end. The bytes are valid until the next read into `scratch`. */
export function readRegularFileInto(path: string, label: string, maxBytes: number, scratch: ReadScratch): number {
  const file = openRegularFile(path, label);
  try {
    return readOpenedFile(file, label, maxBytes, scratch);
  } finally {
    closeSync(file.fd);
  }
}

function readOpenedFile({ fd, stats }: RegularFile, label: string, maxBytes: number, scratch: ReadScratch): number {
  if (stats.size > maxBytes) throw new Error(`${label} is ${stats.size} bytes, over the ${maxBytes}-byte limit`);
  // One byte more than the size tells a file that grew, or one past the limit.
  let want = Math.min(maxBytes + 1, Math.max(stats.size + 1, 64 * 1024));
  if (scratch.buffer.length < want) scratch.buffer = Buffer.allocUnsafe(want);
  let length = 0;
  for (;;) {
    let bytesRead: number;
    try {
      bytesRead = readSync(fd, scratch.buffer, length, want - length, null);
    } catch (error) {
      throw new Error(`${label} cannot be read: ${messageOf(error)}`);
    }
    length += bytesRead;
    if (length > maxBytes) throw new Error(`${label} holds more than the ${maxBytes}-byte limit`);
    // A file with a size ends at a short read; one that says 0 (`/proc`) at a read of nothing.
    if (bytesRead === 0 || (stats.size > 0 && length < want)) return length;
    if (length === want) {
      want = Math.min(maxBytes + 1, want * 2);
      if (scratch.buffer.length < want) {
        const grown = Buffer.allocUnsafe(want);
        scratch.buffer.copy(grown, 0, 0, length);
        scratch.buffer = grown;
      }
    }
  }
}

function describeKind(stats: Stats): string {
  if (stats.isFIFO()) return "a FIFO";
  if (stats.isSocket()) return "a socket";
  if (stats.isCharacterDevice()) return "a character device";
  if (stats.isBlockDevice()) return "a block device";
  if (stats.isSymbolicLink()) return "a symbolic link";
  return "not a file";
}
