import { readFileSync } from "node:fs";

/** From toolpool's package.json, two levels up from `dist/cli/`. */
export function readPackageVersion(): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: unknown };
    return typeof manifest.version === "string" ? manifest.version : "unknown";
  } catch {
    return "unknown";
  }
}
