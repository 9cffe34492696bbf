/** Client and scheduler against the simulator over real HTTP on 127.0.0.1. */
import * as http from 'node:http';
import should from 'should';
import { READ_POINTS, pointByName, type ReadPoint } from '../src/points/catalogue';
import { DeviceClient, type ClientOptions } from '../src/device/client';
import { digestResponse, parseDigestHeader } from '../src/simulator/digest';
import { DeviceError, UnauthorizedError, ValidationError } from '../src/errors';
import { deviceQueue } from '../src/device/scheduler';
import { goingOut } from './support';
import { DeviceSimulator, type Fault, type SimulatorOptions } from '../src/simulator';

const PASSWORD = 'secret-pass';

async function simulatorWith(options: SimulatorOptions = {}): Promise<DeviceSimulator> {
  const simulator = new DeviceSimulator({ port: 0, udpPort: null, password: PASSWORD, ...options });
  await simulator.start();
  return simulator;
}

function clientFor(simulator: DeviceSimulator, options: Partial<ClientOptions> = {}): DeviceClient {
  return new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, timeoutMs: 3000, ...options });
}

const address = (name: string) => pointByName(name)!.address;

describe('DeviceClient against the simulator', function () {
  this.timeout(60000);
  let simulator: DeviceSimulator;
  let client: DeviceClient;

  afterEach(async () => {
    client?.close();
    await simulator?.stop();
  });

  describe('operations', () => {
    beforeEach(async () => {
      simulator = await simulatorWith();
      client = clientFor(simulator);
    });

    it('reads points and decodes them as the catalogue types say', async () => {
      const names = ['batterySoc', 'serialNumber', 'batteryState', 'meterStatus', 'batteryChargeEnergyTotal'];
      const result = await client.read(names.map(address));
      result.missing.should.be.empty();
      for (const name of names) {
        const value = result.values.get(address(name));
        const point = pointByName(name) as ReadPoint;
        if (point.type === 'string') should(value).be.a.String();
        else should(value).be.a.Number();
        should(value).eql(
          Number.isFinite(Number(simulator.value(point.address))) && point.type !== 'string'
            ? Number(simulator.value(point.address))
            : simulator.value(point.address),
        );
      }
    });

    it('reports points the device leaves out as missing, not as undefined', async () => {
      const pack2 = READ_POINTS.filter((p) => p.category.includes('Pack2')).map((p) => p.address);
      pack2.length.should.be.above(0);
      const result = await client.read([address('batterySoc'), ...pack2]);
      result.missing.should.eql(pack2);
      result.values.has(address('batterySoc')).should.be.true();
      for (const a of pack2) result.values.has(a).should.be.false();
    });

    it('splits a read of every catalogue point into requests of at most 50 addresses', async () => {
      const all = READ_POINTS.map((p) => p.address);
      const result = await client.read(all);
      (result.values.size + result.missing.length).should.equal(all.length);
      simulator.stats.maxAddressesPerRead.should.be.belowOrEqual(50);
      simulator.stats.byOperation['Vendor.GetData'].should.equal(Math.ceil(all.length / 50));
      simulator.stats.violations.should.be.empty();
    });

    it('writes a setting and the paired read point reports it', async () => {
      const outcome = await client.write('feedInPowerLimitSetting', 750);
      outcome.should.eql({ status: 'written', point: 'feedInPowerLimitSetting', address: 1146, values: [750] });
      const result = await client.read([address('feedInPowerLimit')]);
      result.values.get(address('feedInPowerLimit'))!.should.equal(750);
    });

    it('sends the three-value real-time write in one request after switching the mode', async () => {
      await client.write('workingModeSetting', 4);
      await client.setRealTime(1, 1200, 90);
      simulator.workingMode.should.equal(4);
      simulator.stats.byOperation['Vendor.SetData'].should.equal(2);
      const control = simulator.control;
      control.should.containEql({ state: 1, power: 1200, soc: 90 });
    });

    it('reads the device information', async () => {
      const info = await client.getDeviceInfo();
      info.should.have.properties(['type', 'sn', 'fw', 'mac', 'time', 'time_stamp', 'run_time']);
      info.sn!.should.equal(simulator.value(0));
      simulator.stats.byOperation['Sys.GetConfig'].should.equal(1);
    });

    it('never sends an invalid write', async () => {
      const before = simulator.stats.requests;
      await client.write('controlPower', 2401).should.be.rejectedWith(/controlPower.*2401.*50 to 2400/);
      await client.write('controlState', [1, 800]).should.be.rejectedWith(ValidationError);
      await client.write('noSuchPoint', 1).should.be.rejectedWith(ValidationError);
      await client.write('gridChargingSetting', 0.5).should.be.rejectedWith(ValidationError);
      simulator.stats.requests.should.equal(before);
    });

    it('reports a refused write (result false) with the point and value', async () => {
      // Real-time writes are refused outside real-time control mode.
      simulator.workingMode.should.not.equal(4);
      const error = await client.write('controlPower', 800).then(
        () => undefined,
        (e: DeviceError) => e,
      );
      should(error).be.instanceOf(DeviceError);
      error!.code.should.equal('REFUSED');
      error!.message.should.match(/800/).and.match(/47016/);
    });
  });

  describe('request form', () => {
    it('sends what the field notes describe: POST, empty body, compact encoded JSON, headers, pre-emptive digest', async () => {
      const seen: { method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
      const server = http.createServer((req, res) => {
        let body = '';
        req.on('data', (chunk) => (body += chunk));
        req.on('end', () => {
          seen.push({ method: req.method, url: req.url, headers: req.headers, body });
          res.setHeader('Content-Type', 'application/json');
          res.end(req.url!.startsWith('/rpc/Sys.GetConfig') ? '{"device":{"sn":"X"}}' : '{"6002":"50"}');
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as { port: number }).port;
      const local = new DeviceClient({ host: '127.0.0.1', port, password: PASSWORD, namespace: 'Maker' });
      try {
        const result = await local.read([6002]);
        should(result.values.get(6002)).equal(50);
        await local.getDeviceInfo();
      } finally {
        local.close();
        await new Promise((resolve) => server.close(resolve));
      }
      const [read, info] = seen;
      should(read).match({ method: 'POST', url: `/rpc/Maker.GetData?config=${encodeURIComponent('{"t":[6002]}')}`, body: '' });
      should(info).match({ method: 'GET', url: '/rpc/Sys.GetConfig', body: '' });
      for (const request of seen) {
        should(request.headers).match({ connection: 'close', 'content-type': 'application/json' });
        const digest = parseDigestHeader(request.headers.authorization)!;
        should(digest).match({ username: 'opend', uri: request.url, algorithm: 'MD5', qop: 'auth', opaque: '' });
        const { username, realm, nonce, nc, cnonce } = digest;
        should(digest.response).equal(
          digestResponse({ username, realm, nonce, nc, cnonce, password: PASSWORD, method: request.method!, uri: request.url! }),
        );
      }
    });
  });

  describe('authentication', () => {
    it('is locked with the default password until a password change, then works with the new one', async () => {
      simulator = await simulatorWith({ password: undefined, defaultPassword: 'label-pw' });
      client = clientFor(simulator, { password: 'label-pw' });
      const states: string[] = [];
      client.on('state', (state: string) => states.push(state));
      const error = await client.read([address('batterySoc')]).then(
        () => undefined,
        (e) => e,
      );
      should(error).be.instanceOf(UnauthorizedError);
      (error as UnauthorizedError).mayBeDefaultPassword.should.be.true();
      (error as UnauthorizedError).message.should.match(/default password/);
      states.should.eql(['default-password']);

      const before = simulator.stats.requests;
      await client.changePassword('brand-new-pw');
      // One round trip: the digest goes pre-emptively, with the GCM tag as realm.
      (simulator.stats.requests - before).should.equal(1);
      simulator.hasDefaultPassword.should.be.false();
      simulator.password.should.equal('brand-new-pw');
      const result = await client.read([address('batterySoc')]);
      result.values.get(address('batterySoc'))!.should.be.a.Number();
      states.should.eql(['default-password', 'ok']);
      simulator.stats.violations.should.be.empty();
    });

    it('rejects new passwords that cannot work before sending anything', async () => {
      simulator = await simulatorWith();
      client = clientFor(simulator);
      await client.changePassword('').should.be.rejectedWith(ValidationError);
      await client.changePassword('x'.repeat(17)).should.be.rejectedWith(/1 to 16 bytes/);
      simulator.stats.requests.should.equal(0);
    });

    it('reports a wrong current password on a password change as such, and changes nothing', async () => {
      simulator = await simulatorWith({ password: undefined, defaultPassword: 'label-pw' });
      client = clientFor(simulator, { password: 'mistyped' });
      const error = await client.changePassword('brand-new-pw').then(
        () => undefined,
        (e) => e,
      );
      should(error).be.instanceOf(UnauthorizedError);
      (error as UnauthorizedError).message.should.match(/current password is wrong/);
      (error as UnauthorizedError).mayBeDefaultPassword.should.be.false();
      simulator.hasDefaultPassword.should.be.true();
    });

    it('reports a wrong password as unauthorized', async () => {
      simulator = await simulatorWith();
      client = clientFor(simulator, { password: 'wrong' });
      await client.getDeviceInfo().should.be.rejectedWith(UnauthorizedError);
      client.state.should.equal('default-password');
    });

    it('answers a digest challenge once when the device insists on its own nonce', async () => {
      simulator = await simulatorWith({ requireChallenge: true });
      client = clientFor(simulator);
      const info = await client.getDeviceInfo();
      info.sn!.should.equal(simulator.value(0));
      simulator.stats.requests.should.equal(2);
      simulator.stats.violations.should.be.empty();
    });
  });

  describe('scheduler', () => {
    beforeEach(async () => {
      simulator = await simulatorWith();
      client = clientFor(simulator);
    });

    it('serves a burst of 200 reads from 20 callers in a handful of requests, one at a time', async () => {
      const numeric = READ_POINTS.filter((p) => p.type !== 'string' && !simulator.isUnsupported(p.address));
      const callers = Array.from({ length: 20 }, (_, caller) =>
        numeric.slice((caller * 3) % numeric.length, ((caller * 3) % numeric.length) + 4),
      );
      const reads = callers.flatMap((points, caller) =>
        Array.from({ length: 10 }, () => client.read(points.map((p) => p.address)).then((result) => ({ caller, result }))),
      );
      const results = await Promise.all(reads);
      for (const { caller, result } of results) {
        [...result.values.keys()].sort().should.eql(callers[caller].map((p) => p.address).sort());
        result.missing.should.be.empty();
      }
      const requests = simulator.stats.requests;
      console.log(`      200 reads from 20 callers -> ${requests} GetData requests, ${simulator.stats.violations.length} violations`);
      requests.should.be.belowOrEqual(3);
      simulator.stats.violations.should.be.empty();
    });

    it('keeps request starts at least the minimum interval apart', async () => {
      const started = Date.now();
      for (let i = 0; i < 3; i++) await client.read([address('batterySoc')]);
      (Date.now() - started).should.be.aboveOrEqual(2000);
      simulator.stats.violations.should.be.empty();
    });

    it('lets writes overtake waiting reads', async () => {
      const order: string[] = [];
      const one = goingOut();
      const first = client.read([address('batterySoc')], { onStart: one.onStart }).then(() => order.push('read 1'));
      await one.out;
      const second = client.read([address('batteryPower')]).then(() => order.push('read 2'));
      const write = client.write('lightSetting', 1).then(() => order.push('write'));
      await Promise.all([first, second, write]);
      order.should.eql(['read 1', 'write', 'read 2']);
    });

    it('gives reads and writes turns when both wait, so a control loop cannot starve monitoring', async () => {
      const order: string[] = [];
      const one = goingOut();
      const first = client.read([address('batterySoc')], { onStart: one.onStart }).then(() => order.push('read 1'));
      await one.out;
      const second = client.read([address('batteryPower')]).then(() => order.push('read 2'));
      // Three writes wait with read 2: one goes first, then the read, then the other two.
      const writes = ['lightSetting', 'feedInPowerLimitSetting', 'maxAcOutputPowerSetting'].map((name) =>
        client.write(name, name === 'lightSetting' ? 1 : 600).then(() => order.push(name)),
      );
      await Promise.all([first, second, ...writes]);
      order.should.eql(['read 1', 'lightSetting', 'read 2', 'feedInPowerLimitSetting', 'maxAcOutputPowerSetting']);
      simulator.stats.violations.should.be.empty();
    });

    it("an urgent write (an overdrive's second half) takes the next request, ahead of waiting writes and of the reads' turn", async () => {
      const order: string[] = [];
      const one = goingOut();
      const first = client.write('lightSetting', 1, { onStart: one.onStart }).then(() => order.push('write 1'));
      await one.out; // the reads' turn is next
      const read = client.read([address('batteryPower')]).then(() => order.push('read'));
      const plain = client.write('feedInPowerLimitSetting', 600).then(() => order.push('plain'));
      const urgent = client.write('maxAcOutputPowerSetting', 600, { urgent: true }).then(() => order.push('urgent'));
      await Promise.all([first, read, plain, urgent]);
      order.should.eql(['write 1', 'urgent', 'read', 'plain']);
      simulator.stats.violations.should.be.empty();
    });

    it('replaces a waiting write to the same address: last write wins', async () => {
      const read = goingOut();
      const inFlight = client.read([address('batterySoc')], { onStart: read.onStart });
      await read.out;
      const writes = [500, 600, 700].map((watts) => client.write('feedInPowerLimitSetting', watts));
      const outcomes = await Promise.all(writes);
      await inFlight;
      outcomes.map((o) => o.status).should.eql(['superseded', 'superseded', 'written']);
      simulator.stats.byOperation['Vendor.SetData'].should.equal(1);
      simulator.value(address('feedInPowerLimit'))!.should.equal(700);
    });

    it('bounds the queue with a clear error', async () => {
      client.close();
      client = clientFor(simulator, { maxQueue: 5 });
      const accepted = Array.from({ length: 5 }, () => client.read([address('batterySoc')]));
      await client.read([address('batterySoc')]).should.be.rejectedWith({ code: 'QUEUE_FULL' });
      await Promise.all(accepted);
    });

    it('rejects what waits on close, aborts what is in flight, and leaves no timer', async () => {
      await new Promise(setImmediate); // mocha's own time-out timer starts after the test begins
      const timersBefore = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
      const first = client.read([address('batterySoc')]).then(
        () => 'ok',
        (e: DeviceError) => e.code,
      );
      await new Promise((resolve) => setTimeout(resolve, 1100)); // the first is done; the next would wait
      const pending = [client.read([address('batteryPower')]), client.write('lightSetting', 0), client.getDeviceInfo()].map((p) =>
        p.then(
          () => 'ok',
          (e: DeviceError) => e.code,
        ),
      );
      client.close();
      (await first).should.equal('ok');
      (await Promise.all(pending)).should.eql(['CLOSED', 'CLOSED', 'CLOSED']);
      await new Promise((resolve) => setTimeout(resolve, 20));
      process
        .getActiveResourcesInfo()
        .filter((r) => r === 'Timeout')
        .length.should.be.belowOrEqual(timersBefore);
      await client.read([address('batterySoc')]).should.be.rejectedWith({ code: 'CLOSED' });
    });

    it('shares one queue among the clients of one device: nothing overlaps, and reads with equal credentials merge', async () => {
      const other = clientFor(simulator, { host: ' 127.0.0.1', timeoutMs: 2500 });
      try {
        await Promise.all([
          client.read([address('batterySoc')]),
          other.read([address('batteryPower')]),
          client.getDeviceInfo(),
          other.write('lightSetting', 1),
        ]);
      } finally {
        other.close();
      }
      simulator.stats.byOperation.should.eql({ 'Vendor.GetData': 1, 'Sys.GetConfig': 1, 'Vendor.SetData': 1 });
      simulator.stats.violations.should.be.empty();
    });

    it('finds one queue for one device however its address is written', () => {
      deviceQueue('[::1]', 8080).should.equal(deviceQueue(' ::1', 8080));
      deviceQueue('Battery.LOCAL', 8080).should.equal(deviceQueue('battery.local', 8080));
      deviceQueue('battery.local', 8080).should.not.equal(deviceQueue('battery.local', 8081));
      deviceQueue('battery.local.', 8080).should.equal(deviceQueue('battery.local', 8080));
      deviceQueue('::ffff:192.0.2.7', 8080).should.equal(deviceQueue('192.0.2.7', 8080));
      deviceQueue('[::FFFF:c000:207]', 8080).should.equal(deviceQueue('192.0.2.7', 8080));
      deviceQueue('0:0:0:0:0:0:0:1', 8080).should.equal(deviceQueue('::1', 8080));
    });

    it('joins the queue of the address a host name resolves to, at its first request', async () => {
      const byName = clientFor(simulator, { host: 'localhost' });
      const byAddress = clientFor(simulator, { host: '::ffff:127.0.0.1' });
      try {
        should(byAddress.deviceAddress).equal(`127.0.0.1:${simulator.port}`);
        should(byName.deviceAddress).be.undefined();
        const joined = new Promise((resolve) => byName.once('device', resolve));
        await Promise.all([byName.getDeviceInfo(), byAddress.getDeviceInfo()]);
        should(await joined).equal(`127.0.0.1:${simulator.port}`);
        byName.deviceState.should.equal(byAddress.deviceState);
        byName.requestCount.should.equal(2);
      } finally {
        byName.close();
        byAddress.close();
      }
      simulator.stats.violations.should.be.empty();
    });

    it('never lets a client read with credentials of another one', async () => {
      const wrong = clientFor(simulator, { password: 'not-the-password' });
      try {
        const outcomes = await Promise.all(
          [client, wrong].map((c) =>
            c.read([address('batterySoc')]).then(
              () => 'ok',
              (e: DeviceError) => e.code,
            ),
          ),
        );
        outcomes.should.eql(['ok', 'UNAUTHORIZED']);
      } finally {
        wrong.close();
      }
      simulator.stats.violations.should.be.empty();
    });

    it('takes an IPv6 address in brackets, as in a URL, and connects to it bare', () => {
      const v6 = new DeviceClient({ host: ' [::1] ', port: 8080, password: PASSWORD });
      v6.close();
      v6.host.should.equal('::1');
    });

    it('never goes below the one-second floor', () => {
      (() => clientFor(simulator, { minIntervalMs: 999 })).should.throw(/at least 1000 ms/);
    });
  });

  describe('faults', () => {
    const cases: { fault: Fault; code: string; operation: 'read' | 'write' }[] = [
      { fault: 'timeout', code: 'TIMEOUT', operation: 'read' },
      { fault: 'reset', code: 'UNREACHABLE', operation: 'read' },
      { fault: 'malformed', code: 'BAD_RESPONSE', operation: 'read' },
      { fault: 'http500', code: 'HTTP_STATUS', operation: 'read' },
      { fault: 'http503', code: 'HTTP_STATUS', operation: 'read' },
      { fault: 'resultFalse', code: 'REFUSED', operation: 'write' },
      { fault: 'offline', code: 'UNREACHABLE', operation: 'read' },
    ];
    for (const { fault, code, operation } of cases) {
      it(`${fault} gives ${code} and the client recovers`, async () => {
        simulator = await simulatorWith();
        client = clientFor(simulator, { timeoutMs: 500 });
        simulator.setFault(fault);
        await simulator.ready();
        const run = () => (operation === 'read' ? client.read([address('batterySoc')]) : client.write('lightSetting', 1));
        const error = await run().then(
          () => undefined,
          (e: DeviceError) => e,
        );
        should(error).be.instanceOf(DeviceError);
        error!.code.should.equal(code);
        if (fault === 'http503') error!.message.should.match(/503/);
        if (code === 'TIMEOUT' || code === 'UNREACHABLE') client.state.should.equal('unreachable');
        simulator.setFault(null);
        await simulator.ready();
        await run();
        client.state.should.equal('ok');
        simulator.stats.violations.should.be.empty();
      });
    }

    it('says that a request cut off by close may have been carried out', async () => {
      simulator = await simulatorWith({ slowDelayMs: 800 });
      client = clientFor(simulator, { timeoutMs: 2000 });
      simulator.setFault('slow', 1);
      const write = client.write('lightSetting', 1).then(
        () => undefined,
        (e: DeviceError) => e,
      );
      await new Promise((resolve) => setTimeout(resolve, 200)); // the request is now at the device
      client.close();
      const error = await write;
      should(error).have.property('code', 'CLOSED');
      error!.message.should.match(/under way: the device may have carried it out/);
    });

    it('waits for a slow device within the time-out', async () => {
      simulator = await simulatorWith({ slowDelayMs: 800 });
      client = clientFor(simulator, { timeoutMs: 2000 });
      simulator.setFault('slow', 1);
      const result = await client.read([address('batterySoc')]);
      result.values.has(address('batterySoc')).should.be.true();
    });
  });
});
