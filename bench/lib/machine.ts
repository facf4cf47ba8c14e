import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, platform, release, totalmem } from "node:os";

/** What the figures were measured on. */
export interface MachineInfo {
  cores: number;
  cpuModel: string;
  nodeVersion: string;
  platform: string;
  totalMemGiB: number;
  piscinaVersion: string;
  piAgentCoreVersion: string;
  /** 1-minute load average at the start, a hint of how noisy the machine was. */
  loadAvg1mAtStart: number;
  /** The commit the measured build came from, and the files of `src/` that differed from it. */
  gitCommit: string;
  srcChanges: string[];
}

export function describeMachine(): MachineInfo {
  return {
    cores: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? "unknown",
    nodeVersion: process.version,
    platform: `${platform()} ${release()}`,
    totalMemGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    piscinaVersion: packageVersion("piscina"),
    piAgentCoreVersion: packageVersion("@mariozechner/pi-agent-core"),
    loadAvg1mAtStart: loadavg()[0] ?? 0,
    gitCommit: git(["rev-parse", "--short", "HEAD"]).trim() || "unknown",
    srcChanges: git(["status", "--porcelain", "--", "src"])
      .split("\n")
      .filter((line) => line.trim() !== ""),
  };
}

/** Runs git in the repository root (dist-bench/lib/ → ../../); empty output when git is unavailable. */
function git(args: string[]): string {
  try {
    return execFileSync("git", args, { cwd: new URL("../../", import.meta.url), encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  } catch {
    return "";
  }
}

function packageVersion(name: string): string {
  try {
    // Both packages keep their entry point in dist/, next to package.json.
    const entry = import.meta.resolve(name);
    return (JSON.parse(readFileSync(new URL("../package.json", entry), "utf8")) as { version: string }).version;
  } catch {
    return "unknown";
  }
}
