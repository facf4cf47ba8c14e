/**
 * `AbortGroups`: one "abort" listener per signal, however many calls share it.
 *
 * @module
 */

/**
 * The calls listening to each signal, with a single listener on it: the
 * calls of one batch share the batch's signal, and a listener per call would
 * pass Node's leak warning (more than 10 listeners on one `AbortSignal`)
 * with any batch of 11 worker calls, besides costing each call an
 * `addEventListener` and a `removeEventListener`. A signal's listener goes
 * once its last call has left.
 */
export class AbortGroups<T> {
  readonly #groups = new Map<AbortSignal, { members: Set<T>; onAbort: () => void }>();
  readonly #onAbort: (member: T) => void;

  /** `onAbort` is told of each member of a signal that aborts. */
  constructor(onAbort: (member: T) => void) {
    this.#onAbort = onAbort;
  }

  /** `member` hears of `signal`'s abort (at once, if it has aborted already). */
  add(signal: AbortSignal, member: T): void {
    if (signal.aborted) {
      this.#onAbort(member);
      return;
    }
    let group = this.#groups.get(signal);
    if (group === undefined) {
      const members = new Set<T>();
      const onAbort = (): void => {
        this.#groups.delete(signal);
        for (const each of [...members]) this.#onAbort(each);
      };
      group = { members, onAbort };
      this.#groups.set(signal, group);
      signal.addEventListener("abort", onAbort, { once: true });
    }
    group.members.add(member);
  }

  /** `member` no longer listens to `signal`. */
  delete(signal: AbortSignal, member: T): void {
    const group = this.#groups.get(signal);
    if (group === undefined || !group.members.delete(member) || group.members.size > 0) return;
    this.#groups.delete(signal);
    signal.removeEventListener("abort", group.onAbort);
  }

  /** Signals listened to now (diagnosis and tests). */
  get size(): number {
    return this.#groups.size;
  }
}
