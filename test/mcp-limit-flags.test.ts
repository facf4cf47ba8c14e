import { describe, expect, it } from "vitest";

import { runCli } from "./support/cli.js";

// `toolpool mcp`'s load-limit flags (src/cli/mcp-limit-options.ts): a wrong
// value, or a flag for the other transport, is a usage error before it serves.
describe("toolpool mcp: limit flags", () => {
  it.each([
    [["--http", "127.0.0.1:0", "--max-sessions", "0"], /--max-sessions.*Expected an integer >= 1\./],
    [["--http", "127.0.0.1:0", "--max-queue", "-1"], /--max-queue.*Expected an integer >= 0\./],
    [["--max-session-calls", "many"], /--max-session-calls.*Expected an integer >= 1\./],
    [["--call-timeout", "0"], /--call-timeout.*Expected an integer from 1 to 2147483647\./],
    [["--max-sessions", "4"], /--max-sessions needs --http/],
    [["--max-rss", "1000000"], /--max-rss needs --http/],
    [["--http", "127.0.0.1:0", "--drain-timeout", "1000"], /--drain-timeout is for stdio/],
    [["--drain-timeout", "soon"], /--drain-timeout.*Expected an integer from 0 to 2147483647\./],
  ])(
    "exits 2 with one line for %j",
    async (args, message) => {
      const { code, stderr } = await runCli(["mcp", ...args]);
      expect(code).toBe(2);
      expect(stderr.trimEnd().split("\n")).toHaveLength(1);
      expect(stderr).toMatch(message);
    },
    60_000,
  );
});
