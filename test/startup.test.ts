/**
 * The cold-start guard: what `import("toolpool")` and a new runtime's first
 * batch load, by count and by name, so that a change that puts a heavy
 * dependency back on the import path fails here. How long a cold start takes
 * is measured in bench/ (suite `startup`), never asserted in a test.
 *
 * Each case runs in a fresh process (fixtures/startup/list-modules.mjs),
 * which lists every file the main thread loaded: ES modules through module
 * hooks, CommonJS files through require.cache.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";

import { createRuntime, ToolpoolError, workerTool } from "toolpool";

const fixtures = new URL("./fixtures/startup/", import.meta.url);
const root = fileURLToPath(new URL("..", import.meta.url));

/** Packages that only the fleet, the server, MCP, tracing or a built-in tool's worker need. */
const notOnImport = [
  "bullmq",
  "ioredis",
  "fastify",
  "@fastify",
  "prom-client",
  "@modelcontextprotocol",
  "@opentelemetry",
  "diff",
  "ignore",
  "typebox",
  "ajv",
  "zod",
  "commander",
];

/**
 * Ceilings, a little above today's counts: on import, toolpool's own code is
 * dist/index.js and the chunks it shares with the other entries; after a first batch, 22 (the
 * runtime's two compiled validators and ajv's `equal` helper). Raise them
 * only with the bench figure that shows the new files are worth their load.
 */
const budget = { filesOnImport: 20, filesAfterFirstBatch: 25 };

interface Listing {
  files: string[];
  result?: { workerFiles: string[] };
}

