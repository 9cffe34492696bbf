/**
 * A TCP relay on 127.0.0.1 that behaves like a jittery network (Wi-Fi): every chunk, in each direction, is held back
 * by a random one-way delay in [minMs, maxMs], never overtaking the chunk before it; so is the handshake of every
 * connection this process opens to it (a SYN there and a SYN-ACK back). For tests and `npm run bench`.
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

const oneWay = (delay: RelayDelay) => delay.minMs + Math.random() * (delay.maxMs - delay.minMs);

/** Relay ports whose handshakes are held back, with their delay and the timers doing it. */
const handshakes = new Map<number, { delay: RelayDelay; timers: Set<NodeJS.Timeout> }>();
type Method = (...args: unknown[]) => unknown;
interface Connecting {
  emit: Method;
  destroyed: boolean;
}
const socketPrototype = net.Socket.prototype as unknown as { connect: Method };
let realConnect: Method | undefined;

function portOf(args: unknown[]): number {
  const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
  return Number(typeof first === 'object' && first !== null ? (first as net.TcpNetConnectOpts).port : first);
}

/**
 * A userland relay cannot hold back the kernel's SYN-ACK, so the client's side does it: a socket connecting to the
 * relay emits 'connect' (which also releases what was written meanwhile) one random round trip late.
 */
function holdHandshakes(port: number, delay: RelayDelay, timers: Set<NodeJS.Timeout>): void {
  handshakes.set(port, { delay, timers });
  if (realConnect) return;
  const connect = (realConnect = socketPrototype.connect);
  socketPrototype.connect = function (this: Connecting, ...args: unknown[]) {
    const held = handshakes.get(portOf(args));
    if (held) {
      const emit = this.emit;
      this.emit = function (this: Connecting, event: unknown, ...rest: unknown[]) {
        if (event !== 'connect') return emit.call(this, event, ...rest);
        this.emit = emit;
        const timer = setTimeout(
          () => {
            held.timers.delete(timer);
            if (!this.destroyed) emit.call(this, event, ...rest);
          },
          oneWay(held.delay) + oneWay(held.delay),
        );
        held.timers.add(timer);
        return true;
      };
    }
    return connect.apply(this, args);
  };
}

function releaseHandshakes(port: number): void {
  handshakes.delete(port);
  if (handshakes.size > 0 || !realConnect) return;
  socketPrototype.connect = realConnect;
  realConnect = undefined;
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
    queue.push({ at: Math.max(last, Date.now() + oneWay(delay)), chunk });
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
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      holdHandshakes(port, delay, timers);
      resolve({
        port,
        close: () =>
          new Promise<void>((done) => {
            releaseHandshakes(port);
            for (const timer of timers) clearTimeout(timer);
            for (const socket of sockets) socket.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}
