import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { installLine, isPackageMissing, optionalPackages } from "./support/built.js";
import { runCli } from "./support/cli.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const packageJson = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};
const optionalNames = Object.values(optionalPackages).flatMap(({ packages }) => Object.keys(packages));
const run = promisify(execFile);

describe("optional packages", () => {
  it("lists each feature's packages as optional peer dependencies, with package.json's ranges, installed in a checkout", () => {
    for (const { packages } of Object.values(optionalPackages)) {
      for (const [name, range] of Object.entries(packages)) {
        expect(packageJson.peerDependencies[name], name).toBe(range);
        expect(packageJson.peerDependenciesMeta[name]?.optional, name).toBe(true);
        expect(packageJson.devDependencies[name], name).toBe(range);
        expect(packageJson.dependencies[name], name).toBeUndefined();
      }
    }
    expect(installLine("server")).toBe("npm install fastify@^5.12.8 @fastify/under-pressure@^9.2.0 prom-client@^15.1.3");
  });

  it("loads nothing but dependencies from the package entry and the CLI's, statically", () => {
    const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));
    const seen = new Set<string>();
    const bare = new Map<string, string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, "utf8");
      // Static imports and re-exports only (`import(...)` is how optional packages load).
      for (const match of text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s*"([^"]+)"|^\s*import\s*"([^"]+)"/gm)) {
        const specifier = (match[1] ?? match[2])!;
        if (specifier.startsWith(".")) visit(resolve(dirname(file), specifier));
        else if (!builtins.has(specifier)) {
          const name = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!;
          bare.set(name, file);
        }
      }
    };
    visit(join(root, "dist", "index.js"));
    visit(join(root, "dist", "cli", "main.js"));
    // The walk reached the runtime's and the CLI's own dependencies.
    expect([...bare.keys()]).toEqual(expect.arrayContaining(["piscina", "ajv", "commander"]));
    for (const [name, file] of bare) expect(packageJson.dependencies[name], `${name} (imported by ${file})`).toBeDefined();
    for (const name of optionalNames) expect(bare.has(name), name).toBe(false);
  });

  it("tells a missing package from a package whose own import fails", () => {
    const require = (name: string) => {
      try {
        return import.meta.resolve(name);
      } catch (error) {
        return error;
      }
    };
    const missing = require("toolpool-no-such-package");
    expect(isPackageMissing(missing, "toolpool-no-such-package")).toBe(true);
    expect(isPackageMissing(missing, "toolpool-no-such")).toBe(false);
    expect(isPackageMissing(new Error("Cannot find module 'fastify'"), "fastify")).toBe(false);
  });

  describe("installed without them", () => {
    let project: string;
    beforeAll(() => {
      // A project whose node_modules holds toolpool's package (dist and
      // package.json, copied) and every installed package but the optional
      // ones (linked), as a library-only install has them.
      project = mkdtempSync(join(tmpdir(), "toolpool-light-"));
      const modules = join(project, "node_modules");
      cpSync(join(root, "dist"), join(modules, "toolpool", "dist"), { recursive: true });
      cpSync(join(root, "package.json"), join(modules, "toolpool", "package.json"));
      const scopesOfOptional = new Set(optionalNames.filter((name) => name.startsWith("@")).map((name) => name.split("/")[0]!));
      for (const entry of readdirSync(join(root, "node_modules"))) {
        if (entry.startsWith(".") || entry === "toolpool") continue;
        if (scopesOfOptional.has(entry)) {
          for (const inner of readdirSync(join(root, "node_modules", entry))) {
            if (optionalNames.includes(`${entry}/${inner}`)) continue;
            mkdirSync(join(modules, entry), { recursive: true });
            symlinkSync(join(root, "node_modules", entry, inner), join(modules, entry, inner));
          }
        } else if (!optionalNames.includes(entry)) {
          symlinkSync(join(root, "node_modules", entry), join(modules, entry));
        }
      }
      writeFileSync(join(project, "package.json"), '{ "name": "light", "type": "module", "private": true }\n');
    });
    afterAll(() => rmSync(project, { recursive: true, force: true }));

    it("runs a batch, and names the package and the install line where a feature needs one", async () => {
      writeFileSync(
        join(project, "main.js"),
        `import { builtinTools, createRuntime, createServer, FleetNode } from "toolpool";
const runtime = createRuntime({ tools: builtinTools(), pool: { maxThreads: 1 } });
const { messages } = await runtime.executeToolCalls({ role: "assistant", content: [{ type: "toolCall", id: "1", name: "hash", arguments: { text: "light" } }] });
const out = { text: messages[0].content[0].text, isError: messages[0].isError };
try { createServer(runtime); } catch (error) { out.server = { code: error.code, message: error.message }; }
try { await FleetNode.start({ redis: "redis://127.0.0.1:1", tools: builtinTools() }); } catch (error) { out.fleet = { code: error.code, message: error.message }; }
try { await import("toolpool/mcp"); } catch (error) { out.mcp = { code: error.code, message: error.message }; }
await runtime.close();
console.log(JSON.stringify(out));
`,
      );
      const { stdout } = await run(process.execPath, ["main.js"], { cwd: project, timeout: 60_000 });
      const out = JSON.parse(stdout) as Record<string, { code?: string; message: string } | string | boolean>;
      expect(out.isError).toBe(false);
      expect(out.text).toMatch(/[0-9a-f]{16}/);
      expect(out.server).toEqual({
        code: "TP_ERR_MISSING_PACKAGE",
        message: `toolpool serve (createServer) needs the optional packages prom-client, fastify, @fastify/under-pressure, which are not installed. Install what it needs with: ${installLine("server")}`,
      });
      expect((out.fleet as { code: string }).code).toBe("TP_ERR_FLEET_UNAVAILABLE");
      expect((out.fleet as { message: string }).message).toContain(`install the fleet's with: ${installLine("fleet")}`);
      // The `toolpool/mcp` entry imports the SDK itself: Node's own error names it.
      expect((out.mcp as { message: string }).message).toContain("@modelcontextprotocol/sdk");
    }, 90_000);

    it("CLI: run works; mcp says what to install, on one line, exit 1", async () => {
      const cli = join(project, "node_modules", "toolpool", "dist", "cli", "main.js");
      writeFileSync(
        join(project, "batch.json"),
        JSON.stringify({ role: "assistant", content: [{ type: "toolCall", id: "1", name: "hash", arguments: { text: "light" } }] }),
      );
      const { code, stdout } = await runCli(["run", "--threads", "1", "batch.json"], { cwd: project, cli });
      expect(code).toBe(0);
      expect(stdout).toMatch(/sha256 [0-9a-f]{64}/);
      const failed = await runCli(["mcp"], { cwd: project, cli });
      expect(failed.code).toBe(1);
      expect(failed.stderr.trim()).toBe(
        `toolpool: toolpool mcp (toolpool/mcp) needs the optional packages @modelcontextprotocol/sdk, zod, which are not installed. Install what it needs with: ${installLine("mcp")}`,
      );
    }, 90_000);
  });
});
