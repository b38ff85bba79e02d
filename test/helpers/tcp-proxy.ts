/**
 * A TCP proxy in front of Redis for one client's faults: `pause` holds what Redis sends (a
 * stalled connection: nothing is lost, nothing arrives), `resume` lets it through in order;
 * `cut` closes every connection and refuses new ones until `heal`.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

export interface TcpProxy {
  /** The target's URL with the proxy's port. */
  url: string;
  pause(): void;
  resume(): void;
  /** Bytes from Redis held back since `pause`. */
  held(): number;
  cut(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const pairs = new Set<[Socket, Socket]>();
  let paused = false;
  let refusing = false;
  let held: Array<{ client: Socket; chunk: Buffer }> = [];
  const server: Server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(Number(target.port), target.hostname);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.on("data", (chunk: Buffer) => upstream.write(chunk));
    upstream.on("data", (chunk: Buffer) => {
      if (paused) held.push({ client, chunk });
      else client.write(chunk);
    });
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("proxy has no port");
  const url = new URL(targetUrl);
  url.hostname = "127.0.0.1";
  url.port = String(address.port);
  return {
    url: url.toString(),
    pause: () => {
      paused = true;
    },
    resume: () => {
      paused = false;
      for (const { client, chunk } of held) if (!client.destroyed) client.write(chunk);
      held = [];
    },
    held: () => held.reduce((sum, entry) => sum + entry.chunk.length, 0),
    cut: () => {
      refusing = true;
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      pairs.clear();
    },
    heal: () => {
      refusing = false;
    },
    close: async () => {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
