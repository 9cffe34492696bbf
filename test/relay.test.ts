/** The jittery loopback relay used by the benchmark, and the client through it against a device that rejects early requests. */
import net from 'node:net';
import should from 'should';
import { pointByName } from '../src/points/catalogue';
import { DeviceClient } from '../src/device/client';
import { DeviceSimulator } from '../src/simulator';
import { startRelay } from './relay';

describe('loopback relay with random delay', function () {
  this.timeout(30000);

  it('delays the handshake and each chunk within the range and keeps bytes and order', async () => {
    const echo = net.createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    const relay = await startRelay((echo.address() as net.AddressInfo).port, { minMs: 20, maxMs: 40 });
    try {
      const opened = performance.now();
      const socket = net.connect(relay.port, '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      // A SYN there and a SYN-ACK back.
      (performance.now() - opened).should.be.within(40, 200);
      const received: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => received.push(chunk));
      const started = Date.now();
      const sent: string[] = [];
      for (let i = 0; i < 20; i++) {
        sent.push(`chunk-${i};`);
        socket.write(sent[i]);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const expected = sent.join('');
      while (Buffer.concat(received).length < expected.length) await new Promise((resolve) => setTimeout(resolve, 5));
      Buffer.concat(received).toString().should.equal(expected);
      // There and back: at least 2 x 20 ms for the first chunk, at most 2 x 40 ms after the last one was sent.
      (Date.now() - started).should.be.aboveOrEqual(40);
      socket.destroy();
    } finally {
      await relay.close();
      await new Promise((resolve) => echo.close(resolve));
    }
  });

  it('the client keeps every request over the minimum interval at a device that rejects early ones', async () => {
    const simulator = new DeviceSimulator({ port: 0, udpPort: null, password: 'relay-pass', rejectEarly: true });
    await simulator.start();
    const relay = await startRelay(simulator.port, { minMs: 0, maxMs: 50 });
    const client = new DeviceClient({ host: '127.0.0.1', port: relay.port, password: 'relay-pass', timeoutMs: 3000 });
    try {
      for (let i = 0; i < 10; i++) await client.read([pointByName('batterySoc')!.address]);
      simulator.stats.rejectedEarly.should.equal(0);
      simulator.stats.violations.should.be.empty();
      should(simulator.stats.minGapMs).be.aboveOrEqual(1000);
    } finally {
      client.close();
      await relay.close();
      await simulator.stop();
    }
  });
});
