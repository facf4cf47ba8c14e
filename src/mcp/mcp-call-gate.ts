/**
 * Admission of MCP tool calls: how many are handed to each pool at once,
 * how many of a pool's places one session may hold, how many calls may
 * wait, and how many one session may have.
 *
 * @module
 */
import { invalidOption, refuseUnknownOptions } from "../option-checks.js";
import { mcpCallGateOptionNames } from "./mcp-option-names.js";
import { integerOption } from "./mcp-options.js";
import { McpRefusal } from "./mcp-refusal.js";

/** Options of {@link McpCallGate}. */
export interface McpCallGateOptions {
  /**
   * Calls of the shared pool's worker tools handed to the runtime at once
   * (its places); the others wait here, sessions taking turns. Set it to the
   * shared pool's `maxThreads`, so that the pool's own queue stays empty. A
   * call whose pool `pools` does not name counts here.
   */
  maxRunning: number;
  /**
   * Places of the runtime's other pools, by the name a call gives in
   * {@link McpCallGate.acquire} (see `mcpCallGatePools`, which names each
   * pool of a runtime and gives it its threads). A call waits only for a
   * place of its own pool: a pool whose threads are idle starts its calls
   * at once, however busy the others are. A pool given as
   * `{ places, maxSessionRunning }` also caps one session's share of it
   * (the pool's own `maxRunningPerSession`: a call past it would only wait
   * in the pool's queue, holding a place of the gate another session could
   * use), and without the gate's `maxSessionRunning` that cap is the share
   * (not half the pool). The name `"shared"` gives the shared pool's (its places then
   * replace `maxRunning`).
   * @default {} (every worker call counts against `maxRunning`)
   */
  pools?: Readonly<Record<string, number | McpCallGatePool>>;
  /**
   * Places of one pool one session may hold at once (its share); a call of
   * a session at its share waits, while other sessions' calls start on the
   * places left. At most a pool's places count (a larger value means no
   * share: one session may hold the whole pool), nor more than a pool's own
   * cap (see `pools`).
   * @default a pool's own cap where `pools` gives one, else half of the
   * pool's places, rounded up: on a pool of 2 places
   * or more, one session's long calls (a `sleep` in bash) always leave
   * another session a place
   */
  maxSessionRunning?: number;
  /**
   * Calls waiting for a place, all sessions together; a call past it is
   * refused with a JSON-RPC error (`data.code` `TP_ERR_QUEUE_FULL`).
   * @default 1024
   */
  maxQueue?: number;
  /**
   * Calls one session may have waiting or running, inline tools included;
   * a call past it is refused with a JSON-RPC error (`data.code`
   * `TP_ERR_QUEUE_FULL`).
   * @default 128
   */
  maxSessionCalls?: number;
  /** Seconds a refused client is told to wait (`data.retryAfterSeconds`). @default 1 */
  retryAfterSeconds?: number;
}

/** A pool of {@link McpCallGateOptions.pools} with a per-session cap of its own. */
export interface McpCallGatePool {
  /** Calls of the pool handed on at once: its threads. */
  places: number;
  /**
   * Places of the pool one session may hold at once, whatever
   * `maxSessionRunning` is (the pool's `maxRunningPerSession`).
   * @default undefined (`maxSessionRunning`'s share)
   */
  maxSessionRunning?: number;
}

/** A call's place: it runs now, and must `release` it once it has ended. */
export interface McpCallSlot {
  release(): void;
}

/** The name of the pool `maxRunning` counts (a call that names no pool of `pools`). */
const sharedPool = "shared";

interface Waiter {
  readonly session: string;
  readonly pool: string;
  readonly grant: (slot: McpCallSlot | undefined) => void;
  readonly signal: AbortSignal;
  readonly onAbort: () => void;
}

/**
 * Where MCP calls wait for a place on their pool. They wait here rather
 * than in the pool's queue because a call handed to the pool always starts,
 * even once aborted (pi's rule: the tool sees its signal and decides), while
 * a call that waits here and whose client is gone (its signal aborted)
 * leaves without ever starting. Waiting calls get places with sessions
 * taking turns, one call each, so one session's hundred calls do not hold
 * up another session's one; each pool's places are counted apart, and one
 * session holds at most its share of a pool (`maxSessionRunning`), so that
 * one session's long calls never keep another's out of an idle pool, nor
 * out of the pool it uses.
 *
 * @example
 * ```ts
 * const gate = new McpCallGate({ maxRunning: runtime.options.pool.maxThreads, pools: mcpCallGatePools(runtime) });
 * const server = createMcpServer(runtime, { callGate: gate });
 * ```
 */
export class McpCallGate {
  /** Places by pool. */
  readonly #places = new Map<string, number>();
  /** Per-session caps of pools that give one. */
  readonly #poolShares = new Map<string, number>();
  readonly #maxSessionRunning: number | undefined;
  readonly #maxQueue: number;
  readonly #maxSessionCalls: number;
  readonly #retryAfterSeconds: number;
  /** Places held by pool. */
  readonly #running = new Map<string, number>();
  /** Places held by session, then pool. */
  readonly #held = new Map<string, Map<string, number>>();
  #waiting = 0;
  /** Calls waiting or running, inline ones included, by session. */
  readonly #sessionCalls = new Map<string, number>();
  /** Waiting calls by session, the sessions in the order of their turns. */
  readonly #turns = new Map<string, Waiter[]>();

