/** The one cap mechanism: at most N calls of a key at once (a tool, a batch, a session), a call holding a slot of each of its keys. */
/** Counts its own slots, so that per-batch keys cost the gate's map nothing; other keys (a session's string) go in the map. */
export class CapKey {
  held = 0;
}

/**
 * One call's claim on a {@link CapGate}. A claim made inside another's run names it as `parent`: where a key is full
 * and an ancestor holds it, the child runs in the ancestor's slot (the ancestor waits on it, so waiting would
 * deadlock). Each slot is lent to one descendant at a time, so children fan out no further than the caps.
 */
export class CapClaim {
  readonly keys: readonly unknown[];
  readonly caps: readonly number[];
  readonly parent: CapClaim | undefined;
  isHolding = false;
  /** Bit `i` set: it holds a slot of `keys[i]` of its own (clear: it runs in an ancestor's). */
  taken = 0;
  /** Bit `i` set: its slot of `keys[i]` (its own or one it runs in) is lent to a descendant now. */
  lent = 0;
  /** The ancestor whose slot of `keys[i]` it runs in, where bit `i` of `taken` is clear; undefined while it borrows none. */
  lenders: (CapClaim | undefined)[] | undefined;
  /** Set by the claim's owner only once it must wait (for `Runtime.capWaits()`). */
  wait: unknown;

  constructor(keys: readonly unknown[], caps: readonly number[], parent?: CapClaim) {
    if (keys.length !== caps.length || keys.length > 30) throw new RangeError("a claim has one cap per key, at most 30 keys");
    this.keys = keys;
    this.caps = caps;
    this.parent = parent;
  }

  /** The nearest ancestor holding `key` now that has not lent that slot: the one this claim may run in. */
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
 * A claim over a cap waits its turn, never fails: first come, first served per key, a waiting claim reserving all its
 * keys so it cannot starve. A nested claim passes waiting claims (its ancestor had their turn) and runs in an ancestor's
 * slot where its key is full. A claim admitted at once in its own slots allocates nothing; `leave` admits what it frees.
 */
export class CapGate {
  /**
   * A key at 0 stays until a sweep: deleting and re-adding a tool's key on every call churns the map, while keys of
   * finished batches must not pile up either.
   */
  readonly #held = new Map<unknown, { held: number }>();
  #idleKeys = 0;
  readonly #waiting: Waiter[] = [];

  held(key: unknown): number {
    return key instanceof CapKey ? key.held : (this.#held.get(key)?.held ?? 0);
  }

  get trackedKeys(): number {
    return this.#held.size;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  waitingClaims(): CapClaim[] {
    return this.#waiting.map((waiter) => waiter.claim);
  }

  /** `undefined` when it got its slots at once, else a promise that resolves when it does. */
  enter(claim: CapClaim): Promise<void> | undefined {
    if (this.#enterNow(claim)) return undefined;
    return new Promise<void>((admit) => this.#waiting.push({ claim, admit }));
  }

  /** True when admitted at once; else queued, and `admit` is called synchronously from a `leave` or `withdraw`. */
  tryEnter(claim: CapClaim, admit: () => void): boolean {
    if (this.#enterNow(claim)) return true;
    this.#waiting.push({ claim, admit });
    return false;
  }

  enterNow(claim: CapClaim): boolean {
    return this.#enterNow(claim);
  }

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

  /** Admits the waiting claims its slots make room for. Once per claim. */
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

  withdraw(claim: CapClaim): boolean {
    const index = this.#waiting.findIndex((waiter) => waiter.claim === claim);
    if (index === -1) return false;
    this.#waiting.splice(index, 1);
    // Its reservations go with it: claims behind it may fit now.
    if (this.#waiting.length > 0) this.#admitWaiting();
    return true;
  }

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

  #sweep(): void {
    for (const [key, count] of this.#held) if (count.held === 0) this.#held.delete(key);
    this.#idleKeys = 0;
  }

  /** All or none; a full key may run in an ancestor's slot, one descendant per slot. */
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
