/**
 * The calls a pool has not settled, by sequence number. Not a `Map`: one
 * in the old generation with an add and a delete per call keeps settled
 * calls alive until a full collection (docs/benchmarks.md).
 *
 * @module
 */

export interface NumberedCall {
  readonly seq: number;
}

const minSlots = 64;

/** Halves only above this, so batches coming and going do not resize it. */
const keptSlots = 1_024;

/** Sequence numbers wrap (`maxSeq`); live calls span less than half the range. */
const halfSeqRange = 0x4000_0000;

export class CallTable<Call extends NumberedCall> {
  #slots: (Call | undefined)[] = new Array<Call | undefined>(minSlots).fill(undefined);
  #mask = minSlots - 1;
  readonly #overflow = new Map<number, Call>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** For tests: memory follows the calls in flight. */
  get slots(): number {
    return this.#slots.length;
  }

  get(seq: number): Call | undefined {
    const call = this.#slots[seq & this.#mask];
    if (call !== undefined && call.seq === seq) return call;
    return this.#overflow.size === 0 ? undefined : this.#overflow.get(seq);
  }

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

  /** In no particular order. */
  *values(): IterableIterator<Call> {
    for (const call of this.#slots) if (call !== undefined) yield call;
    yield* this.#overflow.values();
  }

  /** In the order added, numbers that wrapped around last. */
  inOrder(): Call[] {
    const calls = [...this.values()];
    let lowest = Number.POSITIVE_INFINITY;
    let highest = Number.NEGATIVE_INFINITY;
    for (const { seq } of calls) {
      lowest = Math.min(lowest, seq);
      highest = Math.max(highest, seq);
    }
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
    // The old array may sit in the old generation: it must point at nothing.
    this.#slots.fill(undefined);
    this.#overflow.clear();
    this.#slots = new Array<Call | undefined>(length).fill(undefined);
    this.#mask = length - 1;
    for (const call of calls) this.#place(call);
  }
}
