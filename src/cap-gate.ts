/**
 * The one cap mechanism: at most N calls of a key at once (a tool, a batch,
 * a session), a call holding one slot of each of its keys while it runs.
 *
 * @module
 */

/**
 * A key that holds its own count: the gate counts its slots on the object,
 * without a map entry. Keys made per batch are these, so that a batch costs
 * the gate's map nothing; any other value (a session's string) is counted
 * in the map.
 */
export class CapKey {
  /** Slots taken now. */
  held = 0;
}

/**
 * One call's claim on a {@link CapGate}: a slot of each of its keys. A
 * claim made inside another claim's run (a nested call) names it as
 * `parent`: where a key is full and an ancestor holds it, the child runs in
 * the ancestor's slot instead of waiting for one (the ancestor waits on the
 * child anyway, so waiting would deadlock). An ancestor lends each slot to
 * one descendant at a time: the others wait for that slot (or a free one),
 * so a call's children fan out no further than its caps, and run one after
 * another at worst.
 */
export class CapClaim {
  /** What it counts against: any values, compared by identity (`Map` keys). */
  readonly keys: readonly unknown[];
  /** The cap of each key, in the order of `keys`. */
  readonly caps: readonly number[];
  readonly parent: CapClaim | undefined;
  /** Whether the gate admitted it and it has not left yet. */
  isHolding = false;
  /** Bit `i` set: it holds a slot of `keys[i]` of its own (clear: it runs in an ancestor's). */
  taken = 0;
  /** Bit `i` set: its slot of `keys[i]` (its own or one it runs in) is lent to a descendant now. */
  lent = 0;
  /** The ancestor whose slot of `keys[i]` it runs in, where bit `i` of `taken` is clear; undefined while it borrows none. */
  lenders: (CapClaim | undefined)[] | undefined;
  /** What the claim's owner says of it while it waits (for `Runtime.capWaits()`); set only once it must wait. */
  wait: unknown;

  constructor(keys: readonly unknown[], caps: readonly number[], parent?: CapClaim) {
    if (keys.length !== caps.length || keys.length > 30) throw new RangeError("a claim has one cap per key, at most 30 keys");
    this.keys = keys;
    this.caps = caps;
    this.parent = parent;
  }

  /**
   * The nearest ancestor that runs holding `key` now and has not lent that
   * slot to another descendant: the one whose slot of `key` this claim may
   * run in. Undefined when there is none.
   */
  lenderOf(key: unknown): CapClaim | undefined {
    for (let claim = this.parent; claim !== undefined; claim = claim.parent) {
      if (!claim.isHolding) continue;
      const index = claim.keys.indexOf(key);
      if (index !== -1 && (claim.lent & (1 << index)) === 0) return claim;
    }
    return undefined;
  }
}

interface Waiter {
  readonly claim: CapClaim;
  readonly admit: () => void;
}

/**
 * Admits claims under the caps of their keys. A claim over any cap waits
 * its turn, never fails: first come, first served per key, and a waiting
 * claim reserves all of its keys, so no later claim takes a place it needs
 * (it cannot starve). A nested claim (one with a `parent`) is the exception:
 * it passes waiting claims, whose turn its ancestor already had, and runs in
 * an ancestor's slot where its key is full, if no other descendant runs in
 * that slot now; it waits for it otherwise, and the slot passes to the
 * waiting descendants in their order as each gives it back.
 *
 * It allocates nothing for a claim admitted at once in slots of its own; the caller leaves it
 * (`leave`) once the call ran, which admits the claims its slots free.
 *
 * @example
 * ```ts
 * const gate = new CapGate();
 * const claim = new CapClaim([tool, batch], [2, 4]);
 * await gate.enter(claim); // undefined when admitted at once
 * try { await run(); } finally { gate.leave(claim); }
 * ```
 */
export class CapGate {
  /**
   * Slots taken, by key. A key whose count drops to 0 stays until a sweep:
   * deleting and adding a tool's key on every call churns the map (its
   * deleted entries pile up until it rehashes), while keys of finished
   * batches must not pile up either.
   */
  readonly #held = new Map<unknown, { held: number }>();
  /** Keys in `#held` with no slot taken. */
  #idleKeys = 0;
  readonly #waiting: Waiter[] = [];

