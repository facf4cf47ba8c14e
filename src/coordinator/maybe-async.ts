/**
 * Steps that are synchronous unless they have something to wait for. The
 * batch pipeline runs every batch through one copy of pi's stages; most
 * batches have no hook and nobody listening, and then only the execution of a
 * call waits. Chaining the other stages synchronously keeps such a batch as
 * cheap as a pipeline written for it alone (no promise, closure or microtask
 * per stage), without a second copy of the stages.
 *
 * @module
 */

/** A value, or a promise of it. */
export type MaybePromise<T> = T | PromiseLike<T>;

/** Whether `value` is a thenable (a promise, or what a user callback returned in its place). */
export function isPromiseLike<T>(value: MaybePromise<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === "function";
}

/** `next(value)`: at once for a value, once it settles for a promise. */
export function andThen<T, U>(value: MaybePromise<T>, next: (value: T) => MaybePromise<U>): MaybePromise<U> {
  return isPromiseLike(value) ? Promise.resolve(value).then(next) : next(value);
}

/** `next` of every step's value in order: at once when none waits, else once all have settled. */
export function allThen<T, U>(steps: readonly MaybePromise<T>[], next: (values: T[]) => MaybePromise<U>): MaybePromise<U> {
  let waiting = 0;
  for (const step of steps) if (isPromiseLike(step)) waiting++;
  if (waiting === 0) return next(steps as T[]);
  // The commonest batch, one call: no Promise.all for it.
  if (steps.length === 1) return Promise.resolve(steps[0]!).then((value) => next([value]));
  return Promise.all(steps).then(next);
}

/** `value` once `step` (what a sink or listener returned) has settled: at once when it is no promise. */
export function afterStep<T>(step: unknown, value: T): MaybePromise<T> {
  return isPromiseLike(step) ? Promise.resolve(step).then(() => value) : value;
}

/** Runs `step` (a method of `self`) for each item in order, the next once the previous settled; the values in order. */
export function eachInOrder<S, T, U>(items: readonly T[], self: S, step: (this: S, item: T) => MaybePromise<U>): MaybePromise<U[]> {
  const values: U[] = [];
  const runFrom = (index: number): MaybePromise<U[]> => {
    while (index < items.length) {
      const value = step.call(self, items[index++]!);
      if (isPromiseLike(value)) {
        return Promise.resolve(value).then((settled) => {
          values.push(settled);
          return runFrom(index);
        });
      }
      values.push(value);
    }
    return values;
  };
  return runFrom(0);
}
