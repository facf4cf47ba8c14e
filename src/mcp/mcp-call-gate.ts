/** Admission of MCP tool calls: places per pool, one session's share, and how many calls may wait or one session have. */
import { invalidOption, refuseUnknownOptions } from "../option-checks.js";
import { mcpCallGateOptionNames } from "./mcp-option-names.js";
import { integerOption } from "./mcp-options.js";
import { McpRefusal } from "./mcp-refusal.js";

/** Options of {@link McpCallGate}. */
export interface McpCallGateOptions {
  /**
   * Places of the shared pool: calls of its worker tools handed to the runtime at once, the others waiting here.
   * Set it to the shared pool's `maxThreads`, so the pool's own queue stays empty. Calls of pools `pools` lacks count here.
   */
  maxRunning: number;
  /**
   * Places of the runtime's other pools, by the name a call gives to {@link McpCallGate.acquire} (`mcpCallGatePools`
   * names them): a call waits only for its own pool. `{ places, maxSessionRunning }` also caps one session's share
   * (the pool's own `maxRunningPerSession`: past it a call would only hold a gate place while waiting in the pool).
   * `"shared"` replaces `maxRunning`. @default {}
   */
  pools?: Readonly<Record<string, number | McpCallGatePool>>;
  /**
   * Places of one pool one session may hold at once; its further calls wait while other sessions' start. Never more
   * than a pool's places or its own cap.
   * @default the pool's own cap, else half its places rounded up, so one session's long calls always leave another a place
   */
  maxSessionRunning?: number;
  /** Calls waiting for a place, all sessions together; past it a call is refused (`TP_ERR_QUEUE_FULL`). @default 1024 */
  maxQueue?: number;
  /** Calls one session may have waiting or running, inline tools included; past it, `TP_ERR_QUEUE_FULL`. @default 128 */
  maxSessionCalls?: number;
  /** Seconds a refused client is told to wait (`data.retryAfterSeconds`). @default 1 */
  retryAfterSeconds?: number;
}

/** A pool of {@link McpCallGateOptions.pools} with a per-session cap of its own. */
export interface McpCallGatePool {
  places: number;
  /** Places one session may hold, whatever `maxSessionRunning` is (the pool's `maxRunningPerSession`). */
  maxSessionRunning?: number;
}

/** A call's place: it runs now, and must `release` it once it has ended. */
export interface McpCallSlot {
  release(): void;
}

/** The pool `maxRunning` counts (a call naming no pool of `pools`). */
const sharedPool = "shared";

interface Waiter {
  readonly session: string;
  readonly pool: string;
  readonly grant: (slot: McpCallSlot | undefined) => void;
  readonly signal: AbortSignal;
  readonly onAbort: () => void;
}

/**
 * Where MCP calls wait for a place on their pool. A call handed to a pool always starts, even once aborted (pi's rule),
 * while one waiting here whose client is gone leaves unstarted. Sessions take turns, one call each, so one session's
 * hundred calls do not hold up another's one; each pool counts apart, and a session holds at most its share of it.
 * @example
 * const gate = new McpCallGate({ maxRunning: runtime.options.pool.maxThreads, pools: mcpCallGatePools(runtime) });
 * const server = createMcpServer(runtime, { callGate: gate });
 */
export class McpCallGate {
  readonly #places = new Map<string, number>();
  readonly #poolShares = new Map<string, number>();
  readonly #maxSessionRunning: number | undefined;
  readonly #maxQueue: number;
  readonly #maxSessionCalls: number;
  readonly #retryAfterSeconds: number;
  readonly #running = new Map<string, number>();
  readonly #held = new Map<string, Map<string, number>>();
  #waiting = 0;
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

  /** Calls handed on now that use a thread, all pools together. */
  get running(): number {
    let total = 0;
    for (const count of this.#running.values()) total += count;
    return total;
  }

  get waiting(): number {
    return this.#waiting;
  }

  /** One session's places on `pool` (an unknown name is the shared pool): see `maxSessionRunning`. */
  sessionShare(pool: string = sharedPool): number {
    const name = this.#places.has(pool) ? pool : sharedPool;
    const places = this.#places.get(name)!;
    const cap = this.#poolShares.get(name);
    return Math.min(places, this.#maxSessionRunning ?? cap ?? Math.ceil(places / 2), cap ?? places);
  }

  /**
   * At once for a call that uses no thread (`pool` false), or that fits its pool's free places and the session's share;
   * else once its turn comes. Resolves `undefined` if `signal` aborts first (the call never starts). Throws an
   * {@link McpRefusal} past `maxSessionCalls` or `maxQueue`.
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
    // Each release hands out what fits, so no waiter fits a place: only this call may.
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
   * The refusals `acquire` would throw for one POST's calls (their pools in order), counting each call as arrived for
   * those after it; `undefined` for a call not refused, which still goes through `acquire`. Refusals of one reason are one object.
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

  #fits(session: string, pool: string): boolean {
    if ((this.#running.get(pool) ?? 0) >= this.#places.get(pool)!) return false;
    return (this.#held.get(session)?.get(pool) ?? 0) < this.sessionShare(pool);
  }

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

  /** In the sessions' turn order, each session's first waiting call that fits (a later call on another pool may go first). */
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
