/**
 * Replacing a file's content the way `patch` writes: a new file beside it,
 * renamed over it, so that a reader sees the old content or the new one,
 * never half of it.
 *
 * A new file is a new inode, created by whoever runs toolpool, often root in
 * a container. What made the old file what it was must then be carried over
 * or refused, never silently changed: its owner and group are given to the
 * new file (or the file is refused when they cannot be), its permission bits
 * are kept except setuid and setgid (new content under a privilege someone
 * granted to the old one would let a caller choose what runs with it), a
 * read-only file is refused (root may write anything, so the permission
 * check alone would not), and so is a file with more than one hard link (the
 * other names would keep the old content).
 *
 * Loaded inside a worker thread; imports only Node built-ins and its siblings.
 *
 * @module
 */
// Synchronous file calls on purpose: see the note in diff.ts.
import {
  accessSync,
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  fsyncSync,
  openSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
  type BigIntStats,
} from "node:fs";
import { basename, dirname } from "node:path";
import { closeFolder, isFolderStillAt, openFolder, pathInFolder, type OpenedFolder } from "./opened-folder.js";
import { messageOf } from "./quote-path.js";
import { createTemporaryFile, sweepTemporaryFiles } from "./temporary-file.js";

/** Permission bits a rewritten file keeps: all but setuid and setgid. */
const KEPT_MODE_BITS = 0o1777;

/**
 * File system timestamps come from a clock that ticks in steps (a few
 * milliseconds on Linux, 2 s on FAT): a change within the step of the read
 * may leave size, mtime and ctime as they were. A file whose ctime is this
 * close to the moment of the write has its content compared too, as git
 * does with a "racily clean" index entry.
 */
const TIMESTAMP_STEP_NS = 2_000_000_000n;

/** What `patch` read of the file it rewrites. */
export interface ReadFile {
  /** The bytes read. */
  readonly bytes: Buffer;
  /** The `fstat` of the descriptor read, taken before reading, in nanoseconds. */
  readonly stats: BigIntStats;
}

/** The parts of a `stat` that {@link checkReplaceable} looks at, as numbers or bigints. */
interface ReplaceableStats {
  readonly nlink: number | bigint;
  readonly mode: number | bigint;
  readonly uid: number | bigint;
}

/**
 * Throws, naming `label`, when the file at `path` whose `stats` are given may not be
 * rewritten by replacing it (see the module's note): read-only, not writable
 * by this process, more than one hard link, or an owner this process could
 * not give a new file.
 */
export function checkReplaceable(path: string, stats: ReplaceableStats, label: string): void {
  const nlink = Number(stats.nlink);
  const mode = Number(stats.mode);
  const owner = Number(stats.uid);
  if (nlink > 1) {
    throw new Error(
      `${label} has ${nlink} hard links; patch writes a new file in its place, which would leave the other names with the old content: not written`,
    );
  }
  if ((mode & 0o222) === 0) {
    throw new Error(`${label} is read-only (mode ${formatMode(mode)}): not written; make it writable first`);
  }
  try {
    accessSync(path, constants.W_OK);
  } catch {
    throw new Error(`${label} is not writable by toolpool's user${describeUser()}: not written`);
  }
  const uid = process.getuid?.();
  // Only root can give a file to someone else; a file of another user would become this user's.
  if (uid !== undefined && uid !== 0 && owner !== uid) {
    throw new Error(`${label} belongs to uid ${owner}, and toolpool runs as uid ${uid}, which cannot give a new file that owner: not written`);
  }
}

/**
 * Replaces the file at `realPath` (a real path, read as `original`) with
 * `content`: checks it (see {@link checkReplaceable}), opens its folder once
 * (see opened-folder.ts; every create, rename and remove below goes through
 * it), removes the temporary files there from writers that are gone (never
 * the file itself, whatever its name), writes a temporary file with the old
 * file's owner, group and permission bits (setuid and setgid cleared), then
 * renames it over the file, unless the file was replaced or changed in place
 * meanwhile (size, mtime, ctime in nanoseconds, and its bytes while its
 * timestamps are within a clock step), its folder moved, or it no longer
 * passes the checks. Throws an `Error` naming `label` when anything fails;
 * the temporary file is then removed (a thread terminated mid-write leaves it
 * to the next sweep of the folder).
 *
 * What remains: a change made between the last comparison and the rename (a
 * rename is not a compare-and-swap), and a write through a descriptor opened
 * on the old file before the rename, land in the old file and are lost.
 */
