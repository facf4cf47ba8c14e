/**
 * toolpool as a user gets it: the built repository packed (`npm pack`),
 * installed into a fresh `npm init -y` project (CommonJS) with none of the
 * optional peer dependencies, then used as the README shows and as a
 * TypeScript user compiles it. One pack and one install, shared by the file;
 * the packages come from npm's cache where it has them.
 */
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { supportsPi16 } from "toolpool";

import { optionalPackages, validateToolArguments16 } from "./support/built.js";
import { warnSkippedPi16 } from "./support/pi16.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const fixtures = join(root, "test", "fixtures", "package-install");
/** The @types/node of the checkout (in npm's cache), for the TypeScript check: toolpool's types use Node's. */
const typesNodeVersion = (JSON.parse(readFileSync(join(root, "node_modules", "@types", "node", "package.json"), "utf8")) as { version: string })
  .version;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `file` with `args` in `cwd`; resolves with its exit code and output, whatever the code. */
function run(file: string, args: string[], cwd: string): Promise<Ran> {
  // Without the npm_* variables of an enclosing `npm test`, which would steer the npm run here.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith("npm_")));
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd, env, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error !== null && typeof error.code !== "number") reject(error);
      else resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
    });
  });
}

/** Runs `file`, and fails with its output unless it exits 0. */
async function runOk(file: string, args: string[], cwd: string): Promise<Ran> {
  const ran = await run(file, args, cwd);
  if (ran.code !== 0) throw new Error(`${file} ${args.join(" ")} exited ${ran.code}:\n${ran.stdout}\n${ran.stderr}`);
  return ran;
}

/**
 * The README's example files: each fenced `js` block whose first line is a
 * comment naming a file (`// app.mjs`, `// word-count.mjs: …`), by that name.
 */
function readmeExamples(): Map<string, string> {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const examples = new Map<string, string>();
  for (const [, code] of readme.matchAll(/^```js\n([\s\S]*?)^```$/gm)) {
    const name = /^\/\/ ([\w.-]+\.(?:mjs|cjs|js))(?::|\n)/.exec(code!)?.[1];
    if (name !== undefined) examples.set(name, code!);
  }
  return examples;
}

const lines = (text: string) => text.trim().split("\n");

warnSkippedPi16("package-install.test.ts");

