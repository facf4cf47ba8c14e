import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, describe, expect, it } from "vitest";

import { probeSandbox, resolveSandbox, sandboxedCommand, sandboxedEnv, ToolpoolError } from "./support/internals.js";

const base = mkdtempSync(join(tmpdir(), "toolpool-sandbox-options-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** A checked sandbox without the machine's probe: the argv builder and the env filter read only its fields. */
const sandbox = (fields: Partial<Parameters<typeof sandboxedCommand>[0]> = {}) => ({
  kind: "bwrap" as const,
  bwrap: "/usr/bin/bwrap",
  network: false,
  hide: [],
  bind: [],
  env: [],
  ...fields,
});

/** The mounts of an argv, in order, as `option path`. */
function mountsOf(args: readonly string[]): string[] {
  const mounts: string[] = [];
  for (let at = 0; at < args.length && args[at] !== "--"; at++) {
    const option = args[at]!;
    if (option === "--tmpfs") mounts.push(`tmpfs ${args[++at]}`);
    else if (option === "--bind" || option === "--ro-bind") {
      const source = args[++at];
      const target = args[++at];
      mounts.push(source === target ? `${option.slice(2)} ${target}` : `${option.slice(2)} ${source} -> ${target}`);
    }
  }
  return mounts;
}

describe("resolveSandbox", () => {
  it("refuses bad options with TP_ERR_INVALID_OPTION naming them, before looking at the machine", () => {
    const attempts: [unknown, RegExp][] = [
      ["firejail", /`sandbox` to be "none", "bwrap" or \{ kind: "bwrap", … \}, got `"firejail"`/],
      [{ kind: "docker" }, /`sandbox` to be "none", "bwrap"/],
      [42, /`sandbox` to be "none", "bwrap"/],
      [{ kind: "bwrap", netwrok: true }, /`sandbox.netwrok` to be one of kind, network, hide, bind, env/],
      [{ kind: "bwrap", network: "yes" }, /`sandbox.network` to be a boolean, got `"yes"`/],
      [{ kind: "bwrap", hide: ["relative/path"] }, /`sandbox.hide` to be absolute paths, got `"relative\/path"`/],
      [{ kind: "bwrap", hide: "/srv" }, /`sandbox.hide` to be an array of absolute paths/],
      [{ kind: "bwrap", hide: ["/a\0b"] }, /`sandbox.hide` to be absolute paths/],
      [{ kind: "bwrap", bind: [{ path: "data" }] }, /`sandbox.bind\[0\].path` to be absolute paths, got `"data"`/],
      [{ kind: "bwrap", bind: ["/srv"] }, /`sandbox.bind\[0\]` to be \{ path, writable\? \}/],
      [{ kind: "bwrap", bind: [{ path: "/srv", writable: 1 }] }, /`sandbox.bind\[0\].writable` to be a boolean/],
      [{ kind: "bwrap", env: ["GOOD", "NOT-A-NAME"] }, /`sandbox.env` to be an array of environment variable names/],
      [{ kind: "bwrap", env: "HOME" }, /`sandbox.env` to be an array of environment variable names/],
    ];
    for (const [option, message] of attempts) {
      let thrown: unknown;
      try {
        resolveSandbox(option);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(option)).toBeInstanceOf(ToolpoolError);
      expect((thrown as ToolpoolError).code).toBe("TP_ERR_INVALID_OPTION");
      expect((thrown as Error).message).toMatch(message);
    }
  });

  it("gives undefined for none", () => {
    expect(resolveSandbox(undefined)).toBeUndefined();
    expect(resolveSandbox("none")).toBeUndefined();
  });

  it("says why a machine without bwrap on PATH cannot run it, and how to fix that", () => {
    const probe = probeSandbox({ PATH: join(base, "no-bwrap-here") });
    expect(probe).toMatchObject({ isAvailable: false });
    const { cause, fix } = probe as { cause: string; fix: string };
    expect(cause).toMatch(process.platform === "linux" ? /bwrap \(bubblewrap\) is not on PATH/ : /Linux only/);
    expect(fix).toMatch(process.platform === "linux" ? /apt-get install bubblewrap/ : /sandbox: "none"/);
  });

  it.skipIf(!probeSandbox().isAvailable)("resolves a good option on a machine with bwrap, paths normalized", () => {
    expect(resolveSandbox({ kind: "bwrap", hide: ["/srv/a/../b"], bind: [{ path: "/opt/x/" }], env: ["GOPATH"] })).toMatchObject({
      kind: "bwrap",
      network: false,
      hide: ["/srv/b"],
      bind: [{ path: "/opt/x", writable: false }],
      env: ["GOPATH"],
    });
  });
});

describe("sandboxedEnv", () => {
  it("keeps the allow-list, pi's session variables, the call marker and the names given, and nothing else of toolpool's", () => {
    const env = {
      PATH: "/usr/bin",
      HOME: "/root",
      PI_SESSION_ID: "s1",
      PI_MODEL: "m",
      TOOLPOOL_BASH_CALL: "1:2:3:4",
      TOOLPOOL_TOKEN: "secret",
      AWS_SECRET_ACCESS_KEY: "secret",
      GOPATH: "/go",
    };
    expect(sandboxedEnv(sandbox({ env: ["GOPATH"] }), env)).toEqual({
      PATH: "/usr/bin",
      HOME: "/root",
      PI_SESSION_ID: "s1",
      PI_MODEL: "m",
      TOOLPOOL_BASH_CALL: "1:2:3:4",
      GOPATH: "/go",
    });
  });
});

describe("sandboxedCommand", () => {
  const root = join(base, "sessions");
  const workspace = join(root, "alice");
  mkdirSync(join(workspace, "secrets"), { recursive: true });
  mkdirSync(join(base, "data", "private"), { recursive: true });
  mkdirSync(join(base, "bin"), { recursive: true });
  writeFileSync(join(base, "bin", "tool"), "#!/bin/sh\n", { mode: 0o755 });
  symlinkSync(workspace, join(base, "alice-link"));

  it("hides what is hidden, binds the workspace read-write, and lets the deeper path win", () => {
    const { file, args } = sandboxedCommand(
      sandbox({ hide: [join(workspace, "secrets"), join(base, "data", "private")], bind: [{ path: join(base, "data"), writable: false }] }),
      { workspace: join(base, "alice-link"), cwd: join(base, "alice-link"), alsoHidden: [root] },
      join(base, "bin", "tool"),
      ["--flag"],
    );
    expect(file).toBe("/usr/bin/bwrap");
    expect(args).toEqual(expect.arrayContaining(["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--cap-drop", "ALL"]));
    expect(args).not.toContain("--share-net");
    expect(args.slice(args.indexOf("--"))).toEqual(["--", join(base, "bin", "tool"), "--flag"]);
    expect(args[args.indexOf("--chdir") + 1]).toBe(join(base, "alice-link"));
    const mounts = mountsOf(args);
    const at = (mount: string) => {
      expect(mounts).toContain(mount);
      return mounts.indexOf(mount);
    };
    // A folder bound inside a hidden one shows, and what is hidden inside it stays hidden.
    expect(at("tmpfs /tmp")).toBeLessThan(at(`ro-bind ${join(base, "data")}`));
    expect(at(`ro-bind ${join(base, "data")}`)).toBeLessThan(at(`tmpfs ${join(base, "data", "private")}`));
    // A program in a hidden folder is bound so that it runs.
    expect(at(`ro-bind ${join(base, "bin", "tool")}`)).toBeGreaterThan(at("tmpfs /tmp"));
    // The workspace at its real path and at the path given, then what is hidden inside it.
    expect(at(`bind ${workspace}`)).toBeLessThan(at(`tmpfs ${join(workspace, "secrets")}`));
    expect(at(`bind ${workspace} -> ${join(base, "alice-link")}`)).toBeGreaterThan(at("tmpfs /tmp"));
    // Inside the hidden /tmp, the sessions' folder needs no mount (it would only name itself).
    expect(mounts).not.toContain(`tmpfs ${root}`);
    // A hidden file is hidden behind the null device.
    if (existsSync("/etc/shadow")) expect(mounts).toContain("ro-bind /dev/null -> /etc/shadow");
  });

  it("hides other sessions' folder where no hidden folder holds it already, before the session's workspace shows", () => {
    const { args } = sandboxedCommand(
      sandbox({ bind: [{ path: base, writable: false }] }),
      { workspace, cwd: workspace, alsoHidden: [root] },
      "/bin/sh",
      [],
    );
    const mounts = mountsOf(args);
    expect(mounts).toEqual(expect.arrayContaining([`ro-bind ${base}`, `tmpfs ${root}`, `bind ${workspace}`]));
    expect(mounts.indexOf(`ro-bind ${base}`)).toBeLessThan(mounts.indexOf(`tmpfs ${root}`));
    expect(mounts.indexOf(`tmpfs ${root}`)).toBeLessThan(mounts.indexOf(`bind ${workspace}`));
  });

  it("shares the network only when allowed, and outlives its starter only for keepBackground", () => {
    const shared = sandboxedCommand(sandbox({ network: true }), { workspace, cwd: workspace, keepsBackground: true }, "/bin/sh", []);
    expect(shared.args).toContain("--share-net");
    expect(shared.args).not.toContain("--die-with-parent");
  });

  it("refuses / for a workspace", () => {
    expect(() => sandboxedCommand(sandbox(), { workspace: "/", cwd: "/" }, "/bin/sh", [])).toThrow(/cannot have \/ for its workspace/);
  });
});
