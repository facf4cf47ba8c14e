/**
 * Per-session admission for `maxRunningPerSession`: per session, how many of
 * its calls the pool has handed to Piscina (waiting in its queue or running),
 * and the calls held back until one of those settles. A session never has
 * more than the cap in Piscina, so it can never run more than that at once,
 * and Piscina's queue holds only calls that may start.
 *
 * @module
 */

import { CapClaim, CapGate } from "../cap-gate.js";

/** What admission needs of a call. */
interface AdmittedCall {
  readonly session: unknown;
  readonly enqueuedAt: number;
}

interface ParkedCall<C> {
  readonly call: C;
  readonly claim: CapClaim;
}

interface SessionEntry<C> {
  /** The claims holding its places; places are not the calls', so any one leaves on a release. */
  readonly holding: CapClaim[];
  readonly parked: ParkedCall<C>[];
}

/**
 * The cap is the runtime's one cap mechanism ({@link CapGate}, which also
 * caps tools, batches and sessions in the coordinator) with the session as
 * its key; this class keeps the pool's view of it: which calls wait, in
 * their order, and the place a spread part takes without asking. The pool
 * keeps it beside the coordinator's caps because it counts something else:
 * threads of one pool, a spread call's parts included (see `room`), with
 * its held-back calls taking part in the turns across sessions.
 */
export class SessionAdmission<C extends AdmittedCall> {
  readonly #cap: number;
  readonly #gate = new CapGate();
  readonly #sessions = new Map<unknown, SessionEntry<C>>();
  /** The call that the last `leave` admitted, if any. */
  #admitted: C | undefined;

  constructor(cap: number) {
    this.#cap = cap;
  }

  /** Whether `call` may go to Piscina now (its session is under the cap); else it is parked. */
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

  /** Counts a call that goes to Piscina without asking (a spread part, placed only where the cap left room). */
  count(session: unknown): void {
    const claim = new CapClaim([session], [this.#cap]);
    // Never parked: the pool placed it where `room` said there was room.
    if (this.#gate.tryEnter(claim, noAdmit)) this.#entry(session).holding.push(claim);
    else this.#gate.withdraw(claim);
  }

  /** Places `session` may still fill under the cap. */
  room(session: unknown): number {
    return Math.max(0, this.#cap - this.#gate.held(session));
  }

  /**
   * A settled call frees its session's place: returns the session's next
   * parked call, which takes the place, or undefined when none waits.
   */
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

  /** Takes a parked call out of its session's line; false when it was not parked. */
  unpark(call: C): boolean {
    const parked = this.#sessions.get(call.session)?.parked;
    const index = parked?.findIndex((entry) => entry.call === call) ?? -1;
    if (index === -1) return false;
    this.#gate.withdraw(parked![index]!.claim);
    parked!.splice(index, 1);
    return true;
  }

  /** Each session with parked calls, with when its oldest parked call was enqueued. */
  *parkedSessions(): Generator<[session: unknown, oldestEnqueuedAt: number]> {
    for (const [session, { parked }] of this.#sessions) if (parked.length > 0) yield [session, parked[0]!.call.enqueuedAt];
  }

  /** A parked call the gate admitted (its session's first: the gate keeps their order). */
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
