import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { isIP, type Socket } from "node:net";

import { lingerThenClose } from "./lingering-close.js";

interface ConnectionGuardOptions {
  readonly maxConnections: number;
  /** Per IPv4 address or IPv6 /64. */
  readonly maxConnectionsPerAddress: number;
  /** From a connection's opening until its first request's headers are complete. */
  readonly headersTimeoutMs: number;
}

type Phase =
  /** Its first request's headers not complete yet: it has proven nothing. */
  | "fresh"
  | "busy"
  /** Every request answered: a kept-alive connection. */
  | "idle"
  /** Refused; the rest of its body is read and discarded (lingering-close.ts). */
  | "closing";

interface Connection {
  readonly socket: Socket;
  readonly address: string;
  phase: Phase;
  /** Several when a client pipelines. */
  inFlight: number;
  /** Phase-change count when it entered its phase: the oldest fresh or idle gives way first. */
  since: number;
  /** To tell whether its body is still arriving when the connection is closed. */
  request: IncomingMessage | undefined;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Keeps slots free for new clients while others hold connections without
 * using them (a slowloris flood, idle keep-alives after `GET /healthz`),
 * where Node's `server.maxConnections` can only refuse new connections.
 * - A connection not sending complete headers within `headersTimeoutMs` gets
 *   a 408 and is closed.
 * - A new connection past a limit takes the place of one serving no request:
 *   one being closed, else the longest idle (its client's keep-alive pool
 *   reconnects), else the oldest fresh. Connections with a request in flight
 *   are never closed for room; if all have one, the new one is closed.
 * - A response closing the connection while the body still arrives reads and
 *   discards the rest first, so the client sees the answer (lingering-close.ts).
 */
export class ConnectionGuard {
  readonly #options: ConnectionGuardOptions;
  readonly #connections = new Map<Socket, Connection>();
  readonly #byAddress = new Map<string, Set<Connection>>();
  /** Who gives way, in this order, each oldest first. */
  readonly #closing = new Set<Connection>();
  readonly #idle = new Set<Connection>();
  readonly #fresh = new Set<Connection>();
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
      response.once("close", () => {
        connection.inFlight -= 1;
        // A response closing after its socket (the client left first): the connection is forgotten and must not come back as idle.
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
    // Looked up again: making room may have removed the address's set.
    const current = this.#byAddress.get(address);
    if (current === undefined) this.#byAddress.set(address, new Set([connection]));
    else current.add(connection);
    this.#fresh.add(connection);
    connection.timer = setTimeout(() => this.#onHeadersTimeout(connection), this.#options.headersTimeoutMs);
    connection.timer.unref();
    socket.once("close", () => this.#forget(connection));
    // Node calls `destroySoon` once a closing response is written; closing at once
    // would reset the connection under a client still sending its body.
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

  /** False when every candidate has a request in flight. */
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
    // Forgotten now, not on `close`: the slot is the new connection's at once.
    this.#forget(victim);
    victim.socket.destroy();
    return true;
  }

  #onHeadersTimeout(connection: Connection): void {
    // Timers run before the loop polls sockets: after a blocked loop, headers
    // that arrived meanwhile are read first, so no client pays for the server's delay.
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
      // Only a few header bytes sent: nothing worth lingering for.
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

/** Idle before fresh, then the one longer in its phase. */
function givesWayBefore(a: Connection, b: Connection): boolean {
  if (a.phase !== b.phase) return a.phase === "idle";
  return a.since < b.since;
}

function first<T>(set: ReadonlySet<T>): T | undefined {
  for (const item of set) return item;
  return undefined;
}

/** An IPv4 address (mapped ones too), or an IPv6 /64, since one IPv6 host commonly holds a whole /64. */
export function addressKey(address: string | undefined): string | undefined {
  if (address === undefined) return undefined;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1];
  if (isIP(address) !== 6) return address;
  const bare = address.split("%", 1)[0]!;
  const [head = "", tail] = bare.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === undefined || tail === "" ? [] : tail.split(":");
  const width = headGroups.length + tailGroups.reduce((sum, group) => sum + (group.includes(".") ? 2 : 1), 0);
  const groups = tail === undefined ? headGroups : [...headGroups, ...Array<string>(8 - width).fill("0"), ...tailGroups];
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(":")}::/64`;
}