  constructor(options: McpCallGateOptions) {
    if (typeof options !== "object" || options === null) throw invalidOption("options", "an object", options);
    refuseUnknownOptions(options, mcpCallGateOptionNames);
    this.#places.set(sharedPool, integerOption(options.maxRunning, "maxRunning", 1, undefined));
    const pools: unknown = options.pools ?? {};
    if (typeof pools !== "object" || pools === null || Array.isArray(pools)) throw invalidOption("pools", "an object of places by pool name", pools);
    for (const [name, pool] of Object.entries(pools) as [string, unknown][]) {
      if (typeof pool === "object" && pool !== null && !Array.isArray(pool)) {
        refuseUnknownOptions(pool, ["places", "maxSessionRunning"], `pools.${name}`);
        const { places, maxSessionRunning } = pool as Partial<McpCallGatePool>;
        this.#places.set(name, integerOption(places, `pools.${name}.places`, 1, undefined));
        if (maxSessionRunning !== undefined)
          this.#poolShares.set(name, integerOption(maxSessionRunning, `pools.${name}.maxSessionRunning`, 1, undefined));
      } else this.#places.set(name, integerOption(pool, `pools.${name}`, 1, undefined));
    }
    this.#maxSessionRunning =
      options.maxSessionRunning === undefined ? undefined : integerOption(options.maxSessionRunning, "maxSessionRunning", 1, undefined);
    this.#maxQueue = integerOption(options.maxQueue, "maxQueue", 0, 1024);
    this.#maxSessionCalls = integerOption(options.maxSessionCalls, "maxSessionCalls", 1, 128);
    this.#retryAfterSeconds = integerOption(options.retryAfterSeconds, "retryAfterSeconds", 0, 1);
  }