describe("package install (npm pack, npm install into an npm init -y project)", () => {
  let work: string;
  let project: string;
  let install: Ran;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "toolpool-install-"));
    const packed = await runOk("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", work], root);
    const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
    project = join(work, "project");
    mkdirSync(project);
    await runOk("npm", ["init", "-y"], project);
    install = await runOk(
      "npm",
      ["install", join(work, filename), `@types/node@${typesNodeVersion}`, "--prefer-offline", "--no-audit", "--no-fund"],
      project,
    );
    for (const [name, code] of readmeExamples()) writeFileSync(join(project, name), code);
  }, 300_000);

  afterAll(() => {
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it("installs without a warning about engines, and without the optional packages or pi-schema", () => {
    const output = `${install.stdout}\n${install.stderr}`;
    expect(output).not.toMatch(/EBADENGINE/);
    expect(lines(output).filter((line) => /^npm warn/i.test(line) && /engine/i.test(line))).toEqual([]);
    const installed = (name: string) => existsSync(join(project, "node_modules", ...name.split("/"), "package.json"));
    expect(installed("toolpool")).toBe(true);
    expect(installed("piscina")).toBe(true);
    for (const { packages } of Object.values(optionalPackages)) {
      for (const name of Object.keys(packages)) expect(installed(name), name).toBe(false);
    }
    expect(installed("@earendil-works/pi-coding-agent")).toBe(false);
    expect(installed("@earendil-works/pi-schema")).toBe(false);
    // pi 1.6's validation ships inside the package instead, with its license.
    expect(existsSync(join(project, "node_modules", "toolpool", "dist", "vendor", "pi-schema.cjs"))).toBe(true);
    expect(readFileSync(join(project, "node_modules", "toolpool", "dist", "vendor", "pi-schema.cjs.LICENSE"), "utf8")).toContain("MIT License");
  });

  it("runs the README's ES module example (app.mjs) as written", async () => {
    expect([...readmeExamples().keys()]).toEqual(expect.arrayContaining(["app.mjs", "app.js", "word-count.mjs"]));
    const { stdout, stderr } = await runOk(process.execPath, ["app.mjs"], project);
    expect(stderr).toBe("");
    expect(lines(stdout)).toEqual([
      "tool_execution_start",
      "tool_execution_start",
      "tool_execution_end",
      "tool_execution_end",
      "message_start",
      "message_end",
      "message_start",
      "message_end",
      "word_count 3",
      "hash sha256 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824  (text)",
    ]);
  }, 60_000);

  it("runs the README's CommonJS example (app.js) as written, in npm init -y's CommonJS project", async () => {
    expect((JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as { type?: string }).type ?? "commonjs").toBe("commonjs");
    const { stdout, stderr } = await runOk(process.execPath, ["app.js"], project);
    expect(stderr).toBe("");
    expect(lines(stdout)).toEqual(["word_count 3"]);
  }, 60_000);

  it.skipIf(!supportsPi16())(
    "validates as pi 1.6 with the bundled pi-schema, where no pi-schema package is installed",
    async () => {
      const parameters = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };
      writeFileSync(
        join(project, "pi16.mjs"),
        `import { createRuntime, workerTool } from "toolpool";
const tool = workerTool({ name: "word_count", description: "", parameters: ${JSON.stringify(parameters)}, module: new URL("./word-count.mjs", import.meta.url) });
const runtime = createRuntime({ pi: "1.6", tools: [tool] });
const { messages } = await runtime.executeToolCalls({
  role: "assistant",
  content: [
    { type: "toolCall", id: "1", name: "word_count", arguments: { text: 5 } },
    { type: "toolCall", id: "2", name: "word_count", arguments: {} },
  ],
});
await runtime.close();
console.log(JSON.stringify(messages.map((message) => ({ isError: message.isError, text: message.content[0].text }))));
`,
      );
      const { stdout, stderr } = await runOk(process.execPath, ["pi16.mjs"], project);
      expect(stderr).toBe("");
      const failure = (() => {
        try {
          return validateToolArguments16("word_count", parameters, {});
        } catch (error) {
          return (error as Error).message;
        }
      })();
      expect(failure).toMatch(/^Validation failed for tool "word_count":/);
      // pi 1.6 coerces 5 to "5" (one word); the second call fails with the checkout's (pi's) text.
      expect(JSON.parse(stdout)).toEqual([
        { isError: false, text: "1" },
        { isError: true, text: failure },
      ]);
    },
    60_000,
  );

  /**
   * One compile (tsc is the slow part) of three files: consumer.mts and
   * consumer.cts (the package entry, from an ES module and from CommonJS)
   * and mcp.mts (`toolpool/mcp`), with `skipLibCheck: false`, so that every
   * type file they reach is checked.
   */
  let compiled: Promise<Ran> | undefined;
  const compile = () => {
    compiled ??= (async () => {
      copyFileSync(join(fixtures, "consumer.mts"), join(project, "consumer.mts"));
      copyFileSync(join(fixtures, "consumer.cts"), join(project, "consumer.cts"));
      writeFileSync(
        join(project, "mcp.mts"),
        'import { createMcpServer } from "toolpool/mcp";\nexport const create: typeof createMcpServer = createMcpServer;\n',
      );
      const compilerOptions = { strict: true, skipLibCheck: false, module: "nodenext", target: "es2022", types: ["node"], noEmit: true };
      writeFileSync(join(project, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["consumer.mts", "consumer.cts", "mcp.mts"] }));
      return run(process.execPath, [tsc, "-p", "tsconfig.json"], project);
    })();
    return compiled;
  };
  /** The compile's errors, one line each (`FILE(LINE,COLUMN): error TSnnnn: …`). */
  const compileErrors = async () => lines((await compile()).stdout).filter((line) => /error TS\d+/.test(line));

  it("type-checks the package entry with skipLibCheck false, from an ES module and from CommonJS", async () => {
    const errors = await compileErrors();
    // Only toolpool/mcp's own files may fail (next test); nothing else, toolpool's types included.
    expect(errors.filter((line) => !line.startsWith("node_modules/toolpool/dist/mcp/"))).toEqual([]);
  }, 120_000);

  it("type-checks toolpool/mcp only with its packages: without them, every error is the MCP SDK's absence", async () => {
    const errors = await compileErrors();
    expect((await compile()).code).not.toBe(0);
    expect(errors.length).toBeGreaterThan(0);
    for (const error of errors) expect(error).toMatch(/error TS2307: Cannot find module '@modelcontextprotocol\/sdk\//);
  }, 120_000);
});
