/**
 * The thread hooks a pool was given (see `contracts/thread-hooks.ts`), called
 * as one: the host calls them without knowing who registered them or what
 * they do.
 *
 * @module
 */
import { registeredThreadHooks, type ThreadHooks } from "../contracts/thread-hooks.js";

export class ThreadHookSet {
  readonly #hooks: readonly ThreadHooks[] = registeredThreadHooks();

  /** Every hook's fields for a thread's `workerData`. */
  workerData(): Record<string, unknown> {
    let data: Record<string, unknown> = {};
    for (const hooks of this.#hooks) if (hooks.workerData !== undefined) data = { ...data, ...hooks.workerData() };
    return data;
  }

  /** Thread `threadId` was terminated or failed mid-call; settles once every hook has (never rejects). */
  threadLost(threadId: number): Promise<void> {
    const lost: Promise<void>[] = [];
    for (const hooks of this.#hooks) if (hooks.threadLost !== undefined) lost.push(Promise.resolve().then(() => hooks.threadLost!(threadId)));
    return lost.length === 0 ? Promise.resolve() : Promise.allSettled(lost).then(() => undefined);
  }

  /** Thread `threadId` has exited (or was given up on). */
  threadExited(threadId: number): void {
    for (const hooks of this.#hooks) hooks.threadExited?.(threadId);
  }
}
