import { spawn } from "node:child_process";
import { once } from "node:events";
import { copyFileSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { supportsPi16 } from "toolpool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/pi-install.test.ts");

// Everything runs under the system's temporary folder, so that nothing resolves from this repository's
// node_modules: pi as `npm install -g` puts it, toolpool as npm installs its packed tarball.
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const base = join(tmpdir(), `toolpool-pi-install-${process.pid}`);
/** `npm install -g --prefix` of pi-coding-agent 1.6.0: `bin/pi` and `lib/node_modules/…`. */
const prefix = join(base, "global");
const piBin = join(prefix, "bin", "pi");
/** The agent folder of a pi that installed toolpool from npm: toolpool under its `npm/node_modules`. */
const npmAgentDir = join(base, "npm-home", ".pi", "agent");
const toolpoolFolder = join(npmAgentDir, "npm", "node_modules", "toolpool");
const scriptedModel = join(base, "scripted-model.mjs");
const tree = join(base, "tree");

/** The environment of every command: the Node running this test first on PATH (pi's bin is `#!/usr/bin/env node`), no npm script's or pi's variables. */
function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_(package|lifecycle)_|npm_config_(prefix|global|local_prefix)$|PI_|NODE_PATH$)/i.test(key)) continue;
    env[key] = value;
  }
  env.PATH = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`;
  return env;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

async function run(command: string, args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<Run> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? baseEnv(), stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, stdout, stderr };
}

async function npm(args: readonly string[], cwd: string): Promise<void> {
  const result = await run("npm", [...args, "--prefer-offline", "--no-audit", "--no-fund", "--update-notifier=false"], { cwd });
  expect(result.code, `npm ${args.join(" ")}\n${result.stderr}`).toBe(0);
}

/** A home of its own for one pi run: pi's agent folder under it, with `settings`. */
function homeWith(name: string, settings?: Record<string, unknown>): { home: string; agentDir: string } {
  const home = join(base, name);
  const agentDir = join(home, ".pi", "agent");
  mkdirSync(agentDir, { recursive: true });
  if (settings !== undefined) writeFileSync(join(agentDir, "settings.json"), JSON.stringify(settings));
  return { home, agentDir };
}

interface PiRun extends Run {
  events: Record<string, unknown>[];
  stats?: { completed: number; threads: number; calls: Record<string, number> };
}

/** The globally installed `pi`, offline, with the scripted model, in `home`; `args` go before the model's options. */
async function runPi(
  home: { home: string; agentDir: string },
  args: readonly string[],
  options: {
    calls?: readonly { name: string; arguments: Record<string, unknown> }[];
    messages?: readonly string[];
    /** Whether toolpool is loaded, and writes its counts (`--toolpool-stats`). */
    withStats?: boolean;
  } = {},
): Promise<PiRun> {
  resetTree();
  const statsFile = join(home.home, `stats-${runs++}.json`);
  const env = {
    ...baseEnv(),
    HOME: home.home,
    PI_CODING_AGENT_DIR: home.agentDir,
    PI_OFFLINE: "1",
    TOOLPOOL_SCRIPT: JSON.stringify(options.calls ?? []),
  };
  const argv = ["--no-session", "-e", scriptedModel, ...args];
  if (options.withStats === true) argv.push("--toolpool-stats", statsFile);
  argv.push("--provider", "scripted", "--model", "script", ...(options.messages ?? []));
  const result = await run(piBin, argv, { cwd: tree, env });
  const events = result.stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { ...result, events, ...(existsSync(statsFile) ? { stats: JSON.parse(readFileSync(statsFile, "utf8")) } : {}) };
}
let runs = 0;

function resetTree(): void {
  rmSync(tree, { recursive: true, force: true });
  mkdirSync(join(tree, "src"), { recursive: true });
  writeFileSync(join(tree, "README.md"), "# demo\n\nA tree for pi.\n");
  writeFileSync(join(tree, "src", "edit-me.ts"), "const a = 1;\nconst b = 2;\n");
}

/** The session's messages, timing fields aside. */
function messagesOf(events: Record<string, unknown>[]): unknown[] {
  return events
    .filter((event) => event.type === "message_end")
    .map((event) => JSON.parse(JSON.stringify(event.message), (key, value) => (key === "timestamp" || key === "durationMs" ? undefined : value)));
}

function toolResultsOf(events: Record<string, unknown>[]): { toolName: string; isError: boolean; content: { text?: string }[] }[] {
  return messagesOf(events).filter((message) => (message as { role: string }).role === "toolResult") as never;
}

/** The lines `--toolpool-status` and `/toolpool` print, by what comes before their `: ` ("read", "pool shared"; "toolpool" for the first). */
function statusLines(stderr: string): Map<string, string> {
  const start = stderr.indexOf("toolpool ");
  expect(start, stderr).toBeGreaterThanOrEqual(0);
  return new Map(
    stderr
      .slice(start)
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => [line.startsWith("toolpool ") ? "toolpool" : line.slice(0, line.indexOf(": ")), line]),
  );
}

const script = [
  { name: "read", arguments: { path: "README.md" } },
  { name: "bash", arguments: { command: "echo from bash; exit 3" } },
  { name: "edit", arguments: { path: "src/edit-me.ts", edits: [{ oldText: "const a = 1;", newText: "const a = 2;" }] } },
  { name: "write", arguments: { path: "out/new.txt", content: "written\n" } },
  { name: "ls", arguments: { path: "src" } },
  { name: "grep", arguments: { pattern: "demo", path: "README.md" } },
];
const scriptTools = ["--tools", "read,bash,edit,write,ls,grep"];

describe.skipIf(!supportsPi16())("toolpool installed as a package, in the real pi CLI 1.6.0 installed with npm -g (pi 1.6)", () => {
  beforeAll(async () => {
    rmSync(base, { recursive: true, force: true });
    mkdirSync(base, { recursive: true });
    const npmRoot = join(npmAgentDir, "npm");
    await Promise.all([
      // pi as its users install it.
      npm(["install", "-g", "--prefix", prefix, "--ignore-scripts", "@earendil-works/pi-coding-agent@1.6.0"], base),
      (async () => {
        // toolpool's tarball as `npm pack` makes it of the built repository, installed as pi's `pi install
        // npm:…` installs a package: into a project of pi's own, with npm's flags that leave out peer dependencies.
        await npm(["pack", "--ignore-scripts", "--pack-destination", base, ROOT], base);
        mkdirSync(npmRoot, { recursive: true });
        writeFileSync(join(npmRoot, "package.json"), JSON.stringify({ name: "pi-extensions", private: true }));
        await npm(["install", join(base, "toolpool-0.1.0.tgz"), "--prefix", npmRoot, "--legacy-peer-deps"], base);
      })(),
    ]);
    // The model's extension imports pi-ai, which pi gives the extensions it loads.
    copyFileSync(join(ROOT, "test", "fixtures", "pi-extension", "scripted-model.mjs"), scriptedModel);
  }, 600_000);

  // pi's install holds thousands of files: their removal may take a while on a busy disk.
  afterAll(() => rm(base, { recursive: true, force: true }), 300_000);

  it("installs toolpool without pi beside it, as pi installs a package", () => {
    expect(existsSync(join(toolpoolFolder, "dist", "pi-extension", "extension.js"))).toBe(true);
    expect(existsSync(join(npmAgentDir, "npm", "node_modules", "@earendil-works", "pi-coding-agent"))).toBe(false);
    expect(existsSync(join(npmAgentDir, "npm", "node_modules", "@earendil-works", "pi-ai"))).toBe(false);
  });

  it("pi -e <folder> --toolpool-status -p: prints the pi that runs it, each of pi's tools on the pool, and the pools' threads", async () => {
    const result = await runPi(homeWith("home-status"), [
      "-e",
      toolpoolFolder,
      "--toolpool-threads",
      "3",
      "--toolpool-io-threads",
      "5",
      "--toolpool-status",
      "-p",
    ]);
    expect(result.code, result.stderr).toBe(0);
    // pi keeps stdout for its answer: the status goes to stderr.
    expect(result.stdout).toBe("");
    const lines = statusLines(result.stderr);
    const piFolder = realpathSync(join(prefix, "lib", "node_modules", "@earendil-works", "pi-coding-agent"));
    expect(lines.get("toolpool")).toBe(`toolpool 0.1.0 in pi 1.6.0 (${piFolder})`);
    for (const name of ["read", "bash", "edit", "write"]) expect(lines.get(name)).toBe(`${name}: on the pool, active`);
    for (const name of ["grep", "find", "ls"]) expect(lines.get(name)).toBe(`${name}: on the pool`);
    expect(lines.get("pool toolpool:coding")).toBe("pool toolpool:coding: read, edit, write; up to 3 threads, 0 started");
    expect(lines.get("pool toolpool:coding-io")).toBe("pool toolpool:coding-io: bash, grep, find, ls; up to 5 threads, 0 started");
  }, 180_000);

  it("pi -e <folder>: runs the model's calls on the pool, with the results of pi's own tools; /toolpool then counts the started threads", async () => {
    const plain = await runPi(homeWith("home-plain"), [...scriptTools, "--mode", "json"], { calls: script, messages: ["go"] });
    const pooled = await runPi(homeWith("home-e"), ["-e", toolpoolFolder, ...scriptTools, "--mode", "json"], {
      calls: script,
      messages: ["go", "/toolpool"],
      withStats: true,
    });
    expect(plain.code, plain.stderr).toBe(0);
    expect(pooled.code, pooled.stderr).toBe(0);
    const expected = messagesOf(plain.events);
    expect(expected.length).toBeGreaterThan(script.length);
    const actual = messagesOf(pooled.events);
    // On a mismatch, the pooled run's last message and pi's stderr tell what ended the session early.
    expect(actual.length, `${JSON.stringify(actual.at(-1))}\n${pooled.stderr}`).toBe(expected.length);
    expect(actual).toEqual(expected);
    expect(toolResultsOf(pooled.events).map((result) => [result.toolName, result.isError])).toEqual([
      ["read", false],
      ["bash", true],
      ["edit", false],
      ["write", false],
      ["ls", false],
      ["grep", false],
    ]);
    // Every call ran on the pool, none in pi's process.
    expect(plain.stats).toBeUndefined();
    expect(pooled.stats).toMatchObject({ completed: script.length, calls: { read: 1, bash: 1, edit: 1, write: 1, ls: 1, grep: 1 } });
    const lines = statusLines(pooled.stderr);
    expect(lines.get("pool toolpool:coding")).toMatch(/^pool toolpool:coding: read, edit, write; up to \d+ threads, [1-9]\d* started$/);
    expect(lines.get("pool toolpool:coding-io")).toMatch(/^pool toolpool:coding-io: bash, grep, find, ls; up to \d+ threads, [1-9]\d* started$/);
  }, 180_000);

  it("pi install <folder>: every later run has pi's tools on the pool", async () => {
    const home = homeWith("home-install");
    const installed = await run(piBin, ["install", toolpoolFolder], {
      cwd: tree,
      env: { ...baseEnv(), HOME: home.home, PI_CODING_AGENT_DIR: home.agentDir, PI_OFFLINE: "1" },
    });
    expect(installed.code, installed.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(home.agentDir, "settings.json"), "utf8")).packages).toHaveLength(1);
    const pooled = await runPi(home, [...scriptTools, "--mode", "json"], { calls: script, messages: ["go"], withStats: true });
    expect(pooled.code, pooled.stderr).toBe(0);
    expect(toolResultsOf(pooled.events).map((result) => result.toolName)).toEqual(script.map((call) => call.name));
    expect(pooled.stats).toMatchObject({ completed: script.length, calls: { read: 1, bash: 1, edit: 1, write: 1, ls: 1, grep: 1 } });
  }, 180_000);

  it("npm:toolpool in pi's settings, installed where pi installs npm packages: pi's tools on the pool", async () => {
    writeFileSync(join(npmAgentDir, "settings.json"), JSON.stringify({ packages: ["npm:toolpool"] }));
    const result = await runPi({ home: join(base, "npm-home"), agentDir: npmAgentDir }, ["--toolpool-status", "-p"]);
    expect(result.code, result.stderr).toBe(0);
    const lines = statusLines(result.stderr);
    for (const name of ["read", "bash", "edit", "write"]) expect(lines.get(name)).toBe(`${name}: on the pool, active`);
    expect(lines.get("pool toolpool:coding")).toMatch(/^pool toolpool:coding: read, edit, write; up to \d+ threads, 0 started$/);
  }, 180_000);

  it("in a program that runs pi's SDK (pi's entry script is not pi's), finds the pi that loads it", async () => {
    // The program loads extensions as pi's CLI does; its own script is the process's entry.
    const program = join(base, "sdk", "main.mjs");
    mkdirSync(dirname(program), { recursive: true });
    const piEntry = pathToFileURL(join(prefix, "lib", "node_modules", "@earendil-works", "pi-coding-agent", "dist", "index.js")).href;
    writeFileSync(
      program,
      [
        `import { DefaultResourceLoader } from ${JSON.stringify(piEntry)};`,
        `const loader = new DefaultResourceLoader({ cwd: process.cwd(), agentDir: process.env.PI_CODING_AGENT_DIR, additionalExtensionPaths: [${JSON.stringify(toolpoolFolder)}] });`,
        "await loader.reload();",
        "const { extensions, errors } = loader.getExtensions();",
        "console.log(JSON.stringify({ errors, tools: extensions.flatMap((extension) => [...extension.tools.keys()]) }));",
      ].join("\n"),
    );
    const home = homeWith("home-sdk");
    const result = await run(process.execPath, [program], {
      cwd: tree,
      env: { ...baseEnv(), HOME: home.home, PI_CODING_AGENT_DIR: home.agentDir, PI_OFFLINE: "1" },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ errors: [], tools: ["read", "bash", "edit", "write", "grep", "find", "ls"] });
  }, 180_000);
});
