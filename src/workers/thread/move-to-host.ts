/**
 * `Piscina.move` without loading Piscina's main module (the whole pool) into
 * every worker. Piscina's private `kMovable` mark is a plain `Symbol()` of
 * its `symbols.js`, which the worker loop has loaded: requiring that file by
 * path (the `exports` map does not list it) gives the same mark.
 *
 * @module
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);

interface PiscinaSymbols {
  kMovable: symbol;
  kTransferable: symbol;
  kValue: symbol;
}

let symbols: PiscinaSymbols | undefined;

function piscinaSymbols(): PiscinaSymbols {
  symbols ??= require(join(dirname(require.resolve("piscina")), "symbols.js")) as PiscinaSymbols;
  return symbols;
}

/** `transferables` are moved, not copied. */
export function moveToHost(value: unknown, transferables: readonly ArrayBuffer[]): unknown {
  const { kMovable, kTransferable, kValue } = piscinaSymbols();
  const movable = { [kTransferable]: transferables, [kValue]: value };
  Object.defineProperty(movable, kMovable, { enumerable: false, configurable: true, writable: true, value: true });
  return movable;
}
