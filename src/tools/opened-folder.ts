/**
 * A folder opened once, through which `patch` creates, renames and removes
 * its files, so a folder swapped for a symlink afterwards cannot redirect
 * them. Node has no `openat`/`renameat`; on Linux `/proc/self/fd/N/<name>`
 * resolves through descriptor N instead of the folder's name. Where that
 * cannot be read (macOS, another pid namespace) the path is used, checked by
 * device and inode at open and before the rename: a narrower window, not none.
 *
 * @module
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync } from "node:fs";

const folderFlags = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NOFOLLOW ?? 0);

export interface OpenedFolder {
  readonly fd: number;
  readonly path: string;
  /** `/proc/self/fd/N` on Linux, else {@link path}. */
  readonly base: string;
  readonly isPinned: boolean;
}

/** Opens the folder at real path `path`, refusing a symlink in its place or a folder that moved. */
export function openFolder(path: string): OpenedFolder {
  let fd: number;
  try {
    fd = openSync(path, folderFlags);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
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

export function pathInFolder(folder: OpenedFolder, name: string): string {
  return `${folder.base}/${name}`;
}

export function closeFolder(folder: OpenedFolder): void {
  closeSync(folder.fd);
}

/** Whether what is at `path` now, not followed, is the file open as `fd`. */
function isSameFileAt(fd: number, path: string): boolean {
  try {
    const opened = fstatSync(fd);
    const now = lstatSync(path);
    return now.dev === opened.dev && now.ino === opened.ino;
  } catch {
    return false;
  }
}
