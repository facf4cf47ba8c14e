/**
 * Bounded reads of regular files, for the built-in tools.
 *
 * `stat` then `readFileSync` trusts sizes that lie: `/dev/zero` and most of
 * `/proc` report size 0 and never end, and opening a FIFO blocks the thread
 * in `open()` until a writer comes — a native call that neither an abort nor
 * `Worker.terminate()` can interrupt. So the file is opened non-blocking
 * (a FIFO then opens at once), the descriptor itself is `fstat`ed (no race
 * with a rename), anything but a regular file is refused, and reading stops
 * at a byte cap counted on the bytes actually read.
 *
 * Synchronous on purpose: see the note in diff.ts.
 *
 * @module
 */
import { closeSync, constants, existsSync, fstatSync, openSync, readlinkSync, readSync, statSync, type BigIntStats, type Stats } from "node:fs";
import { messageOf } from "./quote-path.js";

/**
 * `O_NONBLOCK` makes `open()` of a FIFO return at once; `O_NOFOLLOW` refuses
 * a final symlink swapped in after the path was resolved. Both are 0 where
 * the platform lacks them (Windows has no FIFOs to open).
 */
const openFlags = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0);

/** An open regular file; close it with `closeSync(fd)`. */
interface RegularFile {
  readonly fd: number;
  readonly stats: Stats;
}

/**
 * Opens `path` for reading and checks that it is a regular file. Throws an
 * `Error` naming `label` for a missing file, a directory, and anything that is
 * not a regular file (FIFO, socket, device).
 *
 * @param label How the message names the file, e.g. `hash: path /x`.
 */
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

/** Whether the kernel names opened descriptors (Linux's `/proc/self/fd`). */
const hasFdPaths = existsSync("/proc/self/fd");

/**
 * Whether descriptor `fd` is the file at `path`. A tool resolves a path
 * inside its workspace (symlinks and all), then opens it by name; `O_NOFOLLOW`
 * guards the last part only, so a folder earlier on the path swapped for a
 * symlink in between would open a file outside the workspace. Linux names the
 * file a descriptor has open: it must be `path` itself. Elsewhere the file
 * now at `path` must be the one opened (device and inode), which narrows the
 * window to the moment between the two.
 *
 * Exported for `patch`, which checks the temporary file it writes the same way.
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

/**
 * Reads a whole regular file, at most `maxBytes` bytes, into a buffer of its
 * own (see {@link readRegularFileInto}). Throws (see {@link openRegularFile})
 * for what is not a regular file, and when the file holds more than
 * `maxBytes` bytes — counted while reading, since a size from `stat` may be 0
 * for a file that is not empty.
 */
export function readRegularFile(path: string, label: string, maxBytes: number): Buffer {
  return readRegularFileWithStats(path, label, maxBytes).bytes;
}

/**
 * Like {@link readRegularFile}, and also gives the `fstat` of the descriptor
 * read, taken before reading and in nanoseconds: owner, mode, links, inode,
 * size and times of the very file whose bytes these are (`patch` compares
 * them with the file's just before it renames its new content over it).
 */
export function readRegularFileWithStats(path: string, label: string, maxBytes: number): { bytes: Buffer; stats: BigIntStats } {
  const scratch: ReadScratch = { buffer: Buffer.alloc(0) };
  const file = openRegularFile(path, label);
  try {
    // Before reading: a change made during the read then differs from these stats, never hides behind them.
    const stats = fstatSync(file.fd, { bigint: true });
    const length = readOpenedFile(file, label, maxBytes, scratch);
    return { bytes: scratch.buffer.subarray(0, length), stats };
  } finally {
    closeSync(file.fd);
  }
}

/** A buffer reused from one read to the next, grown on demand; one per thread is enough for synchronous reads. */
export interface ReadScratch {
  buffer: Buffer;
}

/**
 * Like {@link readRegularFile}, but into `scratch.buffer` (grown when a file
 * needs more), with one `read` call for a file whose size `fstat` gives:
 * a short read of a regular file with a size is its end. Returns the number
 * of bytes read; they are valid until the next read into `scratch`.
 */
export function readRegularFileInto(path: string, label: string, maxBytes: number, scratch: ReadScratch): number {
  const file = openRegularFile(path, label);
  try {
    return readOpenedFile(file, label, maxBytes, scratch);
  } finally {
    closeSync(file.fd);
  }
}

/** Reads an open regular file (see {@link readRegularFileInto}); the caller closes it. */
function readOpenedFile({ fd, stats }: RegularFile, label: string, maxBytes: number, scratch: ReadScratch): number {
  if (stats.size > maxBytes) throw new Error(`${label} is ${stats.size} bytes, over the ${maxBytes}-byte limit`);
  // One byte more than the size tells a file that grew since; more than
  // maxBytes tells one past the limit.
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
    // A file that says it has a size ends at a short read; one that says 0 (`/proc`) ends at a read of nothing.
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
