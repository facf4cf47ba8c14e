/**
 * `AbortGroups`: one "abort" listener per signal, however many calls share it.
 *
 * @module
 */

/** The members of one signal and its listener: a lone member as `first`; once a second joins, all of them in `more`, in the order they came. */
interface Group<T> {
  first: T | undefined;
  more: Set<T> | undefined;
  readonly onAbort: () => void;
}

/**
 * The calls listening to each signal, with a single listener on it: the
 * calls of one batch share the batch's signal, and a listener per call would
 * pass Node's leak warning (more than 10 listeners on one `AbortSignal`)
 * with any batch of 11 worker calls, besides costing each call an
 * `addEventListener` and a `removeEventListener`. A signal's listener goes
 * once its last call has left.
 *
 * The groups are kept in a `WeakMap`, not a `Map`: a pool's map lives in
 * V8's old generation, and a `Map` that adds and deletes an entry per batch
 * leaves tables behind that keep signals, groups and calls alive through
 * scavenges until the next full collection (see call-table.ts). A group of
 * one member (a batch of one worker call) makes no set.
 */
export class AbortGroups<T> {
  readonly #groups = new WeakMap<AbortSignal, Group<T>>();
  #size = 0;
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
    const group = this.#groups.get(signal);
    if (group === undefined) {
      const created: Group<T> = {
        first: member,
        more: undefined,
        onAbort: () => {
          this.#forget(signal);
          // A group lives while it has a member: a lone one in `first`, else all of them in `more`.
          const members = created.more === undefined ? [created.first!] : [...created.more];
          for (const each of members) this.#onAbort(each);
        },
      };
      this.#groups.set(signal, created);
      this.#size += 1;
      signal.addEventListener("abort", created.onAbort, { once: true });
      return;
    }
    if (group.more !== undefined) group.more.add(member);
    else {
      group.more = new Set([group.first!, member]);
      group.first = undefined;
    }
  }

  /** `member` no longer listens to `signal`. */
  delete(signal: AbortSignal, member: T): void {
    const group = this.#groups.get(signal);
    if (group === undefined) return;
    if (group.first === member) group.first = undefined;
    else if (group.more?.delete(member) !== true) return;
    // Whoever left, `first` is empty now: the group lives on only while `more` has members.
    if (group.more !== undefined && group.more.size > 0) return;
    this.#forget(signal);
    signal.removeEventListener("abort", group.onAbort);
  }

  #forget(signal: AbortSignal): void {
    if (this.#groups.delete(signal)) this.#size -= 1;
  }

  /** Signals listened to now (diagnosis and tests). */
  get size(): number {
    return this.#size;
  }
}