function listModules(specifier: string): Promise<Listing> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [fileURLToPath(new URL("list-modules.mjs", fixtures)), specifier],
      { cwd: root, timeout: 60_000 },
      (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`list-modules.mjs failed: ${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout) as Listing);
      },
    );
  });
}

/** The package a file belongs to (`@scope/name` or `name`), or undefined for one of toolpool's own. */
function packageOf(file: string): string | undefined {
  const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
  return match?.[1];
}

const distUrl = new URL("../dist/", import.meta.url).href;
/** The files the build bundles toolpool's modules into: the three entries' code and their shared chunks. */
const isBundleFile = (file: string): boolean => file === "index.js" || /^(entry|chunk)-[^/]+\.js$/.test(file);

const packagesOf = (files: string[]): Set<string> => new Set(files.map(packageOf).filter((name) => name !== undefined));

describe("cold start", () => {
  it('import("toolpool") loads piscina and eventemitter3, and none of what only the fleet, the server, MCP, tracing or the tools need', async () => {
    const { files } = await listModules("toolpool");
    const packages = packagesOf(files);
    expect([...packages].sort()).toEqual(["eventemitter3", "piscina"]);
    for (const name of notOnImport) expect(packages.has(name), name).toBe(false);
    const own = files.filter((file) => packageOf(file) === undefined).map((file) => file.slice(distUrl.length));
    expect(own[0]).toBe("index.js");
    expect(own.filter((file) => !isBundleFile(file))).toEqual([]);
    expect(files.length).toBeLessThanOrEqual(budget.filesOnImport);
  });

  it("a new runtime's first batch compiles nothing with ajv and loads TypeBox as its one bundle, and its worker does not load Piscina's pool", async () => {
    const { files, result } = await listModules(new URL("first-batch.mjs", fixtures).href);
    const packages = packagesOf(files);
    for (const name of ["bullmq", "ioredis", "fastify", "@modelcontextprotocol", "@opentelemetry", "diff", "ignore", "typebox"]) {
      expect(packages.has(name), name).toBe(false);
    }
    // Only ajv's runtime helpers, which the validators compiled at build time require.
    expect(files.filter((file) => packageOf(file) === "ajv" && !file.includes("/ajv/dist/runtime/"))).toEqual([]);
    expect(files.length).toBeLessThanOrEqual(budget.filesAfterFirstBatch);
    const workerFiles = result!.workerFiles;
    expect(workerFiles.some((file) => file.endsWith("/piscina/dist/worker.js"))).toBe(true);
    expect(workerFiles.some((file) => file.endsWith("/dist/workers/thread/worker-entry.cjs"))).toBe(true);
    expect(workerFiles.filter((file) => file.includes("/piscina/dist/") && !/\/(worker|symbols|common)\.js$/.test(file))).toEqual([]);
  });

  it("one copy of each module: toolpool and toolpool/mcp share their modules, and no entry reaches a module outside the bundle", async () => {
    const { files } = await listModules(new URL("both-entries.mjs", fixtures).href);
    const own = files.filter((file) => packageOf(file) === undefined).map((file) => file.slice(distUrl.length));
    expect(own.filter((file) => !isBundleFile(file)).sort()).toEqual(["mcp/index.js"]);
    expect(new Set(own).size).toBe(own.length);
    // What the three entries (the CLI's too) import of toolpool's own: bundle files only, so no module loads twice.
    const dist = fileURLToPath(distUrl);
    const bundleFiles = readdirSync(dist).filter(isBundleFile);
    expect(bundleFiles.filter((file) => file.startsWith("entry-")).sort()).toEqual(["entry-cli.js", "entry-mcp.js"]);
    for (const file of bundleFiles) {
      const code = readFileSync(join(dist, file), "utf8");
      const relativeImports = [...code.matchAll(/(?:from|import)\s*\(?\s*"(\.[^"]+)"/g)].map((match) => match[1]!);
      for (const specifier of relativeImports) expect(isBundleFile(specifier.replace(/^\.\//, "")), `${file} imports ${specifier}`).toBe(true);
    }
    expect(readFileSync(join(dist, "cli/main.js"), "utf8")).toBe('#!/usr/bin/env node\nexport * from "../entry-cli.js";\n');
  });

  it("a ToolpoolError of another copy of toolpool's modules (the CLI's, toolpool/mcp's) is still instanceof ToolpoolError", async () => {
    const copy = (await import("../dist/errors.js")) as { ToolpoolError: typeof ToolpoolError };
    expect(copy.ToolpoolError).not.toBe(ToolpoolError);
    expect(new copy.ToolpoolError("TP_ERR_INVALID_OPTION", "x")).toBeInstanceOf(ToolpoolError);
    expect(new ToolpoolError("TP_ERR_INVALID_OPTION", "x")).toBeInstanceOf(copy.ToolpoolError);
    expect(Object.assign(new Error("x"), { name: "ToolpoolError", code: "TP_ERR_INVALID_OPTION" })).not.toBeInstanceOf(ToolpoolError);
    expect((null as unknown) instanceof ToolpoolError).toBe(false);
  });

  it("a worker loads each kind of tool module as import() would: CommonJS, top-level await, one instance per query string", async () => {
    const tool = (name: string, module: URL) => workerTool({ name, description: name, parameters: { type: "object" }, module });
    const runtime = createRuntime({
      tools: [
        tool("cjs", new URL("cjs-tool.cjs", fixtures)),
        tool("tla", new URL("tla-tool.mjs", fixtures)),
        tool("plain", new URL("instance-tool.mjs", fixtures)),
        tool("first", new URL("instance-tool.mjs?instance=1", fixtures)),
        tool("second", new URL("instance-tool.mjs?instance=2", fixtures)),
      ],
      pool: { maxThreads: 1 },
    });
    try {
      const names = ["cjs", "tla", "plain", "first", "second"];
      const { messages } = await runtime.executeToolCalls({
        role: "assistant",
        content: names.map((name) => ({ type: "toolCall" as const, id: name, name, arguments: {} })),
      });
      expect(messages.map((message) => [message.toolCallId, message.isError, (message.content[0] as { text: string }).text])).toEqual([
        ["cjs", false, "cjs"],
        ["tla", false, "tla"],
        ["plain", false, ""],
        ["first", false, "?instance=1"],
        ["second", false, "?instance=2"],
      ]);
    } finally {
      await runtime.close();
    }
  });

  it.each(["throwing-tool.cjs", "throwing-tool.mjs"])(
    "a tool module (%s) that throws while loading runs once, and its error ends the call",
    async (file) => {
      const countFile = join(mkdtempSync(join(tmpdir(), "toolpool-load-")), "count");
      writeFileSync(countFile, "");
      const runtime = createRuntime({
        tools: [workerTool({ name: "throws", description: "", parameters: { type: "object" }, module: new URL(file, fixtures) })],
        pool: { maxThreads: 1, env: { ...process.env, TOOLPOOL_TEST_COUNT_FILE: countFile } },
      });
      try {
        const { messages } = await runtime.executeToolCalls({
          role: "assistant",
          content: [{ type: "toolCall", id: "t", name: "throws", arguments: {} }],
        });
        expect(messages[0]!.isError).toBe(true);
        expect((messages[0]!.content[0] as { text: string }).text).toContain("this module refuses to load");
        expect(readFileSync(countFile, "utf8")).toBe("evaluated\n");
      } finally {
        await runtime.close();
        rmSync(dirname(countFile), { recursive: true, force: true });
      }
    },
  );
});
