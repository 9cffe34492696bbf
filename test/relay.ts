/**
 * A TCP relay on 127.0.0.1 that behaves like a jittery network (Wi-Fi): every chunk, in each direction, is held back
 * by a random one-way delay in [minMs, maxMs], never overtaking the chunk before it. For tests and `npm run bench`.
 */
import net from 'node:net';

export interface Relay {
  port: number;
  close(): Promise<void>;
}

export interface RelayDelay {
  minMs: number;
  maxMs: number;
}

/** Forwards `from` to `to`, each chunk after its own delay, in order; the end follows the last chunk. */
function delayedPipe(from: net.Socket, to: net.Socket, delay: RelayDelay, timers: Set<NodeJS.Timeout>): void {
  // One timer per direction over a queue: separate timers for chunks due at the same moment may fire out of order.
  const queue: { at: number; chunk: Buffer | null }[] = [];
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    if (timer) timers.delete(timer);
    timer = undefined;
    while (queue.length > 0 && queue[0].at <= Date.now()) {
      const { chunk } = queue.shift()!;
      if (to.destroyed) continue;
      if (chunk === null) to.end();
      else to.write(chunk);
    }
    if (queue.length > 0) {
      timer = setTimeout(flush, queue[0].at - Date.now());
      timers.add(timer);
    }
  };
  const push = (chunk: Buffer | null) => {
    const last = queue.at(-1)?.at ?? 0;
    queue.push({ at: Math.max(last, Date.now() + delay.minMs + Math.random() * (delay.maxMs - delay.minMs)), chunk });
    if (!timer) flush();
  };
  from.on('data', (chunk: Buffer) => push(chunk));
  from.on('end', () => push(null));
}

export function startRelay(targetPort: number, delay: RelayDelay): Promise<Relay> {
  if (!(delay.minMs >= 0 && delay.maxMs >= delay.minMs)) throw new RangeError('relay delay: 0 <= minMs <= maxMs');
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const server = net.createServer((down) => {
    const up = net.connect(targetPort, '127.0.0.1');
    for (const socket of [down, up]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      // One side failing ends the other: a reset device is a reset connection.
      socket.on('error', () => {
        down.destroy();
        up.destroy();
      });
    }
    delayedPipe(down, up, delay, timers);
    delayedPipe(up, down, delay, timers);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as net.AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            for (const timer of timers) clearTimeout(timer);
            for (const socket of sockets) socket.destroy();
            server.close(() => done());
          }),
      }),
    );
  });
}
