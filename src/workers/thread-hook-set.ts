/** The registered thread hooks (`contracts/thread-hooks.ts`), called as one. @module */
import { registeredThreadHooks, type ThreadHooks } from "../contracts/thread-hooks.js";

export class ThreadHookSet {
  readonly #hooks: readonly ThreadHooks[] = registeredThreadHooks();

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

  threadExited(threadId: number): void {
    for (const hooks of this.#hooks) hooks.threadExited?.(threadId);
  }
}
