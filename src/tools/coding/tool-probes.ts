/**
 * pi's grep and find run `rg --version`/`fd --version` before every call; a
 * pool thread remembers a successful probe for a while. Failures are not.
 * @module
 */
import type { spawnSync as nodeSpawnSync } from "node:child_process";

type SpawnSync = typeof nodeSpawnSync;

export const probeMemoryMs = 10_000;

const probedCommands = new Set(["rg", "fd"]);

/** Exactly pi's probe: `(command, ["--version"], { stdio: "pipe" })`. */
function isProbe(command: unknown, args: unknown, options: unknown): command is string {
  if (typeof command !== "string" || !probedCommands.has(command)) return false;
  if (!Array.isArray(args) || args.length !== 1 || args[0] !== "--version") return false;
  if (typeof options !== "object" || options === null) return false;
  const keys = Object.keys(options);
  return keys.length === 1 && keys[0] === "stdio" && (options as { stdio?: unknown }).stdio === "pipe";
}

/**
 * `spawnSync` remembering pi's successful probes; other calls pass through.
 * @example `childProcess.spawnSync = rememberingProbes(childProcess.spawnSync, () => performance.now());`
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
