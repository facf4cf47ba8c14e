/**
 * The server's sockets and whether each has a request in flight, so that a
 * shutdown can close the idle ones.
 *
 * @module
 */
import type { Server } from "node:http";
import type { Socket } from "node:net";

/**
 * Node's `server.close()` (with Fastify's `forceCloseConnections: "idle"`)
 * closes idle keep-alive sockets, but not a socket that has not sent a
 * request yet — a client's preconnect, or the spare connection undici opens
 * after an aborted fetch — which then holds the shutdown open until
 * `headersTimeout` (a minute). This tracker closes every socket without a
 * request in flight once the server shuts down, and each other one as soon
 * as its last response is done.
 */
export class SocketTracker {
  /** Each socket with its number of requests in flight. */
  readonly #sockets = new Map<Socket, number>();
  #isClosing = false;

  constructor(server: Server) {
    server.on("connection", (socket: Socket) => {
      if (this.#isClosing) {
        socket.destroy();
        return;
      }
      this.#sockets.set(socket, 0);
      socket.once("close", () => this.#sockets.delete(socket));
    });
    server.on("request", (request, response) => {
      const socket = request.socket;
      this.#sockets.set(socket, (this.#sockets.get(socket) ?? 0) + 1);
      response.once("close", () => {
        const count = this.#sockets.get(socket);
        if (count === undefined) return; // the socket itself is gone
        const inFlight = count - 1;
        this.#sockets.set(socket, inFlight);
        if (this.#isClosing && inFlight === 0) socket.destroy();
      });
    });
  }

  /** Destroys every socket, busy or not: the last step of a shutdown whose grace has run out. */
  destroyAll(): void {
    this.#isClosing = true;
    for (const socket of this.#sockets.keys()) socket.destroy();
  }

  /** Closes the idle sockets now, the busy ones once idle, and every new one at once. */
  closeIdle(): void {
    this.#isClosing = true;
    for (const [socket, inFlight] of this.#sockets) if (inFlight === 0) socket.destroy();
  }
}
