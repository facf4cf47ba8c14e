/**
 * What `Piscina.move` does for a worker's reply, without importing Piscina's
 * main module into the worker: that module is the whole pool (task queues,
 * histograms, the worker pool), which a worker never uses, and loading it
 * slowed every worker's boot.
 *
 * Piscina's worker loop (`piscina/dist/worker.js`) moves a result's buffers
 * when the result is "movable": it holds the `Symbol.for('Piscina.transferable')`
 * and `Symbol.for('Piscina.valueOf')` keys and Piscina's private `kMovable`
 * mark. The mark is a plain `Symbol()` of `piscina/dist/symbols.js`, which the
 * worker loop has loaded already: requiring that file by its path (Piscina's
 * `exports` map does not list it) gives the same module, hence the same mark.
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

/**
 * `value`, wrapped so that Piscina posts it to the main thread with
 * `transferables` moved rather than copied, as `Piscina.move` would wrap it.
 */
export function moveToHost(value: unknown, transferables: readonly ArrayBuffer[]): unknown {
  const { kMovable, kTransferable, kValue } = piscinaSymbols();
  const movable = { [kTransferable]: transferables, [kValue]: value };
  Object.defineProperty(movable, kMovable, { enumerable: false, configurable: true, writable: true, value: true });
  return movable;
}
