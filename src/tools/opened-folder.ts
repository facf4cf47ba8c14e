/**
 * A folder opened once, through which `patch` creates, renames and removes
 * its files, so that a folder swapped for a symlink afterwards cannot send
 * them elsewhere.
 *
 * Node has no `openat`/`renameat`/`unlinkat`. On Linux the kernel offers the
 * same guarantee through `/proc/self/fd/N`: a path that starts there resolves
 * through descriptor N (the folder it opened, wherever that is now), not
 * through the folder's name. So the folder is opened with `O_DIRECTORY` and
 * `O_NOFOLLOW` (a final symlink is refused), the path the kernel gives the
 * descriptor must be the real path that was resolved inside the workspace (a
 * folder higher up swapped for a symlink before the open is caught), and
 * every create, rename and remove goes through `/proc/self/fd/N/<name>`.
 * Where `/proc/self/fd` cannot be read (macOS, a `/proc` of another pid
 * namespace) the folder's path is used instead, and the folder now at that
 * path must be the one opened (device and inode), checked when it is opened
 * and again before the rename: that narrows the window, it does not close it.
 *
 * Loaded inside a worker thread; imports only Node built-ins.
 *
 * @module
 */
// Synchronous file calls on purpose: see the note in diff.ts.
import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync } from "node:fs";

/** `O_DIRECTORY` and `O_NOFOLLOW` where the platform has them (0 elsewhere). */
const folderFlags = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NOFOLLOW ?? 0);

/** A folder open for `patch`'s writes; close it with {@link closeFolder}. */
export interface OpenedFolder {
  readonly fd: number;
  /** The real path the folder was opened at. */
  readonly path: string;
  /** What names inside it start with: `/proc/self/fd/N` on Linux, else {@link path}. */
  readonly base: string;
  /** Whether {@link base} resolves through the descriptor (Linux) rather than the path. */
  readonly isPinned: boolean;
}

/**
 * Opens the folder at `path` (a real path: symlinks resolved), refusing a
 * symlink in its place and a folder that is not the one at `path` when it
 * was opened. Throws an `Error` saying why.
 */
export function openFolder(path: string): OpenedFolder {
  let fd: number;
  try {
    fd = openSync(path, folderFlags);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // ENOTDIR and ELOOP: a symlink (or a file) now stands where the folder was.
    if (code === "ENOTDIR" || code === "ELOOP" || code === "ENOENT") throw new Error("its folder changed while the file was written");
    throw error;
  }
  const base = `/proc/self/fd/${fd}`;
  let link: string | undefined;
  try {
    link = readlinkSync(base);
  } catch {
    // No /proc/self/fd here: the path stands in for the descriptor.
  }
  const isPinned = link === path;
  if (!isPinned && (link !== undefined || !isSameFileAt(fd, path))) {
    closeSync(fd);
    throw new Error("its folder changed while the file was written");
  }
  return Object.freeze({ fd, path, base: isPinned ? base : path, isPinned });
}

/**
 * Whether the folder is still at the path it was opened at: a folder moved
 * or swapped since is refused before anything is renamed into it.
 */
export function isFolderStillAt(folder: OpenedFolder): boolean {
  if (folder.isPinned) {
    try {
      return readlinkSync(folder.base) === folder.path;
    } catch {
      return false;
    }
  }
  return isSameFileAt(folder.fd, folder.path);
}

/** The path of `name` inside `folder`, resolved through its descriptor where the platform allows. */
export function pathInFolder(folder: OpenedFolder, name: string): string {
  return `${folder.base}/${name}`;
}

/** Closes a folder opened by {@link openFolder}. */
export function closeFolder(folder: OpenedFolder): void {
  closeSync(folder.fd);
}

/** Whether what is at `path` now, not followed if a link, is the file open as `fd`. */
function isSameFileAt(fd: number, path: string): boolean {
  try {
    const opened = fstatSync(fd);
    const now = lstatSync(path);
    return now.dev === opened.dev && now.ino === opened.ino;
  } catch {
    return false;
  }
}
