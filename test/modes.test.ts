/**
 * The device as owners have it: HTTP + Digest or HTTP mode (no authentication), operations named `Vendor` or
 * `Indevolt`, configured or detected. The client and the nodes against the simulator in every combination, Test
 * connection's report, and the errors of a mismatch.
 */
import * as http from 'node:http';
import * as net from 'node:net';
import should from 'should';
import deviceNode = require('../nodes/localbattery-device');
import readNode = require('../nodes/localbattery-read');
import passwordNode = require('../nodes/localbattery-password');
import type { AuthMode } from '../src/device/auth';
import { READ_POINTS, pointByName } from '../src/points/catalogue';
import { DeviceClient, NAMESPACES, type ClientOptions } from '../src/device/client';
import { DeviceError, UnauthorizedError } from '../src/errors';
import { DeviceSimulator, type SimulatorOptions } from '../src/simulator';
import { PASSWORD, deviceConfig, helper, startSimulator } from './support';
import { inEnglish, lastStatus, nextInput, text, until } from './node-support';

const SOC = pointByName('batterySoc')!.address;

async function simulatorWith(options: SimulatorOptions): Promise<DeviceSimulator> {
  const simulator = new DeviceSimulator({ port: 0, udpPort: null, password: PASSWORD, ...options });
  await simulator.start();
  return simulator;
}

function clientFor(simulator: DeviceSimulator, options: Partial<ClientOptions>): DeviceClient {
  return new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, timeoutMs: 3000, ...options });
}

function failure(promise: Promise<unknown>): Promise<DeviceError> {
  return promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: DeviceError) => error,
  );
}

