/**
 * `maxRunningPerSession`: a session never has more than the cap in Piscina,
 * so Piscina's queue holds only calls that may start.
 *
 * @module
 */

import { CapClaim, CapGate } from "../cap-gate.js";

interface AdmittedCall {
  readonly session: unknown;
  readonly enqueuedAt: number;
}

interface ParkedCall<C> {
  readonly call: C;
  readonly claim: CapClaim;
}

interface SessionEntry<C> {
  /** Places are not the calls', so any one leaves on a release. */
  readonly holding: CapClaim[];
  readonly parked: ParkedCall<C>[];
}

/**
 * The runtime's one cap mechanism ({@link CapGate}) keyed by session, kept
 * apart from the coordinator's caps because it counts threads of one pool,
 * spread parts included.
 */
export class SessionAdmission<C extends AdmittedCall> {
  readonly #cap: number;
  readonly #gate = new CapGate();
  readonly #sessions = new Map<unknown, SessionEntry<C>>();
  #admitted: C | undefined;

  constructor(cap: number) {
    this.#cap = cap;
  }

  /** False: `call` is parked. */
  admit(call: C): boolean {
    const entry = this.#entry(call.session);
    const parked: ParkedCall<C> = { call, claim: new CapClaim([call.session], [this.#cap]) };
    if (this.#gate.tryEnter(parked.claim, () => this.#onAdmitted(entry, parked))) {
      entry.holding.push(parked.claim);
      return true;
    }
    entry.parked.push(parked);
    return false;
  }

  /** A spread part, placed only where `room` allowed. */
  count(session: unknown): void {
    const claim = new CapClaim([session], [this.#cap]);
    if (this.#gate.tryEnter(claim, noAdmit)) this.#entry(session).holding.push(claim);
    else this.#gate.withdraw(claim);
  }

  room(session: unknown): number {
    return Math.max(0, this.#cap - this.#gate.held(session));
  }

  /** Returns the session's next parked call, which takes the freed place. */
  release(session: unknown): C | undefined {
    const entry = this.#sessions.get(session);
    const claim = entry?.holding.pop();
    if (claim === undefined) return undefined;
    this.#admitted = undefined;
    this.#gate.leave(claim);
    const next = this.#admitted as C | undefined;
    this.#admitted = undefined;
    if (entry!.holding.length === 0 && entry!.parked.length === 0) this.#sessions.delete(session);
    return next;
  }

  /** False when it was not parked. */
  unpark(call: C): boolean {
    const parked = this.#sessions.get(call.session)?.parked;
    const index = parked?.findIndex((entry) => entry.call === call) ?? -1;
    if (index === -1) return false;
    this.#gate.withdraw(parked![index]!.claim);
    parked!.splice(index, 1);
    return true;
  }

  /** Sessions with parked calls, with their oldest's `enqueuedAt`. */
  *parkedSessions(): Generator<[session: unknown, oldestEnqueuedAt: number]> {
    for (const [session, { parked }] of this.#sessions) if (parked.length > 0) yield [session, parked[0]!.call.enqueuedAt];
  }

  /** The gate admits a session's parked calls in order. */
  #onAdmitted(entry: SessionEntry<C>, parked: ParkedCall<C>): void {
    const index = entry.parked.indexOf(parked);
    if (index !== -1) entry.parked.splice(index, 1);
    entry.holding.push(parked.claim);
    this.#admitted = parked.call;
  }

  #entry(session: unknown): SessionEntry<C> {
    let entry = this.#sessions.get(session);
    if (entry === undefined) this.#sessions.set(session, (entry = { holding: [], parked: [] }));
    return entry;
  }
}

const noAdmit = (): void => {};
