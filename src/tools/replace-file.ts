/**
 * Replacing a file the way `patch` writes: a new file beside it, renamed over
 * it, so a reader never sees half of it. The new inode is created by
 * toolpool's user (often root), so what made the old file what it was is
 * carried over or refused: owner and group are kept, mode bits too except
 * setuid/setgid (new content must not inherit a granted privilege); read-only
 * files (root bypasses the permission check) and files with several hard
 * links (the other names would keep the old content) are refused.
 * Synchronous on purpose (see diff.ts).
 *
 * @module
 */
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

const KEPT_MODE_BITS = 0o1777;

/**
 * File timestamps tick in steps (2 s on FAT): a file whose ctime is this
 * close to the write also has its bytes compared, as git does for a
 * "racily clean" index entry.
 */
const TIMESTAMP_STEP_NS = 2_000_000_000n;

export interface ReadFile {
  readonly bytes: Buffer;
  /** `fstat` of the descriptor read, taken before reading. */
  readonly stats: BigIntStats;
}

interface ReplaceableStats {
  readonly nlink: number | bigint;
  readonly mode: number | bigint;
  readonly uid: number | bigint;
}

/** Throws, naming `label`, when the file may not be rewritten by replacing it. */
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
  // Only root can give a file to someone else.
  if (uid !== undefined && uid !== 0 && owner !== uid) {
    throw new Error(`${label} belongs to uid ${owner}, and toolpool runs as uid ${uid}, which cannot give a new file that owner: not written`);
  }
}

/**
 * Replaces the file at real path `realPath`, read as `original`, through its
 * folder opened once (opened-folder.ts), after sweeping abandoned temporary
 * files. Refuses when the file was replaced or changed meanwhile (inode,
 * size, times, and bytes within a clock step) or its folder moved. Not closed:
 * a change between the last comparison and the rename, or a write through a
 * descriptor opened on the old file, is lost.
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
    // A link added or write bits removed meanwhile count too.
    checkReplaceable(target, current, label);
    renameSync(temporary, target);
    temporary = undefined;
  } catch (error) {
    if (temporary !== undefined) {
      try {
        unlinkSync(temporary);
      } catch {
        // Removed already by a sweep.
      }
    }
    const message = messageOf(error);
    throw new Error(message.startsWith(label) ? message : `${label} cannot be written: ${message}`);
  } finally {
    if (folder !== undefined) closeFolder(folder);
  }
}

/** Throws unless `target` is still the file read as `original`; returns its stats. */
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
