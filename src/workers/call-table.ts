/**
 * `CallTable`: the calls a pool has not settled yet, by sequence number.
 *
 * Not a `Map`: a pool's map lives in V8's old generation, and a `Map` with
 * an entry added and deleted per call is rehashed into new tables while the
 * old ones keep their entries until the next full collection, so settled
 * calls survive scavenges and are promoted (see docs/benchmarks.md). Here a
 * call sits in an array slot (its number modulo the length), cleared when
 * it leaves; a call whose slot is taken goes to a small `Map` beside it.
 *
 * @module
 */

export interface NumberedCall {
  readonly seq: number;
}

const minSlots = 64;

/** It halves only while longer than this, so that batches coming and going do not resize it each time. */
const keptSlots = 1_024;

/** Sequence numbers are positive int32s that wrap (see `maxSeq`): live calls span less than half of that range. */
const halfSeqRange = 0x4000_0000;

export class CallTable<Call extends NumberedCall> {
  #slots: (Call | undefined)[] = new Array<Call | undefined>(minSlots).fill(undefined);
  #mask = minSlots - 1;
  /** Calls whose slot another call holds. */
  readonly #overflow = new Map<number, Call>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** The array's length now (for tests: memory follows the calls in flight). */
  get slots(): number {
    return this.#slots.length;
  }

  get(seq: number): Call | undefined {
    const call = this.#slots[seq & this.#mask];
    if (call !== undefined && call.seq === seq) return call;
    return this.#overflow.size === 0 ? undefined : this.#overflow.get(seq);
  }

  /** Adds `call`, whose number no call in the table has. */
  add(call: Call): void {
    if ((this.#size + 1) * 2 > this.#slots.length) this.#resize(this.#slots.length * 2);
    this.#place(call);
    this.#size += 1;
  }

  delete(seq: number): boolean {
    const index = seq & this.#mask;
    const call = this.#slots[index];
    if (call !== undefined && call.seq === seq) this.#slots[index] = undefined;
    else if (!this.#overflow.delete(seq)) return false;
    this.#size -= 1;
    if (this.#slots.length > keptSlots && this.#size * 8 < this.#slots.length) this.#resize(this.#slots.length / 2);
    return true;
  }

  /** Every call, in no particular order (the cheap way, for sums and counts). */
  *values(): IterableIterator<Call> {
    for (const call of this.#slots) if (call !== undefined) yield call;
    yield* this.#overflow.values();
  }

  /** Every call, in the order of their numbers (the order they were added), numbers that wrapped around last. */
  inOrder(): Call[] {
    const calls = [...this.values()];
    let lowest = Number.POSITIVE_INFINITY;
    let highest = Number.NEGATIVE_INFINITY;
    for (const { seq } of calls) {
      lowest = Math.min(lowest, seq);
      highest = Math.max(highest, seq);
    }
    // Numbers far apart wrapped around: the low ones came after the high ones.
    const hasWrapped = highest - lowest > halfSeqRange;
    const rank = (seq: number) => (hasWrapped && seq < halfSeqRange ? seq + 2 * halfSeqRange : seq);
    return calls.sort((a, b) => rank(a.seq) - rank(b.seq));
  }

  #place(call: Call): void {
    const index = call.seq & this.#mask;
    if (this.#slots[index] === undefined) this.#slots[index] = call;
    else this.#overflow.set(call.seq, call);
  }

  #resize(length: number): void {
    const calls = [...this.values()];
    // The array left behind may sit in the old generation for a while: it must point at nothing.
    this.#slots.fill(undefined);
    this.#overflow.clear();
    this.#slots = new Array<Call | undefined>(length).fill(undefined);
    this.#mask = length - 1;
    for (const call of calls) this.#place(call);
  }
}
