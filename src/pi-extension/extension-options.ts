/**
 * The extension's options: a flag (`--toolpool-threads 4`) over the
 * `toolpool` key of pi's settings, over the defaults; pi's own tool settings
 * (`shellPath`, `images.autoResize`…) pass through as pi gives them.
 * Pure, so it is tested on every Node.
 * @module
 */
import { availableParallelism } from "node:os";

import { describeValue, ToolpoolError } from "../errors.js";
import { refuseUnknownOptions } from "../option-checks.js";

/** The extension's options, resolved. */
interface PiExtensionOptions {
  /** Threads of the pool that runs read, edit and write. */
  readonly threads: number;
  /** Threads of the pool that bash, grep, find and ls share; undefined: `codingTools`' default. */
  readonly ioThreads: number | undefined;
  /** Deadline of a bash call without its own `timeout`, ms. */
  readonly bashTimeoutMs: number;
  /** Latest deadline of any bash call, its own `timeout` included, ms. */
  readonly bashMaxTimeoutMs: number;
  /** Whether path arguments must stay inside pi's working folder; always with the sandbox. */
  readonly confine: boolean;
  /** `"bwrap"`: each bash command (and grep's and find's processes) in a bubblewrap sandbox; undefined: none, as in pi. */
  readonly sandbox: "bwrap" | undefined;
  /** Whether the background processes a bash call started outlive it, as in pi. */
  readonly keepBackground: boolean;
  /** Where to write the pool's counts as JSON when the session ends, if anywhere. */
  readonly statsFile: string | undefined;
  readonly piOptions: {
    readonly read: { readonly autoResizeImages: boolean };
    readonly bash: { readonly shellPath?: string; readonly commandPrefix?: string };
  };
}

export type FlagValue = boolean | string | undefined;

/** The flags the extension registers (without `--`), with pi's description and type. */
export const extensionFlags = {
  "toolpool-threads": { description: "toolpool: threads running read, edit and write (default: cores, at most 8)", type: "string" },
  "toolpool-io-threads": {
    description: "toolpool: threads running bash, grep, find and ls (default: twice the cores, 4 to 64)",
    type: "string",
  },
  "toolpool-bash-timeout": {
    description: "toolpool: deadline (ms) of a bash call without a timeout of its own (default 120000)",
    type: "string",
  },
  "toolpool-bash-max-timeout": {
    description: "toolpool: latest deadline (ms) of any bash call, its own timeout included (default 600000)",
    type: "string",
  },
  "toolpool-confine": { description: "toolpool: refuse paths outside pi's working folder", type: "boolean" },
  "toolpool-sandbox": {
    description:
      "toolpool: bwrap runs each bash command (and grep's and find's processes) in a bubblewrap sandbox that writes only pi's working folder, without network; none runs them as pi does (default: none)",
    type: "string",
  },
  "toolpool-keep-background": {
    description: "toolpool: let the background processes of a bash call (server &) outlive it, as in pi",
    type: "boolean",
  },
  "toolpool-stats": { description: "toolpool: write the pool's counts as JSON to this file when the session ends", type: "string" },
  "toolpool-status": {
    description:
      "toolpool: print which of pi's tools run on its pools, and the pools' threads, when the session starts (with -p and no prompt: print and exit)",
    type: "boolean",
  },
} as const;

export type ExtensionFlagName = keyof typeof extensionFlags;

const defaultBashTimeoutMs = 120_000;
const defaultBashMaxTimeoutMs = 600_000;
const maxThreads = 256;
/** Node's timers hold at most 2^31 - 1 ms. */
const maxDeadlineMs = 2_147_483_647;

/** Any other key is refused, naming the closest. */
const extensionSettingNames = ["threads", "ioThreads", "bashTimeoutMs", "bashMaxTimeoutMs", "confine", "keepBackground", "sandbox"] as const;

const sandboxKinds: readonly unknown[] = ["bwrap", "none"];