describe('authentication modes and namespaces', function () {
  this.timeout(30000);
  let simulator: DeviceSimulator | undefined;
  let client: DeviceClient | undefined;

  afterEach(async () => {
    client?.close();
    await simulator?.stop();
    client = undefined;
    simulator = undefined;
  });

  describe('client', () => {
    for (const auth of ['digest', 'none'] as AuthMode[]) {
      for (const namespace of NAMESPACES) {
        for (const configured of [true, false]) {
          it(`${auth} × ${namespace} ${configured ? 'configured' : 'detected'}: reads, writes, and Test connection says what worked`, async () => {
            simulator = await simulatorWith({ auth, namespace });
            client = clientFor(simulator, { auth, namespace: configured ? namespace : '' });
            const detections: string[] = [];
            client.on('namespace', (found: string) => detections.push(found));

            const report = await client.testConnection();
            should(report).match({ auth, namespace, detected: !configured });
            should(report.device.sn).equal(simulator.value(0));
            // Detection costs at most one extra request: Vendor is tried first.
            const extra = !configured && namespace !== NAMESPACES[0] ? 1 : 0;
            should(simulator.stats.requests).equal(2 + extra);
            should(detections).eql(configured ? [] : [namespace]);

            const before = simulator.stats.requests;
            const read = await client.read([SOC]);
            should(read.values.get(SOC)).be.a.Number();
            await client.write('lightSetting', 0);
            should(simulator.value(pointByName('light')!.address)).equal(0);
            // Once known, the namespace costs nothing more.
            should(simulator.stats.requests - before).equal(2);
            should(simulator.stats.byOperation[`${namespace}.GetData`]).equal(2);
            should(simulator.stats.violations).be.empty();
          });
        }
      }
    }

    it('HTTP mode sends no Authorization header; HTTP + Digest sends one on every request', async () => {
      const seen: (string | undefined)[] = [];
      const server = http.createServer((req, res) => {
        seen.push(req.headers.authorization);
        res.end('{"6002":50}');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as net.AddressInfo).port;
      const none = new DeviceClient({ host: '127.0.0.1', port, auth: 'none', namespace: 'Indevolt' });
      const digest = new DeviceClient({ host: '127.0.0.1', port, password: PASSWORD, namespace: 'Indevolt' });
      try {
        await none.read([SOC]);
        await digest.read([SOC]);
      } finally {
        none.close();
        digest.close();
        await new Promise((resolve) => server.close(resolve));
      }
      should(seen[0]).be.undefined();
      should(seen[1]).match(/^Digest username="opend"/);
    });

    it('HTTP mode against a device that wants HTTP + Digest: a 401 that says so', async () => {
      simulator = await simulatorWith({ auth: 'digest' });
      client = clientFor(simulator, { auth: 'none' });
      const error = await failure(client.testConnection());
      should(error).be.instanceOf(UnauthorizedError);
      should(error.message).match(/wants HTTP \+ Digest/);
      should((error as UnauthorizedError).mayBeDefaultPassword).be.false();
      should(client.state).equal('digest-required');
      should(simulator.stats.requests).equal(1);
    });

    it('HTTP + Digest against a device in HTTP mode works: the device ignores the header', async () => {
      simulator = await simulatorWith({ auth: 'none', namespace: 'Indevolt' });
      client = clientFor(simulator, { auth: 'digest' });
      should(await client.testConnection()).match({ auth: 'digest', namespace: 'Indevolt', detected: true });
    });

    it('a password change needs HTTP + Digest, and nothing is sent in HTTP mode', async () => {
      simulator = await simulatorWith({ auth: 'none' });
      client = clientFor(simulator, { auth: 'none' });
      const error = await failure(client.changePassword('new-password'));
      should(error.code).equal('INVALID_VALUE');
      should(error.message).match(/HTTP \+ Digest/);
      should(simulator.stats.requests).equal(0);
    });

    it('a configured namespace the device does not know: the 404 says to leave it empty', async () => {
      simulator = await simulatorWith({ namespace: 'Indevolt' });
      client = clientFor(simulator, { namespace: 'Vendor' });
      const error = await failure(client.read([SOC]));
      should(error.code).equal('HTTP_STATUS');
      should(error.message).match(/Vendor\.GetData failed with HTTP 404.*leave Namespace empty/);
      should(simulator.stats.requests).equal(1);
    });

    it('detection where the device knows neither name: one error naming both, then the next request tries again', async () => {
      simulator = await simulatorWith({ namespace: 'Other' });
      client = clientFor(simulator, {});
      const error = await failure(client.read([SOC]));
      should(error.message).match(/Vendor\.GetData and Indevolt\.GetData failed with HTTP 404.*neither name/);
      should(simulator.stats.requests).equal(2);
      should(client.namespace).be.undefined();
      should(simulator.stats.violations).be.empty();
    });

    it('a model that lacks the points read first is not taken for a wrong namespace', async () => {
      const pack2 = READ_POINTS.filter((p) => p.category.includes('Pack2')).map((p) => p.address);
      for (const namespace of NAMESPACES) {
        simulator = await simulatorWith({ namespace });
        client = clientFor(simulator, {});
        pack2.forEach((address) => should(simulator!.isUnsupported(address)).be.true());
        const result = await client.read(pack2);
        should(result.missing).eql(pack2);
        should(client.namespace).equal(namespace);
        should(simulator.stats.requests).equal(namespace === NAMESPACES[0] ? 1 : 2);
        client.close();
        await simulator.stop();
      }
      client = undefined;
      simulator = undefined;
    });

    it('detection waits for an answer: a 401 leaves the namespace open, the right password then settles it', async () => {
      simulator = await simulatorWith({ namespace: 'Indevolt' });
      client = clientFor(simulator, { password: 'wrong-one' });
      should((await failure(client.read([SOC]))).code).equal('UNAUTHORIZED');
      should(client.namespace).be.undefined();
      client.close();
      client = clientFor(simulator, {});
      await client.read([SOC]);
      should(client.namespace).equal('Indevolt');
    });

    it('a refused connection names the likely cause', async () => {
      const server = net.createServer();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as net.AddressInfo).port;
      await new Promise((resolve) => server.close(resolve));
      client = new DeviceClient({ host: '127.0.0.1', port, auth: 'none' });
      const error = await failure(client.read([SOC]));
      should(error.code).equal('UNREACHABLE');
      should(error.message).match(/connection refused \(is the local API enabled/);
    });
  });

  describe('nodes', function () {
    const nodes = [inEnglish(deviceNode), inEnglish(readNode), inEnglish(passwordNode)];

    before(() => helper.startServer());
    after(() => helper.stopServer());
    afterEach(() => helper.unload());

    for (const auth of ['digest', 'none'] as AuthMode[]) {
      for (const namespace of NAMESPACES) {
        it(`${auth} × ${namespace} detected: a read node gets data, the log says which namespace answered`, async function () {
          simulator = await startSimulator({ auth, namespace });
          const device = deviceConfig(simulator, 'device1', { auth, namespace: '' });
          await helper.load(
            nodes,
            [
              device.node,
              { id: 'read1', type: 'localbattery-read', device: 'device1', points: ['batterySoc'], wires: [['out']] },
              { id: 'out', type: 'helper' },
            ],
            auth === 'digest' ? device.credentials : {},
          );
          const config = helper.getNode('device1');
          const logged: string[] = [];
          config.log = (message: string) => logged.push(message);
          const output = nextInput(helper.getNode('out'));
          helper.getNode('read1').receive({ payload: '' });
          const msg = await output;
          should(msg.payload.batterySoc).be.a.Number();
          should(logged).containEql(text('localbattery-device.log.namespace', { namespace }));
        });
      }
    }

    it('POST /localbattery/test reports mode and namespace; a mismatched mode gets the 401 that says so', async function () {
      simulator = await startSimulator({ auth: 'none', namespace: 'Indevolt' });
      await helper.load(nodes, []);
      const base = { host: '127.0.0.1', port: simulator.port, namespace: '' };
      const ok = await helper
        .request()
        .post('/localbattery/test')
        .send({ ...base, auth: 'none' })
        .expect(200);
      should(ok.body).match({ auth: 'none', namespace: 'Indevolt', detected: true, device: { sn: simulator.value(0) } });
      await simulator.stop();

      simulator = await startSimulator({ auth: 'digest', namespace: 'Vendor' });
      const wanted = await helper
        .request()
        .post('/localbattery/test')
        .send({ ...base, port: simulator.port, auth: 'none' })
        .expect(400);
      should(wanted.body.error).match({ code: 'UNAUTHORIZED', message: /wants HTTP \+ Digest/ });
      const digest = await helper
        .request()
        .post('/localbattery/test')
        .send({ ...base, port: simulator.port, auth: 'digest', password: PASSWORD })
        .expect(200);
      should(digest.body).match({ auth: 'digest', namespace: 'Vendor', detected: true });
    });

    it('HTTP mode: the password dialog and the set password node say they need HTTP + Digest, and send nothing', async function () {
      simulator = await startSimulator({ auth: 'none' });
      const device = deviceConfig(simulator, 'device1', { auth: 'none', namespace: '' });
      await helper.load(
        nodes,
        [
          device.node,
          { id: 'pw1', type: 'localbattery-password', device: 'device1', source: 'payload', wires: [[]] },
          { id: 'c', type: 'catch', scope: null, wires: [['caught']] },
          { id: 'caught', type: 'helper' },
        ],
        {},
      );
      const route = await helper
        .request()
        .post('/localbattery/set-password')
        .send({ host: '127.0.0.1', port: simulator.port, auth: 'none', currentPassword: 'x', newPassword: 'new-password' })
        .expect(400);
      should(route.body.error.message).match(/HTTP \+ Digest/);

      const caught = nextInput(helper.getNode('caught'));
      helper.getNode('pw1').receive({ payload: 'new-password' });
      const msg = await caught;
      should(msg.error.message).match(/HTTP \+ Digest/);
      should(JSON.stringify(msg)).not.containEql('new-password');
      await until(() => lastStatus(helper.getNode('pw1'))?.fill === 'red');
      should(simulator.stats.requests).equal(0);
    });
  });
});
