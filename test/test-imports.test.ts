/**
 * Which copy of toolpool a test file loads: src/ (unit tests, through
 * test/support/internals.ts) or the build (the package "toolpool", and
 * test/support/built.ts for tests whose threads run compiled JS), never both.
 * Loading both puts two copies of a class in one process (two `WorkerPool`s,
 * two `ToolpoolError`s), where a test may check one copy and run the other.
 * The check follows a file's imports through test/ (support modules,
 * fixtures) and reports each mix with the path that brings in each side.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const testDir = join(root, "test");

type Side = "src" | "built";

/** The modules a file loads when it runs: value imports, re-exports and literal `import()`s (`import type` is erased). */
function loadedSpecifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments;
      if (argument !== undefined && ts.isStringLiteral(argument)) found.push(argument.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The file a relative specifier names (a ".js" specifier of a .ts file, as tsc's nodenext wants), or undefined. */
function resolveRelative(from: string, specifier: string): string | undefined {
  const target = resolve(dirname(from), specifier);
  const candidates = [target, target.replace(/\.js$/, ".ts"), target.replace(/\.mjs$/, ".mts")];
  return candidates.find((candidate) => existsSync(candidate));
}

/** The side a specifier loads, or undefined for a module of neither (a package, node:, a test helper). */
function sideOf(from: string, specifier: string): Side | undefined {
  if (specifier === "toolpool" || specifier.startsWith("toolpool/")) return "built";
  if (!specifier.startsWith(".")) return undefined;
  const path = relative(root, resolve(dirname(from), specifier));
  if (path.startsWith("src/")) return "src";
  if (path.startsWith("dist/")) return "built";
  return undefined;
}

/** For each side a test file loads, the chain of files through which it first does. */
function sidesOf(testFile: string): Map<Side, string[]> {
  const sides = new Map<Side, string[]>();
  const seen = new Set<string>();
  const walk = (file: string, chain: string[]): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const specifier of loadedSpecifiers(file)) {
      const side = sideOf(file, specifier);
      if (side !== undefined) {
        if (!sides.has(side)) sides.set(side, [...chain, specifier]);
        continue;
      }
      if (!specifier.startsWith(".")) continue;
      const next = resolveRelative(file, specifier);
      if (next?.startsWith(testDir) && /\.(ts|mts|mjs|js)$/.test(next)) walk(next, [...chain, relative(root, next)]);
    }
  };
  walk(testFile, [relative(root, testFile)]);
  return sides;
}

const testFiles = readdirSync(testDir)
  .filter((name) => name.endsWith(".test.ts"))
  .map((name) => join(testDir, name));

describe("which copy of toolpool a test loads", () => {
  it("finds both sides where a file loads both (the check can fail)", () => {
    const sides = sidesOf(join(testDir, "fixtures", "imports", "both-sides.ts"));
    expect([...sides.keys()].sort()).toEqual(["built", "src"]);
  });

  it("no test file loads both src/ and the build", () => {
    const mixed = testFiles.flatMap((file) => {
      const sides = sidesOf(file);
      const src = sides.get("src");
      const built = sides.get("built");
      return src && built ? [`${relative(root, file)}: src/ through ${src.join(" → ")}; the build through ${built.join(" → ")}`] : [];
    });
    expect(mixed).toEqual([]);
  });
});
