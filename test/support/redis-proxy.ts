import { createServer, connect, type Server, type Socket } from "node:net";

/**
 * A loopback TCP proxy in front of a test's Redis, for one coordinator's
 * connections: the test can cut them (Redis "briefly down" for that
 * coordinator only, while nodes keep their own connections), or hold back
 * what Redis sends to the reply-stream reader (a reply "in transit").
 */
export interface RedisProxy {
  readonly url: string;
  /**
   * Closes every connection; new ones are accepted but never answered, and
   * what they send is kept (see {@link sawWhileCut}), until {@link restore}.
   */
  cut(): void;
  /** Drops the unanswered connections and serves new ones again. */
  restore(): void;
  /** Whether a connection accepted while cut sent `text` (a client reconnecting, by its name). */
  sawWhileCut(text: string): boolean;
  /** From now on, keeps what Redis sends on connections that block on a reply stream (XREAD … fleet:reply). */
  holdReplies(): void;
  /** Sends what was kept, and stops keeping it. */
  releaseReplies(): void;
  close(): Promise<void>;
}

interface Link {
  readonly client: Socket;
  readonly upstream: Socket | undefined;
  isReplyReader: boolean;
  held: Buffer[];
}

/** Starts a proxy on a free loopback port, forwarding to Redis on `redisPort`. */
export function startRedisProxy(redisPort: number): Promise<RedisProxy> {
  const links = new Set<Link>();
  let isCut = false;
  let isHolding = false;
  let seenWhileCut = "";
  const server: Server = createServer((client) => {
    client.on("error", () => {});
    if (isCut) {
      const link: Link = { client, upstream: undefined, isReplyReader: false, held: [] };
      links.add(link);
      client.on("data", (chunk: Buffer) => (seenWhileCut += chunk.toString("latin1")));
      client.on("close", () => links.delete(link));
      return;
    }
    const upstream = connect(redisPort, "127.0.0.1");
    upstream.on("error", () => client.destroy());
    const link: Link = { client, upstream, isReplyReader: false, held: [] };
    links.add(link);
    client.on("data", (chunk: Buffer) => {
      const text = chunk.toString("latin1");
      if (/xread/i.test(text) && /block/i.test(text) && text.includes(":fleet:reply:")) link.isReplyReader = true;
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (isHolding && link.isReplyReader) link.held.push(chunk);
      else client.write(chunk);
    });
    const drop = () => {
      links.delete(link);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", drop);
    upstream.on("close", drop);
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      resolve({
        url: `redis://127.0.0.1:${port}`,
        cut() {
          isCut = true;
          seenWhileCut = "";
          for (const link of [...links]) {
            link.client.destroy();
            link.upstream?.destroy();
          }
        },
        restore() {
          isCut = false;
          for (const link of [...links]) if (link.upstream === undefined) link.client.destroy();
        },
        sawWhileCut: (text) => seenWhileCut.includes(text),
        holdReplies() {
          isHolding = true;
        },
        releaseReplies() {
          isHolding = false;
          for (const link of links) {
            for (const chunk of link.held) link.client.write(chunk);
            link.held = [];
          }
        },
        close: () =>
          new Promise<void>((done) => {
            for (const link of [...links]) {
              link.client.destroy();
              link.upstream?.destroy();
            }
            server.close(() => done());
          }),
      });
    });
  });
}
