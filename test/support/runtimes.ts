// A test fixture that opens runtimes and closes them after each test, in
// place of a list and an afterEach in every file. A close that never ends
// fails the test that opened the runtime, with a message that says so,
// instead of hanging the file (vitest does not bound a fixture's teardown).
import { test } from "vitest";

import { createRuntime, type Runtime, type RuntimeOptions } from "toolpool";

/** How a test's runtimes are closed after it. */
export interface CloseOptions {
  /** Passed to `runtime.close()`: abort what still runs instead of waiting for it. @default false */
  readonly force?: boolean;
  /** How long every close together may take before the test fails; far above what a busy machine needs. @default 15000 */
  readonly limitMs?: number;
}

/** Something with a runtime's `close`: closeAll takes these, so that its own test can hand it one that never ends. */
export interface Closable {
  close(options?: { force?: boolean }): Promise<void>;
}

/**
 * Closes every one of `closables` at once; rejects, naming how many did not
 * end, when they have not all ended within `limitMs`, or with the first
 * close's own error.
 */
export async function closeAll(closables: readonly Closable[], { force = false, limitMs = 15_000 }: CloseOptions = {}): Promise<void> {
  let ended = 0;
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `${closables.length - ended} of ${closables.length} runtime.close(${force ? "{ force: true }" : ""}) did not end within ${limitMs} ms`,
          ),
        ),
      limitMs,
    );
  });
  const closes = closables.map((closable) => closable.close({ force }).then(() => void ended++));
  try {
    await Promise.race([Promise.all(closes), limit]);
  } finally {
    clearTimeout(timer);
  }
}

/** Opens a runtime that the fixture closes after the test now running. */
export type OpenRuntime = (options?: RuntimeOptions) => Runtime;

// The test now running's list of runtimes: helpers at a file's top level
// open runtimes through `open` without the test handing them its context.
// Tests that open runtimes run one at a time (no test.concurrent).
let current: Runtime[] | undefined;

/**
 * Opens a runtime with `createRuntime(options)`, closed after the test now
 * running; only inside a test of `runtimeTest`.
 */
export const open: OpenRuntime = (options) => {
  if (current === undefined) throw new Error("open(): no test of runtimeTest() is running (use the `it` it returns, not vitest's)");
  const runtime = createRuntime(options);
  current.push(runtime);
  return runtime;
};

/**
 * Closes the runtimes the test now running opened, now rather than after
 * its afterEach hooks: for a file whose hooks stop what those runtimes
 * need to close (a fleet's Redis). Bounded as the fixture's own close.
 */
export async function closeRuntimesNow(close: CloseOptions = {}): Promise<void> {
  if (current === undefined) return;
  await closeAll(current.splice(0), close);
}

/**
 * vitest's `test`, extended with an automatic `runtimes` fixture: the
 * runtimes the test opened (with `open`), closed after it as `close` says.
 */
export function runtimeTest(close: CloseOptions = {}) {
  return test.extend<{ runtimes: Runtime[] }>({
    runtimes: [
      // biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's dependencies from its first parameter, which must be a pattern
      async ({}, use) => {
        if (current !== undefined)
          throw new Error("runtimeTest: another test's runtimes are still open (tests that open runtimes cannot run concurrently)");
        const runtimes: Runtime[] = [];
        current = runtimes;
        try {
          await use(runtimes);
        } finally {
          current = undefined;
          await closeAll(runtimes, close);
        }
      },
      { auto: true },
    ],
  });
}
