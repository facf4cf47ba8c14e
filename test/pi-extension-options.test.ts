import { availableParallelism } from "node:os";

import { describe, expect, it } from "vitest";

import { type FlagValue, resolvePiExtensionOptions } from "./support/internals.js";

/** pi's `getFlag` over the given values. */
function flags(values: Record<string, FlagValue> = {}): (name: string) => FlagValue {
  return (name) => values[name];
}

describe("resolvePiExtensionOptions", () => {
  it("defaults: cores up to 8 threads, pi's bash deadlines, not confined, pi's image resizing", () => {
    expect(resolvePiExtensionOptions(flags(), {})).toEqual({
      threads: Math.min(8, availableParallelism()),
      ioThreads: undefined,
      bashTimeoutMs: 120_000,
      bashMaxTimeoutMs: 600_000,
      confine: false,
      keepBackground: false,
      statsFile: undefined,
      piOptions: { read: { autoResizeImages: true }, bash: {} },
    });
  });

  it("reads the `toolpool` key of pi's settings, and pi's own settings of its tools", () => {
    const settings = {
      shellPath: "/bin/zsh",
      shellCommandPrefix: "source ~/.profile",
      images: { autoResize: false },
      toolpool: { threads: 3, ioThreads: 6, bashTimeoutMs: 5_000, bashMaxTimeoutMs: 60_000, confine: true, keepBackground: true },
    };
    expect(resolvePiExtensionOptions(flags(), settings)).toEqual({
      threads: 3,
      ioThreads: 6,
      bashTimeoutMs: 5_000,
      bashMaxTimeoutMs: 60_000,
      confine: true,
      keepBackground: true,
      statsFile: undefined,
      piOptions: { read: { autoResizeImages: false }, bash: { shellPath: "/bin/zsh", commandPrefix: "source ~/.profile" } },
    });
  });

  it("puts each flag over the setting", () => {
    const options = resolvePiExtensionOptions(
      flags({
        "toolpool-threads": "2",
        "toolpool-io-threads": "3",
        "toolpool-bash-timeout": "1500",
        "toolpool-bash-max-timeout": "9000",
        "toolpool-confine": true,
        "toolpool-keep-background": true,
        "toolpool-stats": "/tmp/stats.json",
      }),
      { toolpool: { threads: 5, ioThreads: 7, bashTimeoutMs: 5_000, bashMaxTimeoutMs: 60_000, confine: false, keepBackground: false } },
    );
    expect(options).toMatchObject({
      threads: 2,
      bashTimeoutMs: 1_500,
      bashMaxTimeoutMs: 9_000,
      confine: true,
      keepBackground: true,
      statsFile: "/tmp/stats.json",
    });
  });

  it("raises the default cap to a longer default deadline, and lowers the default deadline to a shorter cap", () => {
    expect(resolvePiExtensionOptions(flags({ "toolpool-bash-timeout": "900000" }), {})).toMatchObject({
      bashTimeoutMs: 900_000,
      bashMaxTimeoutMs: 900_000,
    });
    expect(resolvePiExtensionOptions(flags({ "toolpool-bash-max-timeout": "30000" }), {})).toMatchObject({
      bashTimeoutMs: 30_000,
      bashMaxTimeoutMs: 30_000,
    });
  });

  it("refuses a deadline past its cap, both given", () => {
    expect(() => resolvePiExtensionOptions(flags({ "toolpool-bash-timeout": "10000", "toolpool-bash-max-timeout": "5000" }), {})).toThrow(
      expect.objectContaining({ code: "TP_ERR_INVALID_OPTION", message: expect.stringContaining("(10000 ms) to be at most its cap (5000 ms)") }),
    );
  });

  it.each([
    [{ "toolpool-threads": "many" }, {}, 'Expected --toolpool-threads to be an integer from 1 to 256, got `"many"` (string)'],
    [{ "toolpool-threads": "0" }, {}, 'Expected --toolpool-threads to be an integer from 1 to 256, got `"0"` (string)'],
    [{ "toolpool-bash-timeout": "1.5" }, {}, "Expected --toolpool-bash-timeout to be an integer from 1 to 2147483647"],
    [{}, { toolpool: "fast" }, 'Expected the `toolpool` setting to be an object, got `"fast"` (string)'],
    [{ "toolpool-io-threads": "-1" }, {}, 'Expected --toolpool-io-threads to be an integer from 1 to 256, got `"-1"` (string)'],
    [{}, { toolpool: { threads: 1000 } }, "Expected the `toolpool.threads` setting to be an integer from 1 to 256, got `1000` (number)"],
    [{}, { toolpool: { bashTimeoutMs: "5s" } }, "Expected the `toolpool.bashTimeoutMs` setting to be an integer"],
    [{}, { toolpool: { confine: "yes" } }, 'Expected the `toolpool.confine` setting to be a boolean, got `"yes"` (string)'],
    [{}, { toolpool: { keepBackground: 1 } }, "Expected the `toolpool.keepBackground` setting to be a boolean, got `1` (number)"],
    [{}, { toolpool: { confnie: true } }, "Unknown setting `toolpool.confnie`; did you mean `toolpool.confine`?"],
    [{ "toolpool-confine": true }, { toolpool: { thread: 4 } }, "Unknown setting `toolpool.thread`; did you mean `toolpool.threads`?"],
  ] as const)("names what is wrong: %j %j", (flagValues, settings, message) => {
    expect(() => resolvePiExtensionOptions(flags(flagValues), settings)).toThrow(
      expect.objectContaining({ code: "TP_ERR_INVALID_OPTION", message: expect.stringContaining(message) }),
    );
  });

  it("takes --toolpool-sandbox over the `sandbox` setting, none by default, and confines paths with the sandbox", () => {
    expect(resolvePiExtensionOptions(flags(), {})).toMatchObject({ sandbox: undefined, confine: false });
    expect(resolvePiExtensionOptions(flags({ "toolpool-sandbox": "bwrap" }), {})).toMatchObject({ sandbox: "bwrap", confine: true });
    expect(resolvePiExtensionOptions(flags(), { toolpool: { sandbox: "bwrap" } })).toMatchObject({ sandbox: "bwrap", confine: true });
    expect(resolvePiExtensionOptions(flags({ "toolpool-sandbox": "none" }), { toolpool: { sandbox: "bwrap" } })).toMatchObject({
      sandbox: undefined,
      confine: false,
    });
    expect(resolvePiExtensionOptions(flags({ "toolpool-sandbox": "bwrap" }), { toolpool: { sandbox: "none", confine: true } })).toMatchObject({
      sandbox: "bwrap",
      confine: true,
    });
  });

  it.each([
    [{ "toolpool-sandbox": "docker" }, {}, 'Expected --toolpool-sandbox to be "bwrap" or "none", got `"docker"` (string)'],
    [{}, { toolpool: { sandbox: true } }, 'Expected the `toolpool.sandbox` setting to be "bwrap" or "none", got `true` (boolean)'],
    [
      { "toolpool-sandbox": "bwrap" },
      { toolpool: { confine: false } },
      "Expected the `toolpool.confine` setting to be true (or unset) with the sandbox",
    ],
    [{}, { toolpool: { sandbx: "bwrap" } }, "Unknown setting `toolpool.sandbx`; did you mean `toolpool.sandbox`?"],
  ] as const)("names what is wrong with the sandbox's flag or setting: %j %j", (flagValues, settings, message) => {
    expect(() => resolvePiExtensionOptions(flags(flagValues), settings)).toThrow(
      expect.objectContaining({ code: "TP_ERR_INVALID_OPTION", message: expect.stringContaining(message) }),
    );
  });

  it("returns frozen options", () => {
    expect(Object.isFrozen(resolvePiExtensionOptions(flags(), undefined))).toBe(true);
  });
});
