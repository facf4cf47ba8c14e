/**
 * `AbortGroups`: one "abort" listener per signal, however many calls share it.
 * @module
 */

/** A lone member in `first`; once a second joins, all of them in `more`, in arrival order. */
interface Group<T> {
  readonly id: number;
  first: T | undefined;
  more: Set<T> | undefined;
  readonly onAbort: () => void;
}

/**
 * A listener per call would pass Node's leak warning on a batch's shared
 * signal, and cost each call an add and a remove; a signal's listener goes
 * once its last call has left. A `WeakMap`, for the reason call-table.ts
 * gives for its array.
 */
export class AbortGroups<T> {
  readonly #groups = new WeakMap<AbortSignal, Group<T>>();
  #size = 0;
  #lastId = 0;
  readonly #onAbort: (member: T) => void;
  readonly #onGroupAbort: ((id: number, members: readonly T[]) => void) | undefined;

  /** `onGroupAbort` is told once per aborted group, after `onAbort` for each of its members. */
  constructor(onAbort: (member: T) => void, onGroupAbort?: (id: number, members: readonly T[]) => void) {
    this.#onAbort = onAbort;
    this.#onGroupAbort = onGroupAbort;
  }

  /** The id of the group `member` joined, the same while the group lives; 0 (told at once) for a signal aborted already. */
  add(signal: AbortSignal, member: T): number {
    if (signal.aborted) {
      this.#onAbort(member);
      return 0;
    }
    const group = this.#groups.get(signal);
    if (group === undefined) return this.#create(signal, member).id;
    if (group.more !== undefined) group.more.add(member);
    else {
      group.more = new Set([group.first!, member]);
      group.first = undefined;
    }
    return group.id;
  }

  #create(signal: AbortSignal, member: T): Group<T> {
    const created: Group<T> = {
      id: ++this.#lastId,
      first: member,
      more: undefined,
      onAbort: () => {
        this.#forget(signal);
        const members = created.more === undefined ? [created.first!] : [...created.more];
        for (const each of members) this.#onAbort(each);
        this.#onGroupAbort?.(created.id, members);
      },
    };
    this.#groups.set(signal, created);
    this.#size += 1;
    signal.addEventListener("abort", created.onAbort, { once: true });
    return created;
  }

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

  get size(): number {
    return this.#size;
  }
}
