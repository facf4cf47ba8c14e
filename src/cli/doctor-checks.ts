/**
 * What `toolpool doctor` checks: what the servers' default setup (`serve` and `mcp --coding-tools`, bash in a bwrap
 * sandbox) needs from this machine. Every probe that runs a program is bounded by a timeout.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import {
  fdMinimumVersion,
  fdShortfallOf,
  findExecutable,
  piCodingAgentEntry,
  piCodingAgentPackage,
  piCodingAgentUnavailable,
  piFdLookup,
  probeSandbox,
} from "../coding-tools.js";
import { pi16MinimumNode, supportsPi16 } from "../options.js";

/** `fail`: the default setup does not work here; `warn`: it does, but a tool it may serve will not. */
export type CheckStatus = "ok" | "warn" | "fail";

export interface DoctorCheck {
  name: "node" | "pi" | "bwrap" | "rg" | "fd";
  status: CheckStatus;
  /** What was found (a version, a path) or what is missing, and what to do. */
  detail: string;
  version?: string;
  path?: string;
}

const versionTimeoutMs = 2_000;

/** Every check, in the order they are shown. */
export function runDoctorChecks(): DoctorCheck[] {
  const pi = checkPi();
  return [checkNode(), pi.check, checkBwrap(), checkRipgrep(pi.entry), checkFd(pi.entry)];
}

function checkNode(): DoctorCheck {
  const version = process.versions.node;
  const minimum = pi16MinimumNode.join(".");
  return supportsPi16()
    ? { name: "node", status: "ok", version, detail: `Node ${version} (pi 1.6's coding tools need ${minimum} or later)` }
    : { name: "node", status: "fail", version, detail: `Node ${version}: pi 1.6's coding tools need ${minimum} or later` };
}

function checkPi(): { check: DoctorCheck; entry: string | undefined } {
  const unavailable = piCodingAgentUnavailable();
  if (unavailable !== undefined) return { check: { name: "pi", status: "fail", detail: unavailable }, entry: undefined };
  const entry = piCodingAgentEntry();
  const folder = dirname(dirname(fileURLToPath(entry)));
  const { version } = JSON.parse(readFileSync(join(folder, "package.json"), "utf8")) as { version: string };
  return {
    check: { name: "pi", status: "ok", version, path: folder, detail: `${piCodingAgentPackage} ${version} at ${folder}` },
    entry: entry.href,
  };
}

function checkBwrap(): DoctorCheck {
  const probe = probeSandbox();
  if (!probe.isAvailable) return { name: "bwrap", status: "fail", detail: `${probe.cause}. To fix: ${probe.fix}` };
  const asRoot = process.getuid?.() === 0 ? ` (as root; ${unprivilegedNote()})` : "";
  return {
    name: "bwrap",
    status: "ok",
    version: probe.version.replace(/^bubblewrap /, ""),
    path: probe.bwrap,
    detail: `${probe.version} at ${probe.bwrap} makes a sandbox${asRoot}`,
  };
}

/** As root bwrap needs no user namespace of its own; other users' servers depend on these settings, where they exist. */
function unprivilegedNote(): string {
  const settings = [
    ["user.max_user_namespaces", "/proc/sys/user/max_user_namespaces", "above 0"],
    ["kernel.unprivileged_userns_clone", "/proc/sys/kernel/unprivileged_userns_clone", "1"],
    ["kernel.apparmor_restrict_unprivileged_userns", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "0"],
  ].flatMap(([name, file, needed]) => {
    try {
      return [`${name} = ${readFileSync(file!, "utf8").trim()} (needs ${needed})`];
    } catch {
      return [];
    }
  });
  return `other users need unprivileged user namespaces${settings.length === 0 ? "" : `: ${settings.join(", ")}`}`;
}

/** pi's grep runs `rg` from pi's bin folder, else from PATH. */
function checkRipgrep(piEntry: string | undefined): DoctorCheck {
  const binDir = piEntry === undefined ? undefined : piFdLookup(piEntry).binDir;
  const local = binDir === undefined ? undefined : join(binDir, "rg");
  const path = local !== undefined && existsSync(local) ? local : findOnPath("rg");
  if (path === undefined) {
    return {
      name: "rg",
      status: "warn",
      detail: "no ripgrep (rg) on PATH: pi's grep will not run (install the ripgrep package); the default tools do not include grep",
    };
  }
  const version = versionOf(path);
  return { name: "rg", status: "ok", path, ...(version === undefined ? {} : { version }), detail: `${version ?? "rg"} at ${path} (pi's grep)` };
}

/** pi's find runs fd from pi's bin folder, else `fd` or `fdfind` from PATH; outside a git repository it needs 8.7.0. */
function checkFd(piEntry: string | undefined): DoctorCheck {
  const lookup = piEntry === undefined ? { path: findOnPath("fd") ?? findOnPath("fdfind"), binDir: undefined } : piFdLookup(piEntry);
  const path = lookup.path === undefined ? undefined : (findOnPath(lookup.path) ?? lookup.path);
  const version = path === undefined ? undefined : versionOf(path);
  // Without pi here, its default bin folder: the message names where pi would look.
  const shortfall = fdShortfallOf(lookup.path, lookup.binDir ?? join(process.env.PI_CODING_AGENT_DIR ?? join(homedir(), ".pi", "agent"), "bin"));
  const found = { ...(path === undefined ? {} : { path }), ...(version === undefined ? {} : { version }) };
  if (path === undefined) {
    return {
      name: "fd",
      status: "warn",
      detail: `no fd on PATH: pi's find will not run (install fd ${fdMinimumVersion} or later); the default tools do not include find`,
    };
  }
  if (shortfall !== undefined) return { name: "fd", status: "warn", ...found, detail: `${shortfall.message} The default tools do not include find.` };
  return { name: "fd", status: "ok", ...found, detail: `${version ?? "fd"} at ${path} (pi's find; ${fdMinimumVersion} or later)` };
}

/** The first line of `PROGRAM --version`, or undefined where it does not answer in time. */
function versionOf(path: string): string | undefined {
  const answer = spawnSync(path, ["--version"], { encoding: "utf8", timeout: versionTimeoutMs, stdio: ["ignore", "pipe", "ignore"] });
  if (answer.status !== 0) return undefined;
  return `${answer.stdout ?? ""}`.split("\n")[0]!.trim() || undefined;
}

/** `name` as a path on PATH, or undefined; a path is returned as it is. */
function findOnPath(name: string): string | undefined {
  return name.includes("/") ? name : findExecutable(name, process.env.PATH ?? "");
}
