/**
 * Per-session admission for `maxRunningPerSession`: per session, how many of
 * its calls the pool has handed to Piscina (waiting in its queue or running),
 * and the calls held back until one of those settles. A session never has
 * more than the cap in Piscina, so it can never run more than that at once,
 * and Piscina's queue holds only calls that may start.
 *
 * @module
 */

/** What admission needs of a call. */
interface AdmittedCall {
  readonly session: unknown;
  readonly enqueuedAt: number;
}

interface SessionEntry<C> {
  admitted: number;
  readonly parked: C[];
}

export class SessionAdmission<C extends AdmittedCall> {
  readonly #cap: number;
  readonly #sessions = new Map<unknown, SessionEntry<C>>();

  constructor(cap: number) {
    this.#cap = cap;
  }

  /** Whether `call` may go to Piscina now (its session is under the cap); else it is parked. */
  admit(call: C): boolean {
    const entry = this.#entry(call.session);
    if (entry.admitted < this.#cap) {
      entry.admitted += 1;
      return true;
    }
    entry.parked.push(call);
    return false;
  }

  /** Counts a call that goes to Piscina without asking (a spread part, placed only where the cap left room). */
  count(session: unknown): void {
    this.#entry(session).admitted += 1;
  }

  /** Places `session` may still fill under the cap. */
  room(session: unknown): number {
    return Math.max(0, this.#cap - (this.#sessions.get(session)?.admitted ?? 0));
  }

  /**
   * A settled call frees its session's place: returns the session's next
   * parked call, which takes the place, or undefined when none waits.
   */
  release(session: unknown): C | undefined {
    const entry = this.#sessions.get(session);
    if (entry === undefined) return undefined;
    const next = entry.parked.shift();
    if (next === undefined && --entry.admitted === 0) this.#sessions.delete(session);
    return next;
  }

  /** Takes a parked call out of its session's line; false when it was not parked. */
  unpark(call: C): boolean {
    const parked = this.#sessions.get(call.session)?.parked;
    const index = parked?.indexOf(call) ?? -1;
    if (index === -1) return false;
    parked!.splice(index, 1);
    return true;
  }

  /** Each session with parked calls, with when its oldest parked call was enqueued. */
  *parkedSessions(): Generator<[session: unknown, oldestEnqueuedAt: number]> {
    for (const [session, { parked }] of this.#sessions) if (parked.length > 0) yield [session, parked[0]!.enqueuedAt];
  }

  #entry(session: unknown): SessionEntry<C> {
    let entry = this.#sessions.get(session);
    if (entry === undefined) this.#sessions.set(session, (entry = { admitted: 0, parked: [] }));
    return entry;
  }
}
