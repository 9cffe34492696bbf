/** A real MQTT broker (aedes) on 127.0.0.1 for tests, recording what clients publish and subscribe to. */
import net from 'node:net';

export interface Published {
  topic: string;
  payload: string;
  retain: boolean;
}

export interface TestBroker {
  port: number;
  published: Published[];
  subscriptions: string[];
  /** Publishes as the broker itself, as Home Assistant would through it. */
  publish(topic: string, payload: string): Promise<void>;
  /** Drops every client's connection without a DISCONNECT, as a crash or a lost network would: wills go out. */
  dropClients(): void;
  stop(): Promise<void>;
}

export async function startBroker(): Promise<TestBroker> {
  // aedes is an ES module: a real import() from this CommonJS test.
  const { Aedes } = await import('aedes');
  const aedes = await Aedes.createBroker();
  const server = net.createServer(aedes.handle);
  const published: Published[] = [];
  const subscriptions: string[] = [];
  aedes.on('publish', (packet, client) => {
    // Without a client it is the broker's own traffic ($SYS, or what the test publishes).
    if (client) published.push({ topic: packet.topic, payload: packet.payload.toString(), retain: packet.retain });
  });
  aedes.on('subscribe', (subs) => subscriptions.push(...subs.map((sub) => sub.topic)));
  const clients = new Set<{ conn: { destroy(): void } }>();
  aedes.on('client', (client) => clients.add(client));
  aedes.on('clientDisconnect', (client) => clients.delete(client));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    published,
    subscriptions,
    publish: (topic, payload) =>
      new Promise((resolve, reject) =>
        aedes.publish({ cmd: 'publish', topic, payload: Buffer.from(payload), qos: 1, retain: false, dup: false }, (error) =>
          error ? reject(error) : resolve(),
        ),
      ),
    dropClients: () => {
      for (const client of clients) client.conn.destroy();
    },
    stop: async () => {
      await new Promise<void>((resolve) => aedes.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
