/**
 * `--sandbox bwrap|none` and its companions for `serve` and `mcp`, and the servers' default: with bash among the coding
 * tools and no `--sandbox`, the bwrap sandbox where this machine can make one, none (said as a warning) where it cannot.
 * Either way the server says at start which isolation its commands run with.
 */
import { isAbsolute, resolve } from "node:path";

import { InvalidArgumentError, Option } from "commander";

import { type BwrapSandboxOptions, probeSandbox, type SandboxOption } from "../index.js";
import { UsageError } from "./usage-error.js";

/** The sandbox flags, as commander hands them over. */
export interface SandboxCliOptions {
  sandbox?: "bwrap" | "none";
  sandboxNetwork?: boolean;
  sandboxHide?: string[];
  sandboxBind?: string[];
  sandboxBindRw?: string[];
  sandboxEnv?: string[];
}

/** The choice made, and the line that tells the operator. */
export interface ServedSandbox {
  /** Undefined without coding tools: there is nothing to sandbox. */
  option: SandboxOption | undefined;
  /** `PREFIX: …`, without its newline; undefined without coding tools. */
  line: string | undefined;
}

const sandboxKinds: readonly string[] = ["bwrap", "none"];

/** `--sandbox`, `--sandbox-network`, and the repeatable `--sandbox-hide`, `--sandbox-bind`, `--sandbox-bind-rw`, `--sandbox-env`. */
export function sandboxOptions(): Option[] {
  const paths = (value: string, previous: string[] | undefined) => [...(previous ?? []), absolutePath(value)];
  return [
    new Option(
      "--sandbox <kind>",
      "with --coding-tools: bwrap runs each bash command (and grep's and find's processes) in a bubblewrap sandbox of its own, none runs them as this user (default: bwrap where bash is served and this machine can make one, with a warning where it cannot; none otherwise)",
    ).choices(sandboxKinds),
    new Option("--sandbox-network", "with the sandbox: let commands reach the network, this host's loopback included (default: no network)"),
    new Option("--sandbox-hide <path>", "with the sandbox: a path hidden behind an empty folder, besides the default ones (repeatable)").argParser(
      paths,
    ),
    new Option(
      "--sandbox-bind <path>",
      "with the sandbox: a folder bound read-only at the same path, even inside a hidden one (repeatable)",
    ).argParser(paths),
    new Option("--sandbox-bind-rw <path>", "with the sandbox: a folder bound read-write at the same path (repeatable)").argParser(paths),
    new Option(
      "--sandbox-env <name>",
      "with the sandbox: an environment variable passed to commands besides the default ones (repeatable)",
    ).argParser((value: string, previous: string[] | undefined) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(value)) throw new InvalidArgumentError("Expected an environment variable name.");
      return [...(previous ?? []), value];
    }),
  ];
}

function absolutePath(value: string): string {
  if (value === "" || value.includes("\0")) throw new InvalidArgumentError("Expected a path.");
  return isAbsolute(value) ? resolve(value) : resolve(process.cwd(), value);
}

/**
 * The sandbox a server gives its coding tools. `--sandbox bwrap` (or any `--sandbox-*` flag) where bwrap cannot run is
 * a usage error naming the cause and the fix: asked for, it is never dropped. `serverFiles` (the server's token and
 * config files) are hidden in it besides `--sandbox-hide`: they may lie where commands could read them.
 */
export function resolveServedSandbox(
  prefix: string,
  codingTools: true | string[] | undefined,
  options: SandboxCliOptions,
  serverFiles: readonly (string | undefined)[] = [],
): ServedSandbox {
  const extras = sandboxExtras(options);
  if (codingTools === undefined) {
    const given = options.sandbox === undefined ? extras.flags[0] : "--sandbox";
    if (given !== undefined) throw new UsageError(`${given} needs --coding-tools`);
    return { option: undefined, line: undefined };
  }
  if (options.sandbox === "none") {
    if (extras.flags.length > 0) throw new UsageError(`${extras.flags[0]} and --sandbox none contradict each other`);
    return { option: "none", line: `${prefix}: coding tools' commands run unsandboxed, as this user (--sandbox none)` };
  }
  const isAsked = options.sandbox === "bwrap" || extras.flags.length > 0;
  const servesBash = codingTools === true || codingTools.includes("bash");
  if (!isAsked && !servesBash) {
    return {
      option: "none",
      line: `${prefix}: coding tools run unsandboxed (without bash the sandbox is not the default: --sandbox bwrap asks for it)`,
    };
  }
  const probe = probeSandbox();
  if (!probe.isAvailable) {
    if (isAsked) {
      const flag = options.sandbox === "bwrap" ? "--sandbox bwrap" : extras.flags[0];
      throw new UsageError(
        `${flag}: the bwrap sandbox cannot run here (TP_ERR_SANDBOX_UNAVAILABLE): ${probe.cause}. To fix: ${probe.fix}; or pass --sandbox none to run commands unsandboxed`,
      );
    }
    return {
      option: "none",
      line: `${prefix}: warning: coding tools' commands run unsandboxed, as this user: ${probe.cause}. To sandbox them: ${probe.fix} (\`toolpool doctor\` shows what this machine offers); --sandbox none says unsandboxed is meant`,
    };
  }
  const ownFiles = serverFiles.filter((file): file is string => file !== undefined).map((file) => resolve(file));
  const hide = [...(extras.option.hide ?? []), ...ownFiles];
  const sandbox: BwrapSandboxOptions = { kind: "bwrap", ...extras.option, ...(hide.length > 0 ? { hide } : {}) };
  const network = sandbox.network === true ? "network on" : "network off";
  return { option: sandbox, line: `${prefix}: coding tools' commands run in a bwrap sandbox (${network}; ${probe.version})` };
}

function sandboxExtras(options: SandboxCliOptions): { option: Omit<BwrapSandboxOptions, "kind">; flags: string[] } {
  const flags: string[] = [];
  const option: Omit<BwrapSandboxOptions, "kind"> = {};
  if (options.sandboxNetwork === true) {
    flags.push("--sandbox-network");
    option.network = true;
  }
  if (options.sandboxHide !== undefined) {
    flags.push("--sandbox-hide");
    option.hide = options.sandboxHide;
  }
  const bind = [
    ...(options.sandboxBind ?? []).map((path) => ({ path, writable: false })),
    ...(options.sandboxBindRw ?? []).map((path) => ({ path, writable: true })),
  ];
  if (options.sandboxBind !== undefined) flags.push("--sandbox-bind");
  if (options.sandboxBindRw !== undefined) flags.push("--sandbox-bind-rw");
  if (bind.length > 0) option.bind = bind;
  if (options.sandboxEnv !== undefined) {
    flags.push("--sandbox-env");
    option.env = options.sandboxEnv;
  }
  return { option, flags };
}