  /** Slots of `key` taken now (0 for a key nobody holds). */
  held(key: unknown): number {
    return key instanceof CapKey ? key.held : (this.#held.get(key)?.held ?? 0);
  }

  /** Keys the gate keeps a count of: those with slots taken, and at most about as many idle ones. */
  get trackedKeys(): number {
    return this.#held.size;
  }

  /** Claims waiting for a slot now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** The claims waiting for a slot now, in their order. */
  waitingClaims(): CapClaim[] {
    return this.#waiting.map((waiter) => waiter.claim);
  }

  /** Admits `claim`: `undefined` when it got its slots at once, else a promise that resolves when it does. */
  enter(claim: CapClaim): Promise<void> | undefined {
    if (this.#enterNow(claim)) return undefined;
    return new Promise<void>((admit) => this.#waiting.push({ claim, admit }));
  }

  /**
   * Admits `claim` at once (returns true), or queues it and returns false:
   * `admit` is then called, synchronously from a `leave` or `withdraw`,
   * once it holds its slots.
   */
  tryEnter(claim: CapClaim, admit: () => void): boolean {
    if (this.#enterNow(claim)) return true;
    this.#waiting.push({ claim, admit });
    return false;
  }

  /** Gives `claim` its slots now if it fits and no claim waiting before it needs them; never queues it. */
  enterNow(claim: CapClaim): boolean {
    return this.#enterNow(claim);
  }

  /** Gives `claim` its slots now if it fits and no claim waiting before it needs them. */
  #enterNow(claim: CapClaim): boolean {
    if (claim.isHolding) throw new Error("a claim enters once");
    // Reserved: every key a waiting claim needs (first come, first served per key).
    let reserved: Set<unknown> | undefined;
    if (claim.parent === undefined && this.#waiting.length > 0) {
      reserved = new Set();
      for (const waiter of this.#waiting) for (const key of waiter.claim.keys) reserved.add(key);
    }
    return this.#take(claim, reserved);
  }

  /** Gives back the slots of an admitted claim, admitting the waiting claims they make room for. Once per claim. */
  leave(claim: CapClaim): void {
    if (!claim.isHolding) return;
    claim.isHolding = false;
    const { keys } = claim;
    for (let index = 0; index < keys.length; index++) {
      if ((claim.taken & (1 << index)) === 0) continue;
      const key = keys[index];
      if (key instanceof CapKey) key.held--;
      else if (--this.#held.get(key)!.held === 0) this.#idleKeys++;
    }
    claim.taken = 0;
    const { lenders } = claim;
    if (lenders !== undefined) {
      // The slots it ran in go back to their lenders, for their next descendant (admitted below).
      for (let index = 0; index < lenders.length; index++) {
        const lender = lenders[index];
        if (lender !== undefined) lender.lent &= ~(1 << lender.keys.indexOf(keys[index]));
      }
      claim.lenders = undefined;
    }
    if (this.#idleKeys > 64 && this.#idleKeys * 2 > this.#held.size) this.#sweep();
    if (this.#waiting.length > 0) this.#admitWaiting();
  }

  /** Takes a waiting claim out of the line; false when it was not waiting. */
  withdraw(claim: CapClaim): boolean {
    const index = this.#waiting.findIndex((waiter) => waiter.claim === claim);
    if (index === -1) return false;
    this.#waiting.splice(index, 1);
    // Its reservations go with it: claims behind it may fit now.
    if (this.#waiting.length > 0) this.#admitWaiting();
    return true;
  }

  /** Admits, in their order, the waiting claims that fit now; a claim that does not fit reserves its keys. */
  #admitWaiting(): void {
    const waiting = this.#waiting;
    let reserved: Set<unknown> | undefined;
    let admitted: (() => void)[] | undefined;
    for (let index = 0; index < waiting.length; ) {
      const { claim, admit } = waiting[index]!;
      if (this.#take(claim, claim.parent === undefined ? reserved : undefined)) {
        waiting.splice(index, 1);
        (admitted ??= []).push(admit);
        continue;
      }
      reserved ??= new Set();
      for (const key of claim.keys) reserved.add(key);
      index++;
    }
    // Called once the line is consistent: an admit that enters or leaves at once sees a settled gate.
    if (admitted !== undefined) for (const admit of admitted) admit();
  }

  /** Forgets the keys no slot is taken of. */
  #sweep(): void {
    for (const [key, count] of this.#held) if (count.held === 0) this.#held.delete(key);
    this.#idleKeys = 0;
  }

  /** Takes a slot of each key of `claim` (or runs it in an ancestor's, one descendant per slot), all or none. */
  #take(claim: CapClaim, reserved: Set<unknown> | undefined): boolean {
    const { keys, caps } = claim;
    let taken = 0;
    let lenders: (CapClaim | undefined)[] | undefined;
    for (let index = 0; index < keys.length; index++) {
      const key = keys[index];
      if (this.held(key) < caps[index]! && reserved?.has(key) !== true) {
        taken |= 1 << index;
        continue;
      }
      const lender = claim.lenderOf(key);
      if (lender === undefined) return false;
      (lenders ??= new Array<CapClaim | undefined>(keys.length))[index] = lender;
    }
    for (let index = 0; index < keys.length; index++) {
      const key = keys[index];
      if ((taken & (1 << index)) === 0) {
        const lender = lenders![index]!;
        lender.lent |= 1 << lender.keys.indexOf(key);
        continue;
      }
      if (key instanceof CapKey) {
        key.held++;
        continue;
      }
      const count = this.#held.get(key);
      if (count === undefined) this.#held.set(key, { held: 1 });
      else if (count.held++ === 0) this.#idleKeys--;
    }
    claim.taken = taken;
    claim.lenders = lenders;
    claim.isHolding = true;
    return true;
  }
}