export function replaceFile(realPath: string, original: ReadFile, content: string, label: string): void {
  const name = basename(realPath);
  let folder: OpenedFolder | undefined;
  let temporary: string | undefined;
  try {
    folder = openFolder(dirname(realPath));
    const target = pathInFolder(folder, name);
    checkReplaceable(target, original.stats, label);
    sweepTemporaryFiles(folder, name);
    const file = createTemporaryFile(folder, name);
    temporary = file.path;
    let created: BigIntStats;
    try {
      created = keepOwnerAndMode(file.fd, original.stats, label);
      writeSync(file.fd, content, null, "utf8");
      fsyncSync(file.fd);
    } finally {
      closeSync(file.fd);
    }
    if (!isFolderStillAt(folder)) throw new Error("its folder changed while the file was written");
    const current = checkUnchanged(target, original, created);
    // A link added or the write bits removed meanwhile count as much as before.
    checkReplaceable(target, current, label);
    renameSync(temporary, target);
    temporary = undefined;
  } catch (error) {
    if (temporary !== undefined) {
      try {
        unlinkSync(temporary);
      } catch {
        // Removed already (by a sweep after its writer seemed gone): nothing to clean up.
      }
    }
    const message = messageOf(error);
    throw new Error(message.startsWith(label) ? message : `${label} cannot be written: ${message}`);
  } finally {
    if (folder !== undefined) closeFolder(folder);
  }
}

/**
 * Throws unless the file at `target` is the one read as `original`, as it
 * was read: same inode, size, mtime and ctime, and same bytes when its ctime
 * lies within a clock step of `created`'s (the temporary file, stamped by the
 * same file system's clock). Returns its stats.
 */
function checkUnchanged(target: string, original: ReadFile, created: BigIntStats): BigIntStats {
  let fd: number;
  try {
    fd = openSync(target, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0));
  } catch {
    throw new Error("it was replaced while it was patched (by another writer?); patch it again");
  }
  try {
    const current = fstatSync(fd, { bigint: true });
    const before = original.stats;
    if (current.dev !== before.dev || current.ino !== before.ino) {
      throw new Error("it was replaced while it was patched (by another writer?); patch it again");
    }
    const changed = new Error("it was changed while it was patched (by another writer?); nothing was written, patch it again");
    if (current.size !== before.size || current.mtimeNs !== before.mtimeNs || current.ctimeNs !== before.ctimeNs) throw changed;
    if (created.ctimeNs - current.ctimeNs < TIMESTAMP_STEP_NS && !hasBytes(fd, original.bytes)) throw changed;
    return current;
  } finally {
    closeSync(fd);
  }
}

/** Whether the file open as `fd` holds exactly `bytes`. */
function hasBytes(fd: number, bytes: Buffer): boolean {
  const read = Buffer.allocUnsafe(bytes.length + 1);
  let length = 0;
  for (;;) {
    const n = readSync(fd, read, length, read.length - length, length);
    if (n === 0) break;
    length += n;
    if (length === read.length) return false;
  }
  return length === bytes.length && read.subarray(0, length).equals(bytes);
}

/**
 * Gives the new file the old one's owner and group, then its permission bits
 * without setuid and setgid. Returns the new file's stats as created.
 */
function keepOwnerAndMode(fd: number, original: BigIntStats, label: string): BigIntStats {
  const created = fstatSync(fd, { bigint: true });
  if (created.uid !== original.uid || created.gid !== original.gid) {
    try {
      fchownSync(fd, Number(original.uid), Number(original.gid));
    } catch (error) {
      throw new Error(
        `${label} belongs to uid ${original.uid} and gid ${original.gid}, which toolpool's user${describeUser()} cannot give a new file ` +
          `(${(error as NodeJS.ErrnoException).code ?? messageOf(error)}): not written`,
      );
    }
  }
  // After the owner: changing it may clear bits. Set explicitly, so no umask applies.
  fchmodSync(fd, Number(original.mode) & KEPT_MODE_BITS);
  return created;
}

function formatMode(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, "0");
}

function describeUser(): string {
  const uid = process.getuid?.();
  return uid === undefined ? "" : ` (uid ${uid})`;
}
