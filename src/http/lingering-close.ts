/**
 * Closing a connection whose request was answered before its body arrived,
 * so that the client can read the answer.
 *
 * @module
 */
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";

/** Most bytes read and discarded from a refused request's connection before it is cut. */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;

/** Most milliseconds a refused request's connection is read from before it is cut. */
const LINGER_TIMEOUT_MS = 10_000;

/**
 * Ends the sending side of `socket` (the answer is out), then reads and
 * discards what the client still sends of `request`, and closes the socket
 * once the body is complete or the client closed its side.
 *
 * Closing at once, as Node does, makes the kernel answer the client's next
 * bytes with a reset: a client that writes its whole body before it reads
 * (Python's `http.client`), or that is busy when the answer comes (Node's
 * `fetch`), then fails with EPIPE or ECONNRESET and never sees the 413. The
 * same lingering close as nginx's `lingering_close`, bounded by
 * {@link LINGER_MAX_BYTES} and {@link LINGER_TIMEOUT_MS}: past either, the
 * connection is cut.
 */
export function lingerThenClose(socket: Socket, request: IncomingMessage): void {
  const cut = (): void => {
    clearTimeout(timer);
    socket.destroy();
  };
  // Destroyed only once the answer has left Node's buffers: a destroy
  // discards what is still queued there.
  const close = (): void => {
    if (socket.writableFinished) cut();
    else socket.once("finish", cut);
  };
  const timer = setTimeout(cut, LINGER_TIMEOUT_MS);
  timer.unref();
  socket.once("end", close);
  socket.once("close", () => clearTimeout(timer));
  socket.end();
  if (request.complete) {
    close();
    return;
  }
  // Nobody reads the request any more: its body flows away, as Node lets
  // the body of a request it dumps flow.
  request.removeAllListeners("data");
  request.removeAllListeners("readable");
  request.once("end", close);
  request.resume();
  // Node's parser reads the socket natively and drops a dumped body without
  // a JS event, so the bytes are counted on the socket: a `data` listener
  // moves this connection's parsing to JS. Added once the resume above has
  // restarted the socket's reads (a chain of next ticks), since a socket
  // moved while stopped would never read again.
  setImmediate(() => {
    if (socket.destroyed) return;
    const limit = socket.bytesRead + LINGER_MAX_BYTES;
    socket.on("data", () => {
      if (socket.bytesRead > limit) cut();
    });
  });
}
