/**
 * pi 1.6's find passes `--no-require-git` outside git repositories; fd knows
 * it since 8.7.0 and a pool never downloads fd. Calls the fd cannot serve get
 * a clear message instead of fd's usage text.
 * @module
 */
import { spawnSync } from "node:child_process";
import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { dirname, join } from "node:path";

export const fdMinimumVersion = "8.7.0";

/** Why pi's find cannot run on toolpool's threads, and where its calls fail. */
export interface FdShortfall {
  /** What is missing, the version needed and how to get it. */
  readonly message: string;
  /** `everywhere`: there is no fd; `outsideGitRepository`: the fd refuses `--no-require-git`, which pi passes only there. */
  readonly scope: "everywhere" | "outsideGitRepository";
}

/** The probe runs on the main thread. */
const fdProbeTimeoutMs = 2_000;

/** Undefined when pi's fd takes the flag, or none is there and pi may download one. */
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

/** Whether pi's find would pass fd what it refuses (no `.git` up from `searchPath`). */
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

/** pi's reading of `PI_OFFLINE`; toolpool's threads set it to 1 unless set. */
function isPiOffline(): boolean {
  const value = process.env.PI_OFFLINE;
  return value === undefined || value === "1" || ["true", "yes"].includes(value.toLowerCase());
}
