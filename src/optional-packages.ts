/** Optional peer dependencies keep a library-only install light; a missing one fails on first use with its install line. */
import { createRequire } from "node:module";

import { ToolpoolError } from "./errors.js";

/** A test keeps the versions equal to package.json's `peerDependencies`. */
export const optionalPackages = Object.freeze({
  server: { what: "toolpool serve (createServer)", packages: { fastify: "^5.12.8", "@fastify/under-pressure": "^9.2.0", "prom-client": "^15.1.3" } },
  mcp: { what: "toolpool mcp (toolpool/mcp)", packages: { "@modelcontextprotocol/sdk": "^1.32.2", zod: "^4.6.7" } },
  fleet: { what: "the fleet (fleet options, toolpool node)", packages: { bullmq: "6.7.0", ioredis: "^6.0.0" } },
} as const);

type OptionalFeature = keyof typeof optionalPackages;

export function installLine(feature: OptionalFeature): string {
  const { packages } = optionalPackages[feature];
  return `npm install ${Object.entries(packages)
    .map(([name, range]) => `${name}@${range}`)
    .join(" ")}`;
}

/** `name` itself not found (not a module it imports): Node's `MODULE_NOT_FOUND` or `ERR_MODULE_NOT_FOUND`, naming it in quotes. */
export function isPackageMissing(error: unknown, name: string): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code !== "MODULE_NOT_FOUND" && code !== "ERR_MODULE_NOT_FOUND") return false;
  return typeof message === "string" && (message.includes(`'${name}'`) || message.includes(`"${name}"`));
}

const require = createRequire(import.meta.url);

function missingOf(feature: OptionalFeature): string[] {
  return Object.keys(optionalPackages[feature].packages).filter((name) => {
    try {
      require.resolve(`${name}/package.json`);
      return false;
    } catch (error) {
      // A package whose exports hide package.json is there all the same.
      return (error as { code?: unknown }).code !== "ERR_PACKAGE_PATH_NOT_EXPORTED";
    }
  });
}

/** `TP_ERR_MISSING_PACKAGE`, naming the feature, every missing package of it, and the install line. */
function missingPackageError(feature: OptionalFeature, name: string, cause?: unknown): ToolpoolError {
  const { what } = optionalPackages[feature];
  const missing = [...new Set([name, ...missingOf(feature)])];
  const named =
    missing.length === 1
      ? `the optional package ${name}, which is not installed`
      : `the optional packages ${missing.join(", ")}, which are not installed`;
  return new ToolpoolError(
    "TP_ERR_MISSING_PACKAGE",
    `${what} needs ${named}. Install what it needs with: ${installLine(feature)}`,
    cause === undefined ? undefined : { cause },
  );
}

export function requireOptional<T>(feature: OptionalFeature, name: string): T {
  try {
    return require(name) as T;
  } catch (error) {
    if (isPackageMissing(error, name)) throw missingPackageError(feature, name, error);
    throw error;
  }
}

/** A dynamic import of what needs `feature`'s packages; a missing one rejects with {@link missingPackageError}. */
export async function importOptional<T>(feature: OptionalFeature, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const missing = Object.keys(optionalPackages[feature].packages).find((name) => isPackageMissing(error, name));
    if (missing !== undefined) throw missingPackageError(feature, missing, error);
    throw error;
  }
}
