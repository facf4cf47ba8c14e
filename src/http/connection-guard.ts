/**
 * The connection edge of toolpool's HTTP fronts (`toolpool serve` and
 * `toolpool mcp --http`): how many connections are open, how many come from
 * one address, which one gives way to a new one, how long a new one may take
 * to send its request headers, and how a refused request's connection is
 * closed.
 *
 * @module
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { isIP, type Socket } from "node:net";

import { lingerThenClose } from "./lingering-close.js";

/** The limits of a {@link ConnectionGuard}. */
interface ConnectionGuardOptions {
  /** Most connections open at once. */
  readonly maxConnections: number;
  /** Most connections open at once from one IPv4 address or one IPv6 /64. */
  readonly maxConnectionsPerAddress: number;
  /** Milliseconds from a connection's opening until its first request's headers must be complete. */
  readonly headersTimeoutMs: number;
}

/** Where a connection stands. */
type Phase =
  /** Open, its first request's headers not complete yet: it has proven nothing. */
  | "fresh"
  /** A request arrived and its response is not done yet. */
  | "busy"
  /** Every request it sent is answered: a kept-alive connection waiting for the next one. */
  | "idle"
  /** Refused and being closed: the rest of its body is read and discarded (see lingering-close.ts). */
  | "closing";

interface Connection {
  readonly socket: Socket;
  readonly address: string;
  phase: Phase;
  /** Requests whose response is not done yet (several when a client pipelines). */
  inFlight: number;
  /** When it entered its phase, as a count of phase changes: the oldest fresh or idle connection gives way first. */
  since: number;
  /** The latest request, to tell whether its body is still arriving when the connection is closed. */
  request: IncomingMessage | undefined;
  /** The headers deadline while fresh. */
  timer: NodeJS.Timeout | undefined;
}

/**
 * Keeps slots free for new clients while others hold connections without
 * using them: connections that never complete a request (a slowloris
 * flood), and kept-alive connections left idle after a request anyone may
 * send (`GET /healthz` needs no token), on any `node:http` server.
 *
 * - A connection has `headersTimeoutMs` to complete its first request's
 *   headers; then it is answered 408 and closed.
 * - One address holds at most `maxConnectionsPerAddress` connections; all of
 *   them hold at most `maxConnections`. A new connection past either limit
 *   takes the place of a connection within that limit that serves no request
 *   now: one being closed already, else the one idle longest (every request
 *   it sent answered), else the oldest that has not completed a request's
 *   headers yet. Only connections with a request in flight are never
 *   closed for room; when every one there has one, the new connection is
 *   closed at once. An idle connection is what a client's keep-alive pool
 *   holds for later: it costs that client one new connection, where a fresh
 *   one may be a client about to send its first request.
 * - A response that closes the connection (`Connection: close`: a 413, a
 *   401 or 403 of toolpool's fronts) while the request's body is still
 *   arriving no longer resets the connection under a client that is still
 *   sending, which then never reads the answer: the rest of the body is read
 *   and discarded first, within bounds (see lingering-close.ts).
 *
 * It replaces Node's `server.maxConnections`, which can only refuse new
 * connections, however the open ones are used.
 */
export class ConnectionGuard {
  readonly #options: ConnectionGuardOptions;
  readonly #connections = new Map<Socket, Connection>();
  /** Each address's connections, oldest first. */
  readonly #byAddress = new Map<string, Set<Connection>>();
  /**
   * Connections that may give way to a new one, each oldest first, in the
   * order they give way: those being closed, those idle, those that proved
   * nothing yet.
   */
  readonly #closing = new Set<Connection>();
  readonly #idle = new Set<Connection>();
  readonly #fresh = new Set<Connection>();
  /** Phase changes so far: each connection's `since`. */
  #changes = 0;

  constructor(server: Server, options: ConnectionGuardOptions) {
    this.#options = options;
    server.on("connection", (socket: Socket) => this.#admit(socket));
    server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      const connection = this.#connections.get(request.socket);
      if (connection === undefined) return;
      connection.request = request;
      connection.inFlight += 1;
      if (connection.phase === "fresh" || connection.phase === "idle") this.#setPhase(connection, "busy");
      // `close` comes once the response is done, or its connection gone.
      response.once("close", () => {
        connection.inFlight -= 1;
        // A response closes after its socket when the client went away first: the connection is forgotten
        // by then, and must not come back into the idle set (it would stay there, socket and all, for good).
        if (this.#connections.get(connection.socket) !== connection) return;
        if (connection.inFlight === 0 && connection.phase === "busy") this.#setPhase(connection, "idle");
      });
    });
  }