/** Throws `TP_ERR_INVALID_OPTION` naming the wrong flag or setting and what arrived. */
export function resolvePiExtensionOptions(flag: (name: ExtensionFlagName) => FlagValue, settings: unknown): PiExtensionOptions {
  const piSettings = isRecord(settings) ? settings : {};
  const own = piSettings.toolpool;
  if (own !== undefined && !isRecord(own)) throw invalid("the `toolpool` setting", "an object", own);
  const toolpool = own ?? {};
  refuseUnknownOptions(toolpool, extensionSettingNames, "toolpool", "setting");

  const threads =
    integerFlag(flag("toolpool-threads"), "--toolpool-threads", 1, maxThreads) ??
    integerSetting(toolpool.threads, "threads", 1, maxThreads) ??
    Math.min(8, availableParallelism());
  const ioThreads =
    integerFlag(flag("toolpool-io-threads"), "--toolpool-io-threads", 1, maxThreads) ??
    integerSetting(toolpool.ioThreads, "ioThreads", 1, maxThreads);
  const bashTimeoutMs =
    integerFlag(flag("toolpool-bash-timeout"), "--toolpool-bash-timeout", 1, maxDeadlineMs) ??
    integerSetting(toolpool.bashTimeoutMs, "bashTimeoutMs", 1, maxDeadlineMs);
  const bashMaxTimeoutMs =
    integerFlag(flag("toolpool-bash-max-timeout"), "--toolpool-bash-max-timeout", 1, maxDeadlineMs) ??
    integerSetting(toolpool.bashMaxTimeoutMs, "bashMaxTimeoutMs", 1, maxDeadlineMs);
  // A default deadline past the default cap raises the cap with it: asking for a longer default is asking for that.
  const resolvedTimeoutMs = bashTimeoutMs ?? Math.min(defaultBashTimeoutMs, bashMaxTimeoutMs ?? defaultBashTimeoutMs);
  const resolvedMaxTimeoutMs = bashMaxTimeoutMs ?? Math.max(defaultBashMaxTimeoutMs, resolvedTimeoutMs);
  if (resolvedTimeoutMs > resolvedMaxTimeoutMs) {
    throw new ToolpoolError(
      "TP_ERR_INVALID_OPTION",
      `Expected toolpool's bash deadline (${resolvedTimeoutMs} ms) to be at most its cap (${resolvedMaxTimeoutMs} ms)`,
    );
  }

  const confineFlag = flag("toolpool-confine");
  if (toolpool.confine !== undefined && typeof toolpool.confine !== "boolean") {
    throw invalid("the `toolpool.confine` setting", "a boolean", toolpool.confine);
  }
  const sandboxFlag = flag("toolpool-sandbox");
  if (sandboxFlag !== undefined && sandboxFlag !== "" && !sandboxKinds.includes(sandboxFlag)) {
    throw invalid("--toolpool-sandbox", '"bwrap" or "none"', sandboxFlag);
  }
  if (toolpool.sandbox !== undefined && !sandboxKinds.includes(toolpool.sandbox)) {
    throw invalid("the `toolpool.sandbox` setting", '"bwrap" or "none"', toolpool.sandbox);
  }
  const sandbox = (sandboxFlag === undefined || sandboxFlag === "" ? toolpool.sandbox : sandboxFlag) === "bwrap" ? "bwrap" : undefined;
  // The sandbox writes only the working folder: a path argument outside it must be refused too.
  if (sandbox !== undefined && toolpool.confine === false) {
    throw invalid("the `toolpool.confine` setting", "true (or unset) with the sandbox", toolpool.confine);
  }
  const confine = confineFlag === true || (toolpool.confine ?? false) || sandbox !== undefined;
  if (toolpool.keepBackground !== undefined && typeof toolpool.keepBackground !== "boolean") {
    throw invalid("the `toolpool.keepBackground` setting", "a boolean", toolpool.keepBackground);
  }
  const keepBackground = flag("toolpool-keep-background") === true || (toolpool.keepBackground ?? false);

  const stats = flag("toolpool-stats");
  const statsFile = typeof stats === "string" && stats !== "" ? stats : undefined;

  const images = isRecord(piSettings.images) ? piSettings.images : {};
  const shellPath = typeof piSettings.shellPath === "string" && piSettings.shellPath !== "" ? piSettings.shellPath : undefined;
  const commandPrefix = typeof piSettings.shellCommandPrefix === "string" ? piSettings.shellCommandPrefix : undefined;
  return Object.freeze({
    threads,
    ioThreads,
    bashTimeoutMs: resolvedTimeoutMs,
    bashMaxTimeoutMs: resolvedMaxTimeoutMs,
    confine,
    sandbox,
    keepBackground,
    statsFile,
    piOptions: {
      // pi's own default: images are resized unless the setting says false.
      read: { autoResizeImages: images.autoResize !== false },
      bash: {
        ...(shellPath === undefined ? {} : { shellPath }),
        ...(commandPrefix === undefined ? {} : { commandPrefix }),
      },
    },
  });
}

function integerFlag(value: FlagValue, name: string, min: number, max: number): number | undefined {
  if (value === undefined || value === false || value === "") return undefined;
  const number = value === true ? Number.NaN : Number(value);
  if (!Number.isInteger(number) || number < min || number > max) throw invalid(name, `an integer from ${min} to ${max}`, value);
  return number;
}

function integerSetting(value: unknown, key: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(`the \`toolpool.${key}\` setting`, `an integer from ${min} to ${max}`, value);
  }
  return value;
}

function invalid(what: string, expected: string, got: unknown): ToolpoolError {
  return new ToolpoolError("TP_ERR_INVALID_OPTION", `Expected ${what} to be ${expected}, got ${describeValue(got)}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
