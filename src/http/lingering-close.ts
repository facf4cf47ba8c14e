import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";

export const LINGER_MAX_BYTES = 64 * 1024 * 1024;

const LINGER_TIMEOUT_MS = 10_000;

/**
 * Ends the sending side, discards the rest of `request`, then closes. Closing
 * at once, as Node does, resets a client still writing its body (Python's
 * `http.client`), which never sees the 413. Bounded like nginx's `lingering_close`.
 */
export function lingerThenClose(socket: Socket, request: IncomingMessage): void {
  const cut = (): void => {
    clearTimeout(timer);
    socket.destroy();
  };
  // Destroyed only once the answer left Node's buffers: a destroy discards what is queued.
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
  request.removeAllListeners("data");
  request.removeAllListeners("readable");
  request.once("end", close);
  request.resume();
  // Node's parser drops a dumped body without a JS event, so bytes are counted on
  // the socket. Added after the resume has restarted reads: a socket moved to JS
  // parsing while stopped would never read again.
  setImmediate(() => {
    if (socket.destroyed) return;
    const limit = socket.bytesRead + LINGER_MAX_BYTES;
    socket.on("data", () => {
      if (socket.bytesRead > limit) cut();
    });
  });
}
