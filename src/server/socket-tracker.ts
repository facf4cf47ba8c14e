/** The server's sockets and whether each has a request in flight, so that a shutdown can close the idle ones. */
import type { Server } from "node:http";
import type { Socket } from "node:net";

/**
 * `server.close()` leaves a socket that has sent no request yet (a preconnect, undici's spare connection after an
 * aborted fetch), which holds the shutdown open until `headersTimeout`: this closes each socket once it is idle.
 */
export class SocketTracker {
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
