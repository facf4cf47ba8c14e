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
  lstatSync,
  realpathSync,
  renameSync,
  unlinkSync,
  writeSync,
  type Stats,
} from "node:fs";
import { basename, dirname } from "node:path";
import { messageOf } from "./quote-path.js";
import { isOpenedAt } from "./regular-file.js";
import { createTemporaryFile, sweepTemporaryFiles } from "./temporary-file.js";

/** Permission bits a rewritten file keeps: all but setuid and setgid. */
const KEPT_MODE_BITS = 0o1777;

/**
 * Throws, naming `label`, when the file whose `stats` are given may not be
 * rewritten by replacing it (see the module's note): read-only, not writable
 * by this process, more than one hard link, or an owner this process could
 * not give a new file.
 */
export function checkReplaceable(realPath: string, stats: Stats, label: string): void {
  if (stats.nlink > 1) {
    throw new Error(
      `${label} has ${stats.nlink} hard links; patch writes a new file in its place, which would leave the other names with the old content: not written`,
    );
  }
  if ((stats.mode & 0o222) === 0) {
    throw new Error(`${label} is read-only (mode ${formatMode(stats.mode)}): not written; make it writable first`);
  }
  try {
    accessSync(realPath, constants.W_OK);
  } catch {
    throw new Error(`${label} is not writable by toolpool's user${describeUser()}: not written`);
  }
  const uid = process.getuid?.();
  // Only root can give a file to someone else; a file of another user would become this user's.
  if (uid !== undefined && uid !== 0 && stats.uid !== uid) {
    throw new Error(`${label} belongs to uid ${stats.uid}, and toolpool runs as uid ${uid}, which cannot give a new file that owner: not written`);
  }
}

/**
 * Replaces the file at `realPath` (a real path, read as `original`) with
 * `content`: checks it (see {@link checkReplaceable}), removes the temporary
 * files its folder holds from writers that are gone, writes a temporary file
 * with the old file's owner, group and permission bits (setuid and setgid
 * cleared), then renames it over the file, unless the file was replaced
 * meanwhile or no longer passes the checks. Throws an `Error` naming
 * `label` when anything fails; the temporary file is then removed (a thread
 * terminated mid-write leaves it to the next sweep of the folder).
 */
export function replaceFile(realPath: string, original: Stats, content: string, label: string): void {
  checkReplaceable(realPath, original, label);
  const dir = dirname(realPath);
  sweepTemporaryFiles(dir);
  let temporary: string | undefined;
  try {
    const file = createTemporaryFile(dir, basename(realPath));
    temporary = file.path;
    try {
      // The folder may have been swapped for a link since it was resolved:
      // write only to a file that is where it was meant to be.
      if (!isOpenedAt(file.fd, file.path)) throw new Error("its folder changed while the file was written");
      keepOwnerAndMode(file.fd, original, label);
      writeSync(file.fd, content, null, "utf8");
      fsyncSync(file.fd);
    } finally {
      closeSync(file.fd);
    }
    if (realpathSync(dir) !== dir) throw new Error("its folder changed while the file was written");
    const current = statIfPresent(realPath);
    if (current === undefined || current.dev !== original.dev || current.ino !== original.ino) {
      throw new Error("it was replaced while it was patched (by another writer?); patch it again");
    }
    // A link added or the write bits removed meanwhile count as much as before.
    checkReplaceable(realPath, current, label);
    renameSync(temporary, realPath);
  } catch (error) {
    if (temporary !== undefined) {
      try {
        unlinkSync(temporary);
      } catch {
        // Already renamed into place: nothing to clean up.
      }
    }
    const message = messageOf(error);
    throw new Error(message.startsWith(label) ? message : `${label} cannot be written: ${message}`);
  }
}

/** Gives the new file the old one's owner and group, then its permission bits without setuid and setgid. */
function keepOwnerAndMode(fd: number, original: Stats, label: string): void {
  const created = fstatSync(fd);
  if (created.uid !== original.uid || created.gid !== original.gid) {
    try {
      fchownSync(fd, original.uid, original.gid);
    } catch (error) {
      throw new Error(
        `${label} belongs to uid ${original.uid} and gid ${original.gid}, which toolpool's user${describeUser()} cannot give a new file ` +
          `(${(error as NodeJS.ErrnoException).code ?? messageOf(error)}): not written`,
      );
    }
  }
  // After the owner: changing it may clear bits. Set explicitly, so no umask applies.
  fchmodSync(fd, original.mode & KEPT_MODE_BITS);
}

/** The file now at `realPath`, not followed if a link; undefined when there is none. */
function statIfPresent(realPath: string): Stats | undefined {
  try {
    return lstatSync(realPath);
  } catch {
    return undefined;
  }
}

function formatMode(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, "0");
}

function describeUser(): string {
  const uid = process.getuid?.();
  return uid === undefined ? "" : ` (uid ${uid})`;
}
