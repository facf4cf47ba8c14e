/** Ways of driving `count` calls of an async function. */

/** Awaits each call before starting the next. */
export async function runSerial(call: (index: number) => Promise<unknown>, count: number): Promise<void> {
  for (let index = 0; index < count; index++) await call(index);
}

/** Keeps `concurrency` calls outstanding until `count` have been started, then waits for all. */
export async function runInFlight(call: (index: number) => Promise<unknown>, count: number, concurrency: number): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) await call(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
}

/** Rotates `items` left by `by`, so that each repetition starts with another contender. */
export function rotate<T>(items: readonly T[], by: number): T[] {
  const shift = items.length === 0 ? 0 : by % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}
