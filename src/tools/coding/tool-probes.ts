/**
 * pi's grep and find make sure ripgrep and fd are on the PATH before every
 * call: they run `rg --version` (`fd --version`) and wait for it, one more
 * process per call, started synchronously. On a pool thread a probe that
 * found its command is remembered for a while ({@link probeMemoryMs}), so a
 * busy thread starts one process per grep or find call instead of two. A
 * probe that failed is never remembered, and nothing else is: any other
 * `spawnSync` runs as it would. A binary removed within the window is met by
 * the search's own spawn instead, which pi reports as a failed search.
 *
 * @module
 */
import type { spawnSync as nodeSpawnSync } from "node:child_process";

type SpawnSync = typeof nodeSpawnSync;

/** How long a successful probe is remembered. */
export const probeMemoryMs = 10_000;

/** The commands whose probe is remembered: the binaries pi's grep and find look for. */
const probedCommands = new Set(["rg", "fd"]);

/** Whether a `spawnSync` call is exactly pi's probe: `(command, ["--version"], { stdio: "pipe" })`. */
function isProbe(command: unknown, args: unknown, options: unknown): command is string {
  if (typeof command !== "string" || !probedCommands.has(command)) return false;
  if (!Array.isArray(args) || args.length !== 1 || args[0] !== "--version") return false;
  if (typeof options !== "object" || options === null) return false;
  const keys = Object.keys(options);
  return keys.length === 1 && keys[0] === "stdio" && (options as { stdio?: unknown }).stdio === "pipe";
}

/**
 * `spawnSync` that remembers pi's successful tool probes for
 * {@link probeMemoryMs} by `now()`; every other call goes to `spawnSync` as is.
 *
 * @example
 * ```ts
 * childProcess.spawnSync = rememberingProbes(childProcess.spawnSync, () => performance.now());
 * ```
 */
export function rememberingProbes(spawnSync: SpawnSync, now: () => number): SpawnSync {
  const remembered = new Map<string, { result: ReturnType<SpawnSync>; until: number }>();
  const remembering = (...call: unknown[]): unknown => {
    const [command, args, options] = call;
    if (!isProbe(command, args, options)) return (spawnSync as (...rest: unknown[]) => unknown)(...call);
    const known = remembered.get(command);
    if (known !== undefined && now() < known.until) return known.result;
    const result = spawnSync(command, ["--version"], { stdio: "pipe" });
    if (result.error === undefined || result.error === null) remembered.set(command, { result, until: now() + probeMemoryMs });
    else remembered.delete(command);
    return result;
  };
  return remembering as SpawnSync;
}
