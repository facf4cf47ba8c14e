import { describe, expect, it } from "vitest";

import { type ExtensionStatus, formatExtensionStatus } from "./support/internals.js";

const pi = { version: "1.6.0", folder: "/usr/lib/node_modules/@earendil-works/pi-coding-agent" };

describe("formatExtensionStatus", () => {
  it("names toolpool's pi, who defines each tool pi runs, and each pool's tools and threads", () => {
    const status: ExtensionStatus = {
      toolpoolVersion: "0.1.0",
      pi,
      tools: [
        { name: "read", definedBy: "toolpool", isActive: true },
        { name: "bash", definedBy: "/home/me/.pi/agent/extensions/sandbox.ts", isActive: true },
        { name: "grep", definedBy: "pi", isActive: false },
        { name: "ls", definedBy: "none", isActive: false },
      ],
      pools: [
        { name: "shared", tools: ["read", "edit", "write"], maxThreads: 8, threads: 2 },
        { name: "toolpool:coding-io", tools: ["bash", "grep"], maxThreads: 16, threads: 0 },
      ],
    };
    expect(formatExtensionStatus(status)).toBe(
      [
        "toolpool 0.1.0 in pi 1.6.0 (/usr/lib/node_modules/@earendil-works/pi-coding-agent)",
        "read: on the pool, active",
        "bash: not on the pool (/home/me/.pi/agent/extensions/sandbox.ts), active",
        "grep: not on the pool (pi's own)",
        "ls: not on the pool (pi has no tool of this name)",
        "pool shared: read, edit, write; up to 8 threads, 2 started",
        "pool toolpool:coding-io: bash, grep; up to 16 threads, 0 started",
        "",
      ].join("\n"),
    );
  });

  it("says how bash's commands are isolated, after the tools, when it is known", () => {
    const status: ExtensionStatus = {
      toolpoolVersion: "0.1.0",
      pi,
      tools: [{ name: "bash", definedBy: "toolpool", isActive: true }],
      sandbox: "bwrap, each bash command in a sandbox of its own (network off; bubblewrap 0.8.0)",
      pools: [{ name: "toolpool:coding-io", tools: ["bash"], maxThreads: 4, threads: 0 }],
    };
    expect(formatExtensionStatus(status).split("\n").slice(1, 4)).toEqual([
      "bash: on the pool, active",
      "sandbox: bwrap, each bash command in a sandbox of its own (network off; bubblewrap 0.8.0)",
      "pool toolpool:coding-io: bash; up to 4 threads, 0 started",
    ]);
  });

  it("says why there are no pools", () => {
    const status: ExtensionStatus = { toolpoolVersion: "0.1.0", pi, tools: [], pools: { error: "Expected --toolpool-threads to be an integer" } };
    expect(formatExtensionStatus(status)).toContain("pools: none (Expected --toolpool-threads to be an integer)\n");
  });
});
