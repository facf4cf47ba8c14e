import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The documentation pages whose relative links must resolve. */
const pages = [
  "README.md",
  "CONTRIBUTING.md",
  "CHANGELOG.md",
  ...readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

/** What the checker needs of the file system, so that its own tests can give it a made-up one. */
interface DocsTree {
  exists(path: string): boolean;
  read(path: string): string;
}

/** The text outside fenced code blocks, line by line (code blocks hold shell comments, not headings or links). */
const proseLines = (markdown: string): string[] => {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split("\n")) {
    const opening = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && opening !== undefined) fence = opening;
    else if (fence !== undefined && line.trim().startsWith(fence)) fence = undefined;
    else if (fence === undefined) lines.push(line);
  }
  return lines;
};

/** GitHub's anchor for a heading: its text without markup, lower case, punctuation dropped, spaces as hyphens. */
const slugOf = (heading: string): string =>
  heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/[`*]/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");

/** Every anchor a page offers, a repeated heading numbered as GitHub numbers it (`-1`, `-2`). */
const anchorsOf = (markdown: string): Set<string> => {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = slugOf(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
};

/** The targets of a page's links and images, outside code. */
const linksOf = (markdown: string): string[] => {
  const targets: string[] = [];
  for (const line of proseLines(markdown)) {
    const prose = line.replace(/(`+)[^`]*?\1/g, "");
    for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) targets.push(match[1] as string);
    const definition = /^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(prose)?.[1];
    if (definition !== undefined) targets.push(definition);
  }
  return targets;
};

/** The relative links of `page` (a path from the root) that lead nowhere: a missing file, or a missing heading. */
const brokenLinks = (page: string, tree: DocsTree): string[] => {
  const broken: string[] = [];
  for (const target of linksOf(tree.read(page))) {
    if (/^[a-z][a-z\d+.-]*:/i.test(target) || target.startsWith("//")) continue;
    const hash = target.indexOf("#");
    const path = hash === -1 ? target : target.slice(0, hash);
    const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const file = path === "" ? page : join(dirname(page), decodeURIComponent(path));
    if (!tree.exists(file)) broken.push(`${target}: no file ${file}`);
    else if (anchor !== undefined && anchor !== "") {
      if (!file.endsWith(".md")) broken.push(`${target}: an anchor into a file that is not markdown`);
      else if (!anchorsOf(tree.read(file)).has(anchor)) broken.push(`${target}: no heading #${anchor} in ${file}`);
    }
  }
  return broken;
};

const repository: DocsTree = {
  exists: (path) => existsSync(join(root, path)),
  read: (path) => readFileSync(join(root, path), "utf8"),
};

describe("docs links", () => {
  it.each(pages)("every relative link and anchor of %s resolves", (page) => {
    expect(brokenLinks(page, repository)).toEqual([]);
  });

  it("maps every page of docs/ from the README", () => {
    const linked = new Set(linksOf(repository.read("README.md")).map((target) => relative(".", join(".", target.split("#")[0] as string))));
    const unlinked = pages.filter((page) => page.startsWith("docs/") && !linked.has(page));
    expect(unlinked).toEqual([]);
  });

  it("reports a missing file, a missing heading and a heading inside code, and passes the rest", () => {
    const files: Record<string, string> = {
      "README.md": [
        "# Title",
        "",
        "[ok](docs/a.md#two-pis-0731-and-160) [self](#title) [web](https://example.com/x#y) ![img](docs/a.png)",
        "[gone](docs/missing.md) [no heading](docs/a.md#nowhere) [in code](docs/a.md#not-a-heading)",
        "`[not a link](docs/missing.md)` [repeat](docs/a.md#usage-1) [ref]",
        "",
        "[ref]: docs/also-missing.md",
      ].join("\n"),
      "docs/a.md": ["## Two pis: 0.73.1 and 1.6.0", "## Usage", "## Usage", "```sh", "# not a heading", "```"].join("\n"),
      "docs/a.png": "",
    };
    const tree: DocsTree = { exists: (path) => path in files, read: (path) => files[path] ?? "" };
    expect(brokenLinks("README.md", tree)).toEqual([
      "docs/missing.md: no file docs/missing.md",
      "docs/a.md#nowhere: no heading #nowhere in docs/a.md",
      "docs/a.md#not-a-heading: no heading #not-a-heading in docs/a.md",
      "docs/also-missing.md: no file docs/also-missing.md",
    ]);
  });

  it("makes GitHub's anchors of headings with code, punctuation and links", () => {
    expect([
      ...anchorsOf(
        [
          "## pi's coding tools: `npm run bench:coding`",
          "### MCP over HTTP: sessions, calls and load",
          "## For pi users: toolpool as a [pi](https://example.com) extension",
          "## Cold start: what loads when",
        ].join("\n"),
      ),
    ]).toEqual([
      "pis-coding-tools-npm-run-benchcoding",
      "mcp-over-http-sessions-calls-and-load",
      "for-pi-users-toolpool-as-a-pi-extension",
      "cold-start-what-loads-when",
    ]);
  });
});
