/**
 * `sandbox: "bwrap"`: each bash command (and grep's and find's ripgrep and fd)
 * runs in a bubblewrap sandbox of its own: every namespace unshared (network
 * too unless allowed), no capabilities, the file system read-only but for the
 * workspace, the hidden paths behind empty folders, a fresh /proc of its own
 * PID namespace, and only the allowed environment. Fails closed: no sandbox,
 * no tools (docs/coding-tools.md, "The sandbox").
 * @module
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants, realpathSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, isAbsolute, join, resolve, sep } from "node:path";

import { ToolpoolError } from "../../errors.js";
import { invalidOption } from "../../option-checks.js";

export interface BwrapSandboxOptions {
  kind: "bwrap";
  /** Let commands reach the network (the host's loopback included). @default false */
  network?: boolean;
  /** Absolute paths hidden (a folder behind an empty one, a file behind an unreadable one), besides {@link defaultHiddenPaths}. @default [] */
  hide?: readonly string[];
  /** Host folders bound at the same path, read-only unless `writable`; bound after the hidden paths, so one may lie inside them. @default [] */
  bind?: readonly { path: string; writable?: boolean }[];
  /** Environment variables passed in besides {@link defaultSandboxEnv}. @default [] */
  env?: readonly string[];
}

/** `"none"`: commands run as the runtime's user, with the machine in reach (pi's own behaviour). */
export type SandboxOption = "none" | "bwrap" | BwrapSandboxOptions;

/** A checked `bwrap` sandbox, plain data (it crosses to the coding threads). */
export interface ResolvedSandbox {
  kind: "bwrap";
  bwrap: string;
  network: boolean;
  hide: string[];
  bind: { path: string; writable: boolean }[];
  env: string[];
}

/**
 * Hidden by default: home folders, other users' and the runtime's temporary
 * files, the sockets of running services under /run, and the password
 * hashes (a runtime that runs as root could read them otherwise).
 */
export const defaultHiddenPaths: readonly string[] = [
  "/home",
  "/root",
  "/tmp",
  "/var/tmp",
  "/run",
  "/var/run",
  "/dev/shm",
  "/etc/shadow",
  "/etc/gshadow",
];

/** Passed in by default; every other variable (tokens, keys, the server's own settings) is left behind. */
export const defaultSandboxEnv: readonly string[] = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "LC_ALL",
  "LC_CTYPE",
  "LC_COLLATE",
  "LC_MESSAGES",
  "LC_NUMERIC",
  "LC_TIME",
  "TERM",
  "TZ",
  "COLUMNS",
  "LINES",
  "NO_COLOR",
  "FORCE_COLOR",
];

/**
 * Set by pi's bash for the command (its session and model): they pass as
 * pi's do, and so does toolpool's marker of a call's processes.
 */
const shellEnvOfPi: readonly string[] = ["PI_SESSION_ID", "PI_SESSION_FILE", "PI_PROVIDER", "PI_MODEL", "PI_REASONING_LEVEL"];
const callMarkerName = "TOOLPOOL_BASH_CALL";

const sandboxOptionNames = new Set(["kind", "network", "hide", "bind", "env"]);

/** Where bwrap is missing or cannot make its namespaces: what failed and what to do. */
export type SandboxProbe = { isAvailable: true; bwrap: string; version: string } | { isAvailable: false; cause: string; fix: string };

const probeTimeoutMs = 5_000;

const probes = new Map<string, SandboxProbe>();

/** Whether this machine can run the sandbox: finds `bwrap` on `PATH` and starts `true` in one; cached per `PATH`. */
export function probeSandbox(env: NodeJS.ProcessEnv = process.env): SandboxProbe {
  const path = env.PATH ?? "";
  let probe = probes.get(path);
  if (probe === undefined) {
    probe = runProbe(path);
    probes.set(path, probe);
  }
  return probe;
}

function runProbe(path: string): SandboxProbe {
  if (process.platform !== "linux") {
    return { isAvailable: false, cause: `bubblewrap runs on Linux only, not on ${process.platform}`, fix: 'run on Linux, or pass sandbox: "none"' };
  }
  const bwrap = findExecutable("bwrap", path);
  if (bwrap === undefined) {
    return {
      isAvailable: false,
      cause: "bwrap (bubblewrap) is not on PATH",
      fix: "install it (Debian and Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`)",
    };
  }
  const version = spawnSync(bwrap, ["--version"], { encoding: "utf8", timeout: probeTimeoutMs });
  const trial = spawnSync(bwrap, [...namespaceArgs(false, true), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "true"], {
    encoding: "utf8",
    timeout: probeTimeoutMs,
    env: { PATH: path },
  });
  if (trial.status !== 0) {
    const said = `${trial.stderr ?? ""}`.trim() || (trial.error?.message ?? `exit ${trial.status ?? trial.signal}`);
    return {
      isAvailable: false,
      cause: `${bwrap} could not make a sandbox: ${said}`,
      fix: "use bubblewrap 0.8 or later (it needs --disable-userns) and allow unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`, and on Ubuntu 24.04 `kernel.apparmor_restrict_unprivileged_userns=0`), or run inside a container that permits them",
    };
  }
  return { isAvailable: true, bwrap, version: `${version.stdout ?? ""}`.trim() };
}

