import { readFileSync } from "node:fs";

import { describe, expect, it } from "vitest";

import * as toolpool from "toolpool";

describe("errorCodes", () => {
  const catalogue = readFileSync(new URL("../docs/errors.md", import.meta.url), "utf8");
  const codes = Object.keys(toolpool.errorCodes);

  it("exports every code used in the source, and nothing else", () => {
    const source = [
      "errors.ts",
      "workers/worker-pool.ts",
      "workers/thread/worker-entry.ts",
      "runtime.ts",
      "server/create-server.ts",
      "fleet/remote-pool.ts",
      "fleet/fleet-node.ts",
    ]
      .map((file) => readFileSync(new URL(`../src/${file}`, import.meta.url), "utf8"))
      .join("\n");
    const used = new Set(source.match(/TP_ERR_[A-Z_]+/g));
    expect([...used].sort()).toEqual([...codes].sort());
  });

  it.each(Object.keys(toolpool.errorCodes))("documents %s in docs/errors.md", (code) => {
    expect(catalogue).toMatch(new RegExp(`\\| \`${code}\` \\|`));
  });

  it("gives ToolpoolError its code and name", () => {
    const error = new toolpool.ToolpoolError("TP_ERR_CLOSED", "closed");
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("ToolpoolError");
    expect(error.code).toBe("TP_ERR_CLOSED");
  });
});
