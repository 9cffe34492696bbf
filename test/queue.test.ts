/** The device queue (src/device/scheduler.ts) through real clients and sessions against the simulator on 127.0.0.1. */
import { getEventListeners } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import should from 'should';
import { READ_POINTS, REAL_TIME, pointByName } from '../src/points/catalogue';
import { DeviceClient, type ClientOptions } from '../src/device/client';
import type { DeviceError } from '../src/errors';
import { ArrivalMargin, DeviceQueue, deviceQueue, type QueueMember, type RequestContext } from '../src/device/scheduler';
import { DeviceSimulator, type SimulatorOptions } from '../src/simulator';
import { exchange } from '../src/device/transport';
import { goingOut } from './support';

const PASSWORD = 'queue-pass';
const address = (name: string) => pointByName(name)!.address;
const settle = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ok',
    (error: DeviceError) => error.code,
  );

describe('device queue (one per device, sessions per user)', function () {
  this.timeout(60000);
  let simulator: DeviceSimulator;
  let client: DeviceClient;

  async function start(options: SimulatorOptions = {}, clientOptions: Partial<ClientOptions> = {}): Promise<void> {
    simulator = new DeviceSimulator({ port: 0, udpPort: null, password: PASSWORD, ...options });
    await simulator.start();
    client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, timeoutMs: 3000, ...clientOptions });
  }

  afterEach(async () => {
    client?.close();
    await simulator?.stop();
  });

  it("closing one session drops its waiting write and nobody else's (a partial deploy)", async () => {
    await start();
    const removed = client.session();
    const staying = client.session();
    const read = goingOut();
    const busy = staying.read([address('batterySoc')], { onStart: read.onStart });
    await read.out; // the writes wait for the next slot
    const dropped = settle(removed.write('feedInPowerLimitSetting', 600));
    const kept = settle(staying.write('backupSocSetting', 30));
    removed.close();
    (await dropped).should.equal('CLOSED');
    (await kept).should.equal('ok');
    await busy;
    simulator.value(address('feedInPowerLimit'))!.should.not.equal(600);
    simulator.stats.byOperation['Vendor.SetData'].should.equal(1);
    await removed.read([address('batterySoc')]).should.be.rejectedWith({ code: 'CLOSED' });
    (await staying.read([address('batterySoc')])).values.has(address('batterySoc')).should.be.true();
  });

  it('folds a newer write into a waiting one: the values it leaves out and the place in the queue stay', async () => {
    await start({ workingMode: REAL_TIME.mode });
    const read = goingOut();
    const busy = client.read([address('batterySoc')], { onStart: read.onStart });
    await read.out;
    const order: string[] = [];
    const full = client.write(REAL_TIME.stateAddress, [1, 1500, 90]).then((r) => (order.push('control'), r.status));
    const between = client.write('lightSetting', 1).then(() => order.push('light'));
    const single = client.write(REAL_TIME.stateAddress, 2).then((r) => (order.push('control again'), r.status));
    (await full).should.equal('superseded');
    (await single).should.equal('written');
    await Promise.all([busy, between]);
    simulator.control.should.containEql({ state: 2, power: 1500, soc: 90 });
    order.should.eql(['control', 'control again', 'light']);
  });

  it('serves a small read within two requests while a read of 2 000 addresses waits', async () => {
    await start();
    const numeric = READ_POINTS.filter((p) => !simulator.isUnsupported(p.address)).map((p) => p.address);
    const large = Array.from({ length: 2000 }, (_, i) => 20000 + i);
    const first = goingOut();
    const big = client.read(large, { onStart: first.onStart });
    await first.out;
    const before = simulator.stats.requests;
    await client.read([numeric[0]]);
    (simulator.stats.requests - before).should.be.belowOrEqual(2);
    client.close(); // the rest of the large read is not needed
    await big.then(
      () => undefined,
      () => undefined,
    );
  });

  it('sends again after a 503, later, and holds requests back more from then on', async () => {
    await start();
    const margin = deviceQueue('127.0.0.1', simulator.port).margin;
    const before = margin.ms;
    simulator.setFault('http503', 1);
    const result = await client.read([address('batterySoc')]);
    result.values.has(address('batterySoc')).should.be.true();
    simulator.stats.requests.should.equal(2);
    simulator.stats.violations.should.be.empty();
    margin.ms.should.be.aboveOrEqual(before + 20);
  });

  /** One GetData exchange with a local server that notes each request's arrival; `run` gets the exchange's options. */
  async function withServer(run: (options: Parameters<typeof exchange>[0]) => Promise<void>): Promise<number[]> {
    const arrivals: number[] = [];
    const server = http.createServer((_req, res) => {
      arrivals.push(performance.now());
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      await run({
        host: '127.0.0.1',
        port: (server.address() as AddressInfo).port,
        method: 'POST',
        target: '/rpc/Vendor.GetData',
        headers: {},
        timeoutMs: 3000,
        operation: 'Vendor.GetData',
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    return arrivals;
  }

  it('tells when the connection is up, with its connect time, and holds the request until released', async () => {
    let connected = 0;
    let connectMs = -1;
    const started = performance.now();
    const arrivals = await withServer(async (options) => {
      await exchange({
        ...options,
        onConnected: async (ms) => {
          connected = performance.now();
          connectMs = ms;
          await new Promise((resolve) => setTimeout(resolve, 150));
        },
      });
    });
    connected.should.be.above(0);
    // The connection was up; the request itself left only when the hold ended.
    arrivals.should.have.length(1);
    (arrivals[0] - connected).should.be.aboveOrEqual(145);
    connectMs.should.be.within(0, connected - started);
  });

  it('a request whose hold is rejected never reaches the device', async () => {
    const arrivals = await withServer(async (options) => {
      // As the queue does for a job dropped while held: the hold rejects, nothing is aborted.
      const held = () => Promise.reject(new Error('dropped while held'));
      await exchange({ ...options, onConnected: held }).should.be.rejectedWith('dropped while held');
    });
    arrivals.should.be.empty();
  });

  it('the time-out does not run while the request is held for its slot', async () => {
    const arrivals = await withServer(async (options) => {
      const held = () => new Promise<void>((resolve) => setTimeout(resolve, 300));
      (await exchange({ ...options, timeoutMs: 200, onConnected: held })).status.should.equal(200);
    });
    arrivals.should.have.length(1);
  });

  describe('the queue with requests the test drives', () => {
    /** A member whose request opens its "connection" with `connect` (the test's) and sends nothing of its own. */
    class Member implements QueueMember {
      readonly mergeKey = 'test';
      readonly minIntervalMs = 100;
      readonly maxQueue = 100;
      readonly maxAddressesPerRead = 50;
      /** What left, and when (performance.now()). */
      readonly sent: { what: string; at: number }[] = [];

      constructor(private readonly connect: (what: string, context: RequestContext) => Promise<void> = () => Promise.resolve()) {}

      async readBatch(addresses: number[], context: RequestContext): Promise<Record<string, unknown>> {
        await this.request(`read ${addresses.join()}`, context);
        return Object.fromEntries(addresses.map((address) => [address, 1]));
      }

      async writeRange(address: number, values: number[], context: RequestContext): Promise<void> {
        await this.request(`${address}=${values.join()}`, context);
      }

      private async request(what: string, context: RequestContext): Promise<void> {
        await context.gate();
        await this.connect(what, context);
        // A timed handshake: the next connection opens this long before its slot, and the request is held until it.
        await context.connected(40);
        this.sent.push({ what, at: performance.now() });
        context.answered();
      }
    }

    let queue: DeviceQueue;
    afterEach(() => queue?.detach(member));
    let member: Member;

    /** A new member: resolves when the request `what` has its connection (it is held for its slot, or goes). */
    function reaching(what: string): Promise<void> {
      return new Promise<void>((resolve) => {
        member = new Member((request) => {
          if (request === what) resolve();
          return Promise.resolve();
        });
      });
    }
    const rejection = (promise: Promise<unknown>) =>
      promise.then(
        () => undefined,
        (error: Error) => error,
      );

    it('spaces the next request from when the bytes were written: a pause of the process after the slot brings none early', async () => {
      // Two real requests; between the first's slot and its write the process pauses 300 ms (a garbage collection).
      const arrivals = await withServer(async (options) => {
        let pauses = 1;
        const stalling: QueueMember = {
          ...new Member(),
          readBatch: async (addresses, context) => {
            await context.gate();
            const onConnected = (connectMs: number) => {
              const slot = context.connected(connectMs);
              void slot.then(() => {
                const until = performance.now() + (pauses-- > 0 ? 300 : 0);
                while (performance.now() < until);
              });
              return slot;
            };
            await exchange({ ...options, onConnected, onSent: context.sent });
            context.answered();
            return Object.fromEntries(addresses.map((address) => [address, 1]));
          },
          writeRange: () => Promise.resolve(),
        };
        queue = new DeviceQueue();
        queue.attach(stalling);
        await queue.read(stalling, [1]);
        await queue.read(stalling, [2]);
        queue.detach(stalling);
      });
      arrivals.should.have.length(2);
      // Counted from the slot, the second came as soon as the first was answered, a few ms after it.
      (arrivals[1] - arrivals[0]).should.be.aboveOrEqual(100);
    });

    it('a job dropped while held for its slot: "before the request was sent", and the slot goes to the next job', async () => {
      const held = reaching('2=2');
      queue = new DeviceQueue();
      queue.attach(member);
      const [first, dropped, next] = [{}, {}, {}];
      const one = queue.write(member, 1, [1], { owner: first });
      const two = rejection(queue.write(member, 2, [2], { owner: dropped }));
      await held;
      queue.close(dropped);
      const error = (await two)!;
      should(error).have.property('code', 'CLOSED');
      error.message.should.match(/before the request was sent/);
      await one;
      await queue.write(member, 3, [3], { owner: next });
      member.sent.map((s) => s.what).should.eql(['1=1', '3=3']);
      // In the dropped job's slot: one interval and the margin after the first, not two.
      (member.sent[1].at - member.sent[0].at).should.be.below(1.5 * (member.minIntervalMs + queue.margin.ms));
    });

    it('a write held for its slot takes a newer write to its address: the fold goes in that slot, the held request never', async () => {
      const held = reaching('2=2');
      queue = new DeviceQueue();
      queue.attach(member);
      const one = queue.write(member, 1, [1]);
      const older = queue.write(member, 2, [2]);
      await held;
      const newer = queue.write(member, 2, [3]);
      (await older).should.equal('superseded');
      (await newer).should.equal('written');
      await one;
      member.sent.map((s) => s.what).should.eql(['1=1', '2=3']);
      (member.sent[1].at - member.sent[0].at).should.be.below(1.5 * (member.minIntervalMs + queue.margin.ms));
    });

    it('a job dropped while its connection opens is cut at once, not at the time-out', async () => {
      const ends: string[] = [];
      const timers = new Set<NodeJS.Timeout>();
      member = new Member((what, context) =>
        what !== '2=2'
          ? Promise.resolve()
          : new Promise<void>((_resolve, reject) => {
              const timer = setTimeout(() => (ends.push('time-out'), reject(new Error('time-out'))), 3000);
              timers.add(timer);
              context.signal.addEventListener('abort', () => {
                clearTimeout(timer);
                ends.push('cut');
                reject(new Error('cut'));
              });
              connecting();
            }),
      );
      let connecting!: () => void;
      const opening = new Promise<void>((resolve) => (connecting = resolve));
      queue = new DeviceQueue();
      queue.attach(member);
      const owner = {};
      const one = queue.write(member, 1, [1]);
      const two = rejection(queue.write(member, 2, [2], { owner }));
      await opening;
      queue.close(owner);
      should(await two).have.property('code', 'CLOSED');
      await one;
      await queue.write(member, 3, [3]);
      for (const timer of timers) clearTimeout(timer);
      ends.should.eql(['cut']);
      member.sent.map((s) => s.what).should.eql(['1=1', '3=3']);
    });

    it("an urgent write takes the reads' turn once: a read waits one urgent slot at most", async () => {
      const commandOut = reaching('1=1');
      queue = new DeviceQueue();
      queue.attach(member);
      const command = queue.write(member, 1, [1]);
      await commandOut;
      const read = queue.read(member, [7]);
      const urgent = [queue.write(member, 2, [2], { urgent: true }), queue.write(member, 3, [3], { urgent: true })];
      await Promise.all([command, read, ...urgent]);
      member.sent.map((s) => s.what).should.eql(['1=1', '2=2', 'read 7', '3=3']);
    });

    it("a read's abort listener goes when the read is done", async () => {
      member = new Member();
      queue = new DeviceQueue();
      queue.attach(member);
      const withdraw = new AbortController();
      await queue.read(member, [7], { signal: withdraw.signal });
      getEventListeners(withdraw.signal, 'abort').should.have.length(0);
    });

    it('waits never end early, whatever fraction of a ms they end on', async () => {
      const sleeper = new DeviceQueue() as unknown as { sleepUntil(time: number, signal?: AbortSignal): Promise<void> };
      const signal = new AbortController().signal;
      let early = 0;
      for (let i = 0; i < 40; i++) {
        const due = performance.now() + 2 + Math.random();
        await sleeper.sleepUntil(due, signal);
        if (performance.now() < due) early++;
      }
      early.should.equal(0);
    });
  });

  describe('arrival margin', () => {
    it('holds a prior while few connections are timed', () => {
      const margin = new ArrivalMargin();
      margin.ms.should.equal(125);
      for (let i = 0; i < 7; i++) margin.connected(1);
      margin.ms.should.equal(125);
    });

    it('follows the spread of connect times, scaled for the window, and not the answer times', () => {
      const margin = new ArrivalMargin();
      // 32 handshakes of 20 and 80 ms: a range of 60 ms, times 33/31 for 32 samples.
      for (let i = 0; i < 32; i++) margin.connected(20 + (i % 2) * 60);
      margin.spreadMs.should.be.approximately(63.87, 0.01);
      margin.ms.should.equal(89);
      // Answers of 0.9 to 1.1 s (the device's processing) change nothing.
      for (let i = 0; i < 32; i++) margin.answered();
      margin.ms.should.equal(89);
      // On loopback the network adds almost nothing.
      for (let i = 0; i < 32; i++) margin.connected(0.2 + (i % 5) * 0.1);
      margin.ms.should.equal(26);
    });

    it('widens at once when one connection is slower, and forgets it after a window', () => {
      const margin = new ArrivalMargin();
      for (let i = 0; i < 32; i++) margin.connected(1);
      margin.ms.should.equal(25);
      margin.connected(61);
      margin.ms.should.equal(89);
      for (let i = 0; i < 31; i++) margin.connected(1);
      margin.ms.should.equal(89);
      margin.connected(1);
      margin.ms.should.equal(25);
    });

    it('grows by a step for each 503, shrinks by 1 ms per answer, within bounds', () => {
      const margin = new ArrivalMargin();
      for (let i = 0; i < 32; i++) margin.connected(1);
      margin.rejectedAsEarly();
      margin.rejectedAsEarly();
      margin.ms.should.equal(75);
      for (let i = 0; i < 10; i++) margin.answered();
      margin.ms.should.equal(65);
      for (let i = 0; i < 100; i++) margin.rejectedAsEarly();
      margin.ms.should.equal(400);
      for (let i = 0; i < 1000; i++) margin.answered();
      margin.ms.should.equal(25);
    });
  });

  it('says an oversized answer is a bad answer, not an unreachable device', async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 32);
      let sent = 0;
      const pump = () => {
        while (sent < 40 && res.write(chunk)) sent++;
        if (sent < 40) res.once('drain', pump);
        else res.end('{}');
      };
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const huge = new DeviceClient({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, auth: 'none', namespace: 'Vendor' });
    try {
      const error = await huge.read([address('batterySoc')]).then(
        () => undefined,
        (e: DeviceError) => e,
      );
      should(error).have.property('code', 'BAD_RESPONSE');
      huge.state.should.not.equal('unreachable');
    } finally {
      huge.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
