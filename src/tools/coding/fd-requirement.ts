/**
 * The fd that pi's find needs. Outside a git repository pi 1.6's find passes
 * `--no-require-git` (so that `.gitignore` files count there too), a flag fd
 * has known since 8.7.0: an older fd (Debian 12's `fdfind` 8.6, Ubuntu
 * 22.04's 8.3) refuses it with its usage text, so every find call outside a
 * repository fails. pi downloads a recent fd only where none is installed,
 * and a pool never downloads (`PI_OFFLINE`). `codingTools` asks, when it is
 * made, whether the fd pi would run takes the flag ({@link fdShortfallOf},
 * main thread); the find calls that fd cannot serve answer with the same
 * words instead of fd's usage text ({@link isFindRefused}, pool thread).
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { dirname, join } from "node:path";

/** The first fd that knows `--no-require-git`, which pi's find passes outside a git repository. */
export const fdMinimumVersion = "8.7.0";

/** Why pi's find cannot run where toolpool's threads run it, and where its calls fail. */
export interface FdShortfall {
  /** What is missing, the version needed and how to get it. */
  readonly message: string;
  /** `everywhere`: there is no fd; `outsideGitRepository`: the fd refuses `--no-require-git`, which pi passes only there. */
  readonly scope: "everywhere" | "outsideGitRepository";
}

/** How long each probe of the fd may take: it runs on the main thread, and an fd answers `--version` in milliseconds. */
const fdProbeTimeoutMs = 2_000;

/**
 * What falls short in the fd pi's find would run: `fdPath` as pi's own
 * lookup gives it (pi's folder of tools `binDir`, then `fd`, then `fdfind`
 * on PATH), undefined where it found none. Undefined when that fd takes
 * `--no-require-git`, or when there is none and pi may download one
 * (`PI_OFFLINE` set to something other than 1, true or yes).
 */
export function fdShortfallOf(fdPath: string | undefined, binDir: string): FdShortfall | undefined {
  const piFd = join(binDir, "fd");
  const where = fdPath === piFd ? `in place of ${piFd}` : `as \`fd\` on PATH, or at ${piFd}, where pi looks first`;
  const install = `Install fd ${fdMinimumVersion} or later (a release binary from https://github.com/sharkdp/fd/releases, or the fd-find package of Debian 13 or Ubuntu 24.04) ${where}`;
  if (fdPath === undefined) {
    if (!isPiOffline()) return undefined;
    return {
      message: `pi's find needs fd ${fdMinimumVersion} or later, and there is none (pi looks for ${piFd}, then fd and fdfind on PATH; toolpool's threads never download it). ${install}.`,
      scope: "everywhere",
    };
  }
  const probe = spawnSync(fdPath, ["--no-require-git", "--version"], { stdio: "pipe", timeout: fdProbeTimeoutMs });
  if (probe.status === 0) return undefined;
  const version =
    probe.signal !== null
      ? `which did not answer --version within ${fdProbeTimeoutMs} ms`
      : spawnSync(fdPath, ["--version"], { stdio: "pipe", timeout: fdProbeTimeoutMs }).stdout?.toString().trim() || "its version unknown";
  return {
    message: `pi's find needs fd ${fdMinimumVersion} or later outside a git repository: there it passes --no-require-git, so that .gitignore files count, and the fd it runs, ${fdPath} (${version}), refuses that flag. ${install}.`,
    scope: "outsideGitRepository",
  };
}

/**
 * Whether pi's find, searching `searchPath`, would pass the fd of
 * `shortfall` what it refuses: with no fd, always; with an fd that lacks
 * `--no-require-git`, where no folder from `searchPath` up holds a `.git`
 * (pi's own test for "inside a git repository").
 */
export async function isFindRefused(shortfall: FdShortfall, searchPath: string): Promise<boolean> {
  if (shortfall.scope === "everywhere") return true;
  for (let folder = searchPath; ; folder = dirname(folder)) {
    if (await exists(join(folder, ".git"))) return false;
    if (dirname(folder) === folder) return true;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path, constants.F_OK);
    return true;
  } catch {
    return false;
  }
}

/** Whether pi runs offline on toolpool's threads, which set `PI_OFFLINE=1` unless it is set already (pi's reading of the value). */
function isPiOffline(): boolean {
  const value = process.env.PI_OFFLINE;
  return value === undefined || value === "1" || ["true", "yes"].includes(value.toLowerCase());
}