  #admit(socket: Socket): void {
    const address = addressKey(socket.remoteAddress);
    if (address === undefined) {
      socket.destroy();
      return;
    }
    const peers = this.#byAddress.get(address);
    if (peers !== undefined && peers.size >= this.#options.maxConnectionsPerAddress && !this.#makeRoom(peers)) {
      socket.destroy();
      return;
    }
    if (this.#connections.size >= this.#options.maxConnections && !this.#makeRoom(undefined)) {
      socket.destroy();
      return;
    }
    const connection: Connection = { socket, address, phase: "fresh", inFlight: 0, since: this.#changes++, request: undefined, timer: undefined };
    this.#connections.set(socket, connection);
    // Looked up again: making room may have closed the address's last connection, and with it its set.
    const current = this.#byAddress.get(address);
    if (current === undefined) this.#byAddress.set(address, new Set([connection]));
    else current.add(connection);
    this.#fresh.add(connection);
    connection.timer = setTimeout(() => this.#onHeadersTimeout(connection), this.#options.headersTimeoutMs);
    connection.timer.unref();
    socket.once("close", () => this.#forget(connection));
    // Node's http server calls `destroySoon` once the response of a request
    // that closes the connection is written; closing at once would reset the
    // connection under a client still sending its body.
    const destroySoon = socket.destroySoon.bind(socket);
    socket.destroySoon = () => {
      const request = connection.request;
      if (request === undefined || request.complete || socket.destroyed) {
        destroySoon();
        return;
      }
      this.#setPhase(connection, "closing");
      lingerThenClose(socket, request);
    };
  }

  /**
   * Closes the connection that gives way first (see the class), among
   * `peers` (one address) or among all; false when every one has a request
   * in flight.
   */
  #makeRoom(peers: ReadonlySet<Connection> | undefined): boolean {
    let victim: Connection | undefined;
    if (peers === undefined) {
      victim = first(this.#closing) ?? first(this.#idle) ?? first(this.#fresh);
    } else {
      for (const peer of peers) {
        if (peer.phase === "closing") {
          victim = peer;
          break;
        }
        if (peer.phase !== "idle" && peer.phase !== "fresh") continue;
        if (victim === undefined || givesWayBefore(peer, victim)) victim = peer;
      }
    }
    if (victim === undefined) return false;
    // Forgotten now, not on its `close` event: the slot is the new connection's at once.
    this.#forget(victim);
    victim.socket.destroy();
    return true;
  }

  #onHeadersTimeout(connection: Connection): void {
    // Timers run before the event loop polls its sockets: after the loop was
    // blocked, headers that have arrived in the meantime are read first, so
    // a client is never cut off for the server's own delay.
    setImmediate(() => {
      if (connection.phase !== "fresh" || connection.socket.destroyed) return;
      this.#setPhase(connection, "closing");
      const body = JSON.stringify({
        statusCode: 408,
        error: "Request Timeout",
        code: "TP_ERR_HEADERS_TIMEOUT",
        message: `The request's headers did not arrive within ${this.#options.headersTimeoutMs} ms of the connection's opening (headersTimeoutMs)`,
      });
      const socket = connection.socket;
      socket.end(
        `HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      // The client has sent only a few header bytes: nothing worth lingering for.
      socket.destroySoon();
    });
  }

  #setPhase(connection: Connection, phase: Phase): void {
    if (connection.phase === "fresh") {
      this.#fresh.delete(connection);
      clearTimeout(connection.timer);
      connection.timer = undefined;
    }
    if (connection.phase === "idle") this.#idle.delete(connection);
    connection.phase = phase;
    connection.since = this.#changes++;
    if (phase === "closing") this.#closing.add(connection);
    if (phase === "idle") this.#idle.add(connection);
  }

  #forget(connection: Connection): void {
    if (this.#connections.get(connection.socket) !== connection) return;
    this.#connections.delete(connection.socket);
    this.#fresh.delete(connection);
    this.#idle.delete(connection);
    this.#closing.delete(connection);
    clearTimeout(connection.timer);
    const peers = this.#byAddress.get(connection.address)!;
    peers.delete(connection);
    if (peers.size === 0) this.#byAddress.delete(connection.address);
  }
}

/** Whether `a` gives way before `b`: idle before fresh, then the one longer in its phase. */
function givesWayBefore(a: Connection, b: Connection): boolean {
  if (a.phase !== b.phase) return a.phase === "idle";
  return a.since < b.since;
}

function first<T>(set: ReadonlySet<T>): T | undefined {
  for (const item of set) return item;
  return undefined;
}

/**
 * What a connection's address counts against: an IPv4 address (also written
 * as an IPv4-mapped IPv6 address), or an IPv6 address's /64, since one IPv6
 * host commonly holds a whole /64. `undefined` when the socket is gone.
 */
export function addressKey(address: string | undefined): string | undefined {
  if (address === undefined) return undefined;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1];
  if (isIP(address) !== 6) return address;
  const bare = address.split("%", 1)[0]!;
  const [head = "", tail] = bare.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === undefined || tail === "" ? [] : tail.split(":");
  // An embedded IPv4 tail (`::1.2.3.4`) fills two groups.
  const width = headGroups.length + tailGroups.reduce((sum, group) => sum + (group.includes(".") ? 2 : 1), 0);
  const groups = tail === undefined ? headGroups : [...headGroups, ...Array<string>(8 - width).fill("0"), ...tailGroups];
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(":")}::/64`;
}