  /** Calls handed on now that use a thread, every pool together. */
  get running(): number {
    let total = 0;
    for (const count of this.#running.values()) total += count;
    return total;
  }

  /** Calls waiting for a place. */
  get waiting(): number {
    return this.#waiting;
  }

  /**
   * Places of one session on `pool` (a name `pools` does not give is the
   * shared pool's): `maxSessionRunning`, at most the pool's own cap where
   * `pools` gives one (without `maxSessionRunning`, that cap, else half the
   * pool's places, rounded up), and at most its places.
   */
  sessionShare(pool: string = sharedPool): number {
    const name = this.#places.has(pool) ? pool : sharedPool;
    const places = this.#places.get(name)!;
    const cap = this.#poolShares.get(name);
    return Math.min(places, this.#maxSessionRunning ?? cap ?? Math.ceil(places / 2), cap ?? places);
  }

  /**
   * A place for one call of `session`: at once for a call that uses no
   * thread (`pool` false) or while its pool has a place free and the
   * session holds less than its share of it, else once its turn comes.
   * `pool` names the call's pool (`true`, or a name `pools` does not give:
   * the shared pool). Resolves `undefined` if `signal` aborts first: the
   * call never starts. Throws an {@link McpRefusal} when the session has
   * `maxSessionCalls` calls, or `maxQueue` calls already wait.
   */
  async acquire(session: string, signal: AbortSignal, pool: boolean | string): Promise<McpCallSlot | undefined> {
    if (signal.aborted) return undefined;
    const calls = this.#sessionCalls.get(session) ?? 0;
    if (calls >= this.#maxSessionCalls) {
      throw this.#sessionRefusal(calls);
    }
    if (pool === false) {
      this.#sessionCalls.set(session, calls + 1);
      return this.#slot(session, undefined);
    }
    const name = typeof pool === "string" && this.#places.has(pool) ? pool : sharedPool;
    // No waiter fits a place (each release hands out what fits), so only this call may.
    if (this.#fits(session, name)) {
      this.#sessionCalls.set(session, calls + 1);
      return this.#start(session, name);
    }
    if (this.#waiting >= this.#maxQueue) {
      throw this.#queueRefusal();
    }
    this.#sessionCalls.set(session, calls + 1);
    this.#waiting += 1;
    return new Promise<McpCallSlot | undefined>((resolve) => {
      const waiter: Waiter = {
        session,
        pool: name,
        grant: resolve,
        signal,
        onAbort: () => {
          this.#leave(waiter);
          resolve(undefined);
        },
      };
      signal.addEventListener("abort", waiter.onAbort, { once: true });
      const line = this.#turns.get(session);
      if (line === undefined) this.#turns.set(session, [waiter]);
      else line.push(waiter);
    });
  }

  /**
   * The calls of one POST that the gate refuses now, before any of them is
   * handed on: `pools` gives each call's pool in the order the POST carries
   * them (as {@link McpCallGate.acquire} takes it), and each call counts as
   * arrived for those after it, as `acquire` would count it: starting where
   * its pool has a place free and the session holds less than its share of
   * it, else waiting; a call refused here counts for none after it. A call
   * gets the refusal `acquire` would throw (`TP_ERR_QUEUE_FULL`: its session
   * at `maxSessionCalls`, or `maxQueue` calls waiting), else `undefined`, so
   * a call refused here is refused by `acquire` as well unless places free
   * or calls end meanwhile; calls not refused here still go through
   * `acquire`. Refusals of the same reason are one object.
   */
  refusalsOf(session: string, pools: readonly (boolean | string)[]): (McpRefusal | undefined)[] {
    let calls = this.#sessionCalls.get(session) ?? 0;
    let waiting = this.#waiting;
    const running = new Map(this.#running);
    const held = new Map(this.#held.get(session));
    let sessionFull: McpRefusal | undefined;
    let queueFull: McpRefusal | undefined;
    return pools.map((pool) => {
      if (calls >= this.#maxSessionCalls) return (sessionFull ??= this.#sessionRefusal(calls));
      if (pool !== false) {
        const name = typeof pool === "string" && this.#places.has(pool) ? pool : sharedPool;
        const taken = running.get(name) ?? 0;
        // #fits, on the simulated counts.
        if (taken < this.#places.get(name)! && (held.get(name) ?? 0) < this.sessionShare(name)) {
          running.set(name, taken + 1);
          held.set(name, (held.get(name) ?? 0) + 1);
        } else if (waiting >= this.#maxQueue) return (queueFull ??= this.#queueRefusal());
        else waiting += 1;
      }
      calls += 1;
      return undefined;
    });
  }

  /** Whether `pool` has a place free and `session` holds less than its share of it. */
  #fits(session: string, pool: string): boolean {
    if ((this.#running.get(pool) ?? 0) >= this.#places.get(pool)!) return false;
    return (this.#held.get(session)?.get(pool) ?? 0) < this.sessionShare(pool);
  }

  /** Takes a place of `pool` for `session`. */
  #start(session: string, pool: string): McpCallSlot {
    this.#running.set(pool, (this.#running.get(pool) ?? 0) + 1);
    let held = this.#held.get(session);
    if (held === undefined) this.#held.set(session, (held = new Map()));
    held.set(pool, (held.get(pool) ?? 0) + 1);
    return this.#slot(session, pool);
  }

  #slot(session: string, pool: string | undefined): McpCallSlot {
    let isReleased = false;
    return {
      release: () => {
        if (isReleased) return;
        isReleased = true;
        this.#forget(session);
        if (pool === undefined) return;
        this.#running.set(pool, this.#running.get(pool)! - 1);
        const held = this.#held.get(session)!;
        const count = held.get(pool)! - 1;
        if (count > 0) held.set(pool, count);
        else held.delete(pool);
        if (held.size === 0) this.#held.delete(session);
        this.#grantNext();
      },
    };
  }

  /**
   * Hands out the places that fit: in the order of the sessions' turns, each
   * session's first waiting call that fits a place (a call of a full pool,
   * or of a pool where its session holds its share, lets a later call of the
   * same session on another pool go first).
   */
  #grantNext(): void {
    for (const [session, line] of this.#turns) {
      const index = line.findIndex((waiter) => this.#fits(session, waiter.pool));
      if (index < 0) continue;
      const [waiter] = line.splice(index, 1) as [Waiter];
      // Its turn is used: it goes to the back of the line of sessions.
      this.#turns.delete(session);
      if (line.length > 0) this.#turns.set(session, line);
      this.#waiting -= 1;
      waiter.signal.removeEventListener("abort", waiter.onAbort);
      waiter.grant(this.#start(session, waiter.pool));
      // One place was freed, one is taken: nothing else can fit.
      return;
    }
  }

  #leave(waiter: Waiter): void {
    const line = this.#turns.get(waiter.session);
    const index = line?.indexOf(waiter) ?? -1;
    if (index < 0) return;
    line!.splice(index, 1);
    if (line!.length === 0) this.#turns.delete(waiter.session);
    this.#waiting -= 1;
    this.#forget(waiter.session);
  }

  #forget(session: string): void {
    const calls = (this.#sessionCalls.get(session) ?? 1) - 1;
    if (calls === 0) this.#sessionCalls.delete(session);
    else this.#sessionCalls.set(session, calls);
  }

  #sessionRefusal(calls: number): McpRefusal {
    return this.#refusal(
      `This MCP session already has ${calls} calls waiting or running, the most one session may have (maxSessionCalls ${this.#maxSessionCalls}); wait for some to end`,
    );
  }

  #queueRefusal(): McpRefusal {
    return this.#refusal(`The call queue is full (maxQueue ${this.#maxQueue} calls waiting for a thread); retry later`);
  }

  #refusal(message: string): McpRefusal {
    return new McpRefusal("TP_ERR_QUEUE_FULL", message, { retryAfterSeconds: this.#retryAfterSeconds });
  }
}