/** The first executable file `name` in a folder of `path`, by its path (a folder of that name is no program). */
export function findExecutable(name: string, path: string): string | undefined {
  for (const folder of path.split(delimiter)) {
    if (folder === "") continue;
    const candidate = join(folder, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {}
  }
  return undefined;
}

/**
 * Checks `option` and the machine. Undefined for `"none"`; throws
 * `TP_ERR_INVALID_OPTION` for a bad option and `TP_ERR_SANDBOX_UNAVAILABLE`
 * (cause and fix) where bwrap cannot run.
 */
export function resolveSandbox(option: unknown, name = "sandbox"): ResolvedSandbox | undefined {
  if (option === undefined || option === "none") return undefined;
  const given: BwrapSandboxOptions | undefined =
    option === "bwrap" ? { kind: "bwrap" } : typeof option === "object" && option !== null ? (option as BwrapSandboxOptions) : undefined;
  if (given === undefined || given.kind !== "bwrap") throw invalidOption(name, '"none", "bwrap" or { kind: "bwrap", … }', option);
  for (const key of Object.keys(given)) {
    if (!sandboxOptionNames.has(key)) throw invalidOption(`${name}.${key}`, `one of ${[...sandboxOptionNames].join(", ")}`, key);
  }
  const network = given.network ?? false;
  if (typeof network !== "boolean") throw invalidOption(`${name}.network`, "a boolean", network);
  const hide = absolutePaths(given.hide ?? [], `${name}.hide`);
  const bindGiven = given.bind ?? [];
  if (!Array.isArray(bindGiven)) throw invalidOption(`${name}.bind`, "an array of { path, writable? }", bindGiven);
  const bind = bindGiven.map((entry, index) => {
    if (typeof entry !== "object" || entry === null) throw invalidOption(`${name}.bind[${index}]`, "{ path, writable? }", entry);
    const [path] = absolutePaths([entry.path], `${name}.bind[${index}].path`);
    const writable = entry.writable ?? false;
    if (typeof writable !== "boolean") throw invalidOption(`${name}.bind[${index}].writable`, "a boolean", writable);
    return { path: path!, writable };
  });
  const env = given.env ?? [];
  if (!Array.isArray(env) || env.some((variable) => typeof variable !== "string" || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(variable)))
    throw invalidOption(`${name}.env`, "an array of environment variable names", env);
  const probe = probeSandbox();
  if (!probe.isAvailable) throw sandboxUnavailable(probe);
  return { kind: "bwrap", bwrap: probe.bwrap, network, hide, bind, env: [...env] };
}

/** The error that refuses a runtime, a server or the extension where the sandbox asked for cannot run. */
export function sandboxUnavailable(probe: Extract<SandboxProbe, { isAvailable: false }>): ToolpoolError {
  return new ToolpoolError(
    "TP_ERR_SANDBOX_UNAVAILABLE",
    `The bwrap sandbox cannot run here: ${probe.cause}. To fix: ${probe.fix}. Nothing runs unsandboxed in its place; pass sandbox: "none" to run commands without one.`,
  );
}

function absolutePaths(paths: unknown, name: string): string[] {
  if (!Array.isArray(paths)) throw invalidOption(name, "an array of absolute paths", paths);
  return paths.map((path) => {
    if (typeof path !== "string" || !isAbsolute(path) || path.includes("\0")) throw invalidOption(name, "absolute paths", path);
    return resolve(path);
  });
}

/**
 * Every namespace, the user's too so that no nested one can be made (a user
 * namespace is where unprivileged processes regain capabilities);
 * `diesWithParent` ties the sandbox to the process that started it.
 */
function namespaceArgs(network: boolean, diesWithParent: boolean): string[] {
  return [
    "--unshare-all",
    "--unshare-user",
    "--disable-userns",
    ...(network ? ["--share-net"] : []),
    ...(diesWithParent ? ["--die-with-parent"] : []),
    "--new-session",
    "--cap-drop",
    "ALL",
  ];
}

/** Where a command runs in its sandbox. */
export interface SandboxPlace {
  /** Bound read-write at this path (and at its real path). */
  workspace: string;
  /** The command's working folder. */
  cwd: string;
  /** Hidden besides the defaults: other sessions' workspaces, the runtime's temporary files. */
  alsoHidden?: readonly string[];
  /**
   * What the command leaves running outlives it (bash's `keepBackground`):
   * the sandbox lasts while anything in it does, and ends when toolpool ends
   * its processes, not with the process that started it.
   */
  keepsBackground?: boolean;
}

/** A call's sandbox and where in it the call's processes run (their working folder is each spawn's). */
export interface CallSandbox {
  readonly sandbox: ResolvedSandbox;
  readonly place: Omit<SandboxPlace, "cwd" | "keepsBackground">;
}

/**
 * The argv that runs `file args` in a sandbox. An absolute `file` in a
 * hidden folder (pi's own ripgrep and fd in the home folder) is bound
 * read-only so that it still runs. Throws for a workspace of `/`.
 */
export function sandboxedCommand(
  sandbox: ResolvedSandbox,
  at: SandboxPlace,
  file: string,
  args: readonly string[],
): { file: string; args: string[] } {
  const workspace = realPathOf(at.workspace) ?? resolve(at.workspace);
  // It would lay the host's /dev and /proc over the sandbox's own.
  if (workspace === "/") throw new Error("A sandboxed command cannot have / for its workspace: give it a folder of its own");
  // A mount lands on a real path: links are followed, and what does not exist has nothing to hide.
  const hidden = new Set<string>();
  for (const path of [...defaultHiddenPaths, tmpdir(), ...sandbox.hide, ...(at.alsoHidden ?? [])]) {
    const real = realPathOf(path);
    if (real !== undefined && real !== "/") hidden.add(real);
  }
  const binds = sandbox.bind.flatMap(({ path, writable }) => {
    const real = realPathOf(path);
    return real === undefined ? [] : [{ path: real, writable }];
  });
  const given = resolve(at.workspace);
  const shown = [workspace, given, ...binds.map(({ path }) => path)];
  const mounts: { path: string; rank: number; args: string[] }[] = [];
  // A path inside another hidden one needs a mount of its own only where a
  // shown folder holds it (no mount point then names it in an empty folder).
  for (const path of hidden) {
    if (!isCoveredBy(path, hidden) || shown.some((folder) => folder !== path && isInside(path, folder)))
      mounts.push({ path, rank: 0, args: hideArgs(path) });
  }
  for (const { path, writable } of binds) mounts.push({ path, rank: 1, args: [writable ? "--bind" : "--ro-bind", path, path] });
  const real = isAbsolute(file) ? realPathOf(file) : undefined;
  const isProgramHidden = real !== undefined && [...hidden].some((path) => isInside(real, path));
  const program = isProgramHidden ? real : file;
  if (isProgramHidden) mounts.push({ path: real, rank: 1, args: ["--ro-bind", real, real] });
  mounts.push({ path: workspace, rank: 2, args: ["--bind", workspace, workspace] });
  // The path pi's tools use, where it differs from the real one: results and `cd` read as without a sandbox.
  if (given !== workspace) mounts.push({ path: given, rank: 2, args: ["--bind", workspace, given] });
  // The deeper path wins, whatever it is: a hidden path inside the workspace or a bound folder stays hidden, a folder bound inside a hidden one shows.
  mounts.sort((x, y) => depthOf(x.path) - depthOf(y.path) || x.rank - y.rank);
  const argv = [...namespaceArgs(sandbox.network, at.keepsBackground !== true), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"];
  for (const mount of mounts) argv.push(...mount.args);
  argv.push("--chdir", at.cwd, "--", program, ...args);
  return { file: sandbox.bwrap, args: argv };
}

/** Whether another of `hidden` holds `path`. */
function isCoveredBy(path: string, hidden: ReadonlySet<string>): boolean {
  for (const other of hidden) if (other !== path && isInside(path, other)) return true;
  return false;
}

function depthOf(path: string): number {
  return path.split(sep).filter((part) => part !== "").length;
}

function isInside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : `${folder}${sep}`);
}

/** A folder behind an empty one; a file behind the null device, which the sandbox's mounts make unreadable. */
function hideArgs(path: string): string[] {
  let isFolder = true;
  try {
    isFolder = statSync(path).isDirectory();
  } catch {}
  return isFolder ? ["--tmpfs", path] : ["--ro-bind", "/dev/null", path];
}

function realPathOf(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Only the allowed variables of `env`, pi's session variables and the
 * marker of a call's processes; toolpool's other variables (a server's
 * `TOOLPOOL_TOKEN`) stay behind like the rest.
 */
export function sandboxedEnv(sandbox: ResolvedSandbox, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const allowed = new Set([...defaultSandboxEnv, ...shellEnvOfPi, callMarkerName, ...sandbox.env]);
  const kept: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && allowed.has(name)) kept[name] = value;
  }
  return kept;
}
