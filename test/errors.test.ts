import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import ts from "typescript";
import { describe, expect, it } from "vitest";

import * as toolpool from "toolpool";

/** The file that defines every code: a scan of it would count a dead code as used. */
const definingFile = "errors.ts";

/**
 * The codes that `text` (a source file) uses in code: in string and template
 * literals, never in comments, which may cite a code without using it.
 */
const codesUsedIn = (fileName: string, text: string): string[] => {
  const codes: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      codes.push(...(node.text.match(/TP_ERR_[A-Z_]+/g) ?? []));
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false));
  return codes;
};

describe("errorCodes", () => {
  const catalogue = readFileSync(new URL("../docs/errors.md", import.meta.url), "utf8");
  const codes = Object.keys(toolpool.errorCodes);
  const srcDir = fileURLToPath(new URL("../src/", import.meta.url));

  it("exports every code the source uses outside the file that defines them, and nothing else", () => {
    const files = readdirSync(srcDir, { recursive: true, encoding: "utf8" })
      .filter((file) => /\.(ts|js|mjs)$/.test(file) && file !== definingFile)
      .sort();
    expect(files.length).toBeGreaterThan(50);
    const used = new Set(files.flatMap((file) => codesUsedIn(file, readFileSync(join(srcDir, file), "utf8"))));
    expect([...used].sort()).toEqual([...codes].sort());
  });

  it("counts a code cited in a comment as unused", () => {
    const text = [
      "/** Ends with `TP_ERR_DEAD`. */",
      '// "TP_ERR_DEAD"',
      'throw new ToolpoolError("TP_ERR_LIVE", message);',
      "const line = `code TP_ERR_TEMPLATE`;",
    ].join("\n");
    expect(codesUsedIn("sample.ts", text)).toEqual(["TP_ERR_LIVE", "TP_ERR_TEMPLATE"]);
  });

  it.each(codes)("documents %s in docs/errors.md", (code) => {
    expect(catalogue).toMatch(new RegExp(`\\| \`${code}\` \\|`));
  });

  it("gives ToolpoolError its code and name", () => {
    const error = new toolpool.ToolpoolError("TP_ERR_CLOSED", "closed");
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("ToolpoolError");
    expect(error.code).toBe("TP_ERR_CLOSED");
  });
});
