/**
 * The config node: one shared client per device, connection status pushed to every user, the editor's admin
 * routes (and their permissions), and redeploys while requests are in flight.
 */
import dns = require('node:dns');
import net = require('node:net');
import should from 'should';
import deviceNode = require('../nodes/localbattery-device');
import infoNode = require('../nodes/localbattery-info');
import passwordNode = require('../nodes/localbattery-password');
import { READ_POINTS, WRITE_POINTS } from '../src/points/catalogue';
import { DeviceClient } from '../src/device/client';
import type { DeviceSimulator } from '../src/simulator';
import { PASSWORD, deviceConfig, helper, redeploy, startSimulator } from './support';
import { inEnglish, lastStatus, nextInput, onlyLoopbackUdp, sleep, statusesOf, text, until } from './node-support';

type Middleware = ((req: { headers: Record<string, string> }, res: any, next: () => void) => void) & { permission?: string };

/**
 * Stands in for RED.auth.needsPermission (the test helper's own passes everything): records which permission
 * each route asked for, and refuses a request that carries `x-test-deny`, as the real one refuses a user who
 * lacks the permission.
 */
function needsPermission(permission: string): Middleware {
  const middleware: Middleware = (req, res, next) => {
    if (req.headers['x-test-deny']) res.status(401).end();
    else next();
  };
  middleware.permission = permission;
  return middleware;
}

const auth = { needsPermission };
/** A neighbour whose close takes a while (an MQTT node saying goodbye to its broker): a redeploy waits for it. */
const SLOW_CLOSE_MS = 400;
function slowCloseNode(RED: any): void {
  RED.nodes.registerType('slow-close', function (this: any, config: object) {
    RED.nodes.createNode(this, config);
    this.on('close', (done: () => void) => setTimeout(done, SLOW_CLOSE_MS));
  });
}

const nodes = [inEnglish(deviceNode, { auth }), inEnglish(infoNode), inEnglish(passwordNode), slowCloseNode];
const IDENTITY = { serialNumber: 'SIMDEV0000000099', type: 'SIM-1600', firmware: 'V1.3.0A_R006.072_SIM_00000039' };

function info(id: string, device = 'device1', out = `${id}-out`) {
  return [
    { id, type: 'localbattery-info', device, wires: [[out]] },
    { id: out, type: 'helper' },
  ];
}

const catcher = [
  { id: 'catch1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
  { id: 'caught', type: 'helper' },
];

/** The helper's admin app, where the routes live. */
function adminRoutes(): { path: string; method: string; stack: { handle: Middleware }[] }[] {
  const app = (helper as unknown as { _httpAdmin: { _router: { stack: { route?: any }[] } } })._httpAdmin;
  return app._router.stack
    .filter((layer) => layer.route && String(layer.route.path).startsWith('/localbattery/'))
    .map((layer) => ({ path: layer.route.path, method: Object.keys(layer.route.methods)[0], stack: layer.route.stack }));
}

describe('localbattery-device config node', function () {
  let simulator: DeviceSimulator;

  before(async function () {
    await helper.startServer();
  });

  after(async function () {
    await helper.stopServer();
  });

  afterEach(async function () {
    await helper.unload();
    await simulator?.stop();
  });

  describe('environment variables', function () {
    const names = ['LB_TEST_HOST', 'LB_TEST_PORT', 'LB_TEST_TIMEOUT', 'LB_TEST_PASSWORD'];
    afterEach(function () {
      for (const name of names) delete process.env[name];
    });

    it("${VAR} in host, port, time-out and password works in a deployed flow and in the editor's connection test", async function () {
      simulator = await startSimulator(IDENTITY);
      Object.assign(process.env, {
        LB_TEST_HOST: '127.0.0.1',
        LB_TEST_PORT: String(simulator.port),
        LB_TEST_TIMEOUT: '2500',
        LB_TEST_PASSWORD: PASSWORD,
      });
      const device = deviceConfig(simulator, 'device1', {
        host: '${LB_TEST_HOST}',
        port: '${LB_TEST_PORT}',
        timeout: '${LB_TEST_TIMEOUT}',
      });
      const info = { id: 'info1', type: 'localbattery-info', device: 'device1', wires: [['out']] };
      await helper.load(nodes, [device.node, info, { id: 'out', type: 'helper' }], { device1: { password: '${LB_TEST_PASSWORD}' } });
      should(helper.getNode('device1').client.timeoutMs).equal(2500);
      const output = nextInput(helper.getNode('out'));
      helper.getNode('info1').receive({});
      should((await output).payload.sn).equal(IDENTITY.serialNumber);

      // Towards the configuration's own host and port (see "admin routes keep secrets in place").
      const res = await helper
        .request()
        .post('/localbattery/test')
        .send({ id: 'device1', host: '${LB_TEST_HOST}', port: '${LB_TEST_PORT}', password: '${LB_TEST_PASSWORD}' })
        .expect(200);
      should(res.body.device.sn).equal(IDENTITY.serialNumber);
      // An unset variable stays as it is and fails validation, naming the field.
      const unset = await helper
        .request()
        .post('/localbattery/test')
        .send({ host: '127.0.0.1', port: '${LB_TEST_UNSET}', password: 'x' })
        .expect(400);
      should(unset.body.error.message).match(/port/);
    });
  });

  describe('admin routes keep secrets in place', function () {
    const names = ['LB_TEST_USER', 'LB_TEST_SECRET', 'LB_TEST_PASSWORD'];
    let other: DeviceSimulator | undefined;
    afterEach(async function () {
      for (const name of names) delete process.env[name];
      await other?.stop();
      other = undefined;
    });

    /** The configuration at `simulator`, deployed, and a second device that happens to have the same password. */
    async function twoDevices(): Promise<ReturnType<typeof deviceConfig>> {
      simulator = await startSimulator(IDENTITY);
      other = await startSimulator();
      const device = deviceConfig(simulator);
      await helper.load(nodes, [device.node], device.credentials);
      return device;
    }

    it('Test connection uses the stored password only towards the stored host and port', async function () {
      const device = await twoDevices();
      const { host, port, username, namespace } = device.node;
      const elsewhere = await helper
        .request()
        .post('/localbattery/test')
        .send({ id: 'device1', host, port: other!.port, username, namespace, password: '__PWRD__' })
        .expect(400);
      should(elsewhere.body.error.code).equal('UNAUTHORIZED');
      // Its own host and port get it, also written another way.
      await helper
        .request()
        .post('/localbattery/test')
        .send({ id: 'device1', host: ` ${host} `, port: String(port), username, namespace, password: '__PWRD__' })
        .expect(200);
    });

    it('Set password uses the stored password only towards the stored host and port', async function () {
      const device = await twoDevices();
      const { host, username, namespace } = device.node;
      const changed = await helper
        .request()
        .post('/localbattery/set-password')
        .send({ id: 'device1', host, port: other!.port, username, namespace, currentPassword: '__PWRD__', newPassword: 'taken-over-1' })
        .expect(400);
      // Without the stored password there is no current password: nothing is sent.
      should(changed.body.error.message).match(/current password/);
      should(other!.password).equal(PASSWORD);
    });

    it('puts in ${VAR} only where the field takes it and the configuration holds it, towards its own host and port', async function () {
      const device = await twoDevices();
      Object.assign(process.env, { LB_TEST_USER: 'opend', LB_TEST_PASSWORD: PASSWORD });
      const { host, port, namespace } = device.node;
      // The username takes no variable: it goes as typed, and the device does not know that user.
      const user = await helper
        .request()
        .post('/localbattery/test')
        .send({ id: 'device1', host, port, namespace, username: '${LB_TEST_USER}', password: '__PWRD__' })
        .expect(400);
      should(user.body.error.code).equal('UNAUTHORIZED');
      // A password variable is a stored secret too.
      const elsewhere = await helper
        .request()
        .post('/localbattery/test')
        .send({ host, port: other!.port, namespace, password: '${LB_TEST_PASSWORD}' })
        .expect(400);
      should(elsewhere.body.error.code).equal('UNAUTHORIZED');
      // A variable the configuration does not hold stays as typed, also towards its own host.
      const foreign = await helper
        .request()
        .post('/localbattery/test')
        .send({ id: 'device1', host, port, namespace, password: '${LB_TEST_PASSWORD}' })
        .expect(400);
      should(foreign.body.error.code).equal('UNAUTHORIZED');
      // Deployed with it, the configuration's own variable is put in.
      await helper.unload();
      await helper.load(nodes, [device.node], { device1: { password: '${LB_TEST_PASSWORD}' } });
      await helper
        .request()
        .post('/localbattery/test')
        .send({ id: 'device1', host, port, namespace, password: '${LB_TEST_PASSWORD}' })
        .expect(200);
    });

    it('echoes no environment value in an error text', async function () {
      simulator = await startSimulator();
      await helper.load(nodes, []);
      const secret = 'Hunter2-Not-A-Port';
      process.env.LB_TEST_SECRET = secret;
      for (const field of ['port', 'namespace', 'timeout', 'chargeLimit']) {
        const res = await helper
          .request()
          .post('/localbattery/test')
          .send({ host: '127.0.0.1', port: simulator.port, password: 'x', [field]: '${LB_TEST_SECRET}' })
          .expect(400);
        should(res.body.error.code).equal('INVALID_VALUE', field);
        should(res.body.error.message).containEql('${LB_TEST_SECRET}');
        should(JSON.stringify(res.body).toLowerCase()).not.containEql(secret.toLowerCase());
      }
    });
  });

  describe('admin routes never echo environment values', function () {
    const NAMES = ['LB_TEST_VALUE', 'LB_TEST_HOST', 'LB_TEST_PORT', 'LB_TEST_NS'];
    afterEach(function () {
      for (const name of NAMES) delete process.env[name];
    });

    /** Values that the scrubbing of error texts missed: quotes, backslashes, line breaks, trimmed and long ones. */
    const AWKWARD = ['a"quoted"9', 'back\\slash\\9', 'two\nlines9', '   spaced secret9', `"long" and ${'y'.repeat(70)}`];

    /** Each form in which `value` could show in `text`: whole, trimmed, lower-cased, JSON-escaped, or a piece of it. */
    function shows(text: string, value: string): string | undefined {
      const trimmed = value.trim();
      const forms = [value, trimmed, trimmed.toLowerCase(), JSON.stringify(value).slice(1, -1), trimmed.slice(0, 12), trimmed.slice(-12)];
      return forms.find((form) => text.includes(form) || text.toLowerCase().includes(form.toLowerCase()));
    }

    /** Posts `body` to `route` and returns the raw answer, checked to show none of `values`. */
    async function answerShowsNone(route: string, body: Record<string, unknown>, values: string[], status: number) {
      const res = await helper.request().post(route).send(body).expect(status);
      for (const value of values)
        should(shows(res.text, value) === undefined).be.true(`${route} showed ${JSON.stringify(value)}: ${res.text}`);
      return res;
    }

    it('answers a failed field put in from ${NAME} with a fixed text naming it, whatever the value holds', async function () {
      simulator = await startSimulator(IDENTITY);
      for (const field of ['host', 'port', 'namespace', 'timeout', 'minInterval', 'chargeLimit']) {
        for (const value of AWKWARD) {
          process.env.LB_TEST_VALUE = value;
          const device = deviceConfig(simulator, 'device1', { [field]: '${LB_TEST_VALUE}' });
          await helper.load(nodes, [device.node], device.credentials);
          const body = { ...device.node, password: '__PWRD__' };
          const res = await answerShowsNone('/localbattery/test', body, [value], 400);
          should(res.body.error).have.properties({ code: 'INVALID_VALUE' });
          should(res.body.error.message).containEql('${LB_TEST_VALUE}');
          const changed = await answerShowsNone(
            '/localbattery/set-password',
            { ...device.node, currentPassword: '__PWRD__', newPassword: 'next-one-1' },
            [value],
            400,
          );
          should(changed.body.error.message).containEql('${LB_TEST_VALUE}');
          await helper.unload();
        }
      }
      should(simulator.password).equal(PASSWORD);
    });

    it('shows no host, port or namespace put in, in an error or in the report', async function () {
      simulator = await startSimulator(IDENTITY);
      const closed = await startSimulator();
      const closedPort = closed.port;
      await closed.stop();
      Object.assign(process.env, { LB_TEST_HOST: 'localhost', LB_TEST_PORT: String(closedPort), LB_TEST_NS: 'Quiet_Namespace' });
      const values = ['localhost', String(closedPort), 'Quiet_Namespace'];
      // Unreachable: the address is not shown.
      let device = deviceConfig(simulator, 'device1', { host: '${LB_TEST_HOST}', port: '${LB_TEST_PORT}' });
      await helper.load(nodes, [device.node], device.credentials);
      const unreachable = await answerShowsNone('/localbattery/test', { ...device.node, password: '__PWRD__' }, values, 400);
      should(unreachable.body.error).have.properties({ code: 'UNREACHABLE' });
      should(unreachable.body.error.message).containEql('${LB_TEST_HOST}');
      await helper.unload();
      // A namespace the device does not know: the operation's name is not shown.
      device = deviceConfig(simulator, 'device1', { namespace: '${LB_TEST_NS}' });
      await helper.load(nodes, [device.node], device.credentials);
      const refused = await answerShowsNone('/localbattery/test', { ...device.node, password: '__PWRD__' }, values, 400);
      should(refused.body.error.code).equal('HTTP_STATUS');
      await helper.unload();
      // A namespace that works: the report names the variable.
      process.env.LB_TEST_NS = 'Vendor';
      await helper.load(nodes, [device.node], device.credentials);
      const report = await helper
        .request()
        .post('/localbattery/test')
        .send({ ...device.node, password: '__PWRD__' })
        .expect(200);
      should(report.body).have.properties({ namespace: '${LB_TEST_NS}', detected: false });
      should(report.body.device.sn).equal(IDENTITY.serialNumber);
    });

    it('puts in no ${NAME} of an undeployed or other configuration: no name lookup, no connection', async function () {
      simulator = await startSimulator(IDENTITY);
      process.env.LB_TEST_HOST = 'battery-from-the-environment.invalid';
      process.env.LB_TEST_PORT = String(simulator.port);
      const device = deviceConfig(simulator, 'device1', { port: '${LB_TEST_PORT}' });
      await helper.load(nodes, [device.node], device.credentials);
      const lookups: string[] = [];
      const connections: string[] = [];
      const { lookup } = dns;
      // eslint-disable-next-line @typescript-eslint/unbound-method -- called below with the socket as `this`
      const { connect } = net.Socket.prototype;
      // Names looked up (the test's own requests go to an address, which some clients pass through lookup too).
      (dns as { lookup: unknown }).lookup = (host: string, ...rest: unknown[]) => {
        if (net.isIP(host) === 0) lookups.push(host);
        return (lookup as (...args: unknown[]) => unknown)(host, ...rest);
      };
      // Connections to the device's port (the test's own requests to the admin routes go elsewhere).
      net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
        const target = JSON.stringify(args[0]);
        if (target.includes(`"port":${simulator.port}`)) connections.push(target);
        return connect.apply(this, args as never);
      };
      try {
        const requests = [
          // Not deployed: nothing is put in (Node-RED would take the process environment).
          { host: '${LB_TEST_HOST}', port: simulator.port, password: 'x' },
          { host: '${HOME}', port: simulator.port, password: 'x' },
          // Deployed, but its host is not a variable, and its port variable goes only with its own host.
          { id: 'device1', host: '${LB_TEST_HOST}', port: '${LB_TEST_PORT}', password: '__PWRD__' },
          { id: 'device1', host: '127.0.0.2', port: '${LB_TEST_PORT}', password: '__PWRD__' },
        ];
        for (const body of requests) {
          const res = await answerShowsNone('/localbattery/test', body, [process.env.LB_TEST_HOST, process.env.HOME ?? 'no-home'], 400);
          should(res.body.error.code).equal('INVALID_VALUE', JSON.stringify(body));
        }
      } finally {
        (dns as { lookup: unknown }).lookup = lookup;
        net.Socket.prototype.connect = connect;
      }
      should(lookups).eql([]);
      should(connections).eql([]);
      should(simulator.stats.requests).equal(0);
    });
  });

  describe('one queue per device, a session per node', function () {
    it('runs the requests of every node of a device through one queue, across two configs too', async function () {
      simulator = await startSimulator(IDENTITY);
      const first = deviceConfig(simulator, 'device1');
      const second = deviceConfig(simulator, 'device2', { timeout: 3000 });
      await helper.load(nodes, [first.node, second.node, ...info('info1'), ...info('info2'), ...info('info3', 'device2')], {
        ...first.credentials,
        ...second.credentials,
      });
      const client: DeviceClient = helper.getNode('device1').client;
      should(client).be.an.instanceOf(DeviceClient);

      const outputs = ['info1-out', 'info2-out', 'info3-out'].map((id) => nextInput(helper.getNode(id)));
      for (const id of ['info1', 'info2', 'info3']) helper.getNode(id).receive({});
      const msgs = await Promise.all(outputs);
      for (const msg of msgs) should(msg.payload.sn).equal(IDENTITY.serialNumber);
      // One queue: three requests, one at a time, a second apart.
      should(simulator.stats.byOperation['Sys.GetConfig']).equal(3);
      should(simulator.stats.violations).eql([]);
      should(client.requestCount).equal(3);
    });

    it('gives one device one queue however its host is written, and warns each further configuration once', async function () {
      simulator = await startSimulator(IDENTITY);
      const spellings = ['localhost', '127.0.0.1', '::ffff:127.0.0.1', 'LOCALHOST.'];
      const configs = spellings.map((host, i) => deviceConfig(simulator, `device${i + 1}`, { host, name: `sim${i + 1}` }));
      const infos = configs.flatMap((_, i) => info(`info${i + 1}`, `device${i + 1}`));
      await helper.load(nodes, [...configs.map((c) => c.node), ...infos], Object.assign({}, ...configs.map((c) => c.credentials)));
      const ask = async () => {
        const outputs = configs.map((_, i) => nextInput(helper.getNode(`info${i + 1}-out`)));
        for (let i = 0; i < configs.length; i++) helper.getNode(`info${i + 1}`).receive({});
        for (const msg of await Promise.all(outputs)) should(msg.payload.sn).equal(IDENTITY.serialNumber);
      };
      await ask();
      await ask();
      // Eight requests, never two at once and never closer than the interval.
      should(simulator.stats.byOperation['Sys.GetConfig']).equal(8);
      should(simulator.stats.violations).eql([]);
      should(simulator.stats.minGapMs).be.aboveOrEqual(1000);
      const clients: DeviceClient[] = configs.map((_, i) => helper.getNode(`device${i + 1}`).client);
      for (const client of clients) should(client.deviceAddress).equal(`127.0.0.1:${simulator.port}`);
      should(new Set(clients.map((client) => client.deviceState)).size).equal(1);
      // The first configuration to reach the device is named to each later one, once.
      const warnings = configs.map((_, i) => {
        const node = helper.getNode(`device${i + 1}`) as unknown as { warn: { getCalls(): { thisValue: unknown; args: unknown[] }[] } };
        return node.warn
          .getCalls()
          .filter((call) => call.thisValue === node)
          .map((call) => String(call.args[0]));
      });
      should(warnings.filter((list) => list.length === 0)).have.length(1);
      for (const list of warnings.filter((l) => l.length > 0)) {
        should(list).have.length(1);
        should(list[0]).match(new RegExp(`same device \\(127\\.0\\.0\\.1:${simulator.port}\\)`));
      }
    });

    it('a node that closes (partial deploy) takes its waiting work along, and only its own', async function () {
      simulator = await startSimulator(IDENTITY);
      const device = deviceConfig(simulator, 'device1');
      await helper.load(nodes, [device.node, ...info('info1'), ...info('info2'), ...catcher], device.credentials);
      const config = helper.getNode('device1');
      const client: DeviceClient = config.client;
      const held = nextInput(helper.getNode('info2-out'));
      helper.getNode('info2').receive({});
      await until(() => simulator.stats.requests === 1, 2000, 'the first request');
      helper.getNode('info1').receive({});
      helper.getNode('info2').receive({});
      await until(() => client.queueSize === 2, 2000, 'two requests waiting');
      await helper.getNode('info1').close(true);
      should(client.queueSize).equal(1);
      await held;
      const second = nextInput(helper.getNode('info2-out'));
      should((await second).payload.sn).equal(IDENTITY.serialNumber);
      await sleep(1200);
      should(simulator.stats.byOperation['Sys.GetConfig']).equal(2);
      should(config.client).equal(client);
      should(simulator.stats.violations).eql([]);
    });
  });

  describe('connection status', function () {
    it('tells every user about a wrong or default password', async function () {
      simulator = await startSimulator({ password: 'not-the-one' });
      const device = deviceConfig(simulator);
      await helper.load(nodes, [device.node, ...info('info1'), ...info('info2'), ...catcher], device.credentials);
      const caught = nextInput(helper.getNode('caught'));
      helper.getNode('info1').receive({});
      should((await caught).error.code).equal('UNAUTHORIZED');
      const expected = { fill: 'red', shape: 'ring', text: text('localbattery-device.status.defaultPassword') };
      // info2 sent nothing and still learns it; info1 saw it before its own error status.
      should(lastStatus(helper.getNode('info2'))).eql(expected);
      should(statusesOf(helper.getNode('info1'))).containEql(expected);
    });

    it('tells every user when a password that worked stops working, and shows it to a node added later', async function () {
      simulator = await startSimulator();
      const device = deviceConfig(simulator);
      const flow = [device.node, ...info('info1'), ...info('info2'), ...catcher];
      await helper.load(nodes, flow, device.credentials);
      const ok = nextInput(helper.getNode('info1-out'));
      helper.getNode('info1').receive({});
      await ok;
      should(lastStatus(helper.getNode('info2'))).eql({ fill: 'green', shape: 'dot', text: text('localbattery-device.status.connected') });

      // Someone else changes the password.
      await sleep(1000);
      const other = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD });
      await other.changePassword('changed-else');
      other.close();
      await sleep(1000);

      const caught = nextInput(helper.getNode('caught'));
      helper.getNode('info1').receive({});
      should((await caught).error.code).equal('UNAUTHORIZED');
      const unauthorized = { fill: 'red', shape: 'ring', text: text('localbattery-device.status.unauthorized') };
      should(lastStatus(helper.getNode('info2'))).eql(unauthorized);

      // A node deployed later (config node unchanged) shows the known state at once.
      await redeploy([...flow, ...info('info3')], 'nodes', device.credentials);
      should(lastStatus(helper.getNode('info3'))).eql(unauthorized);
    });

    it('tells every user when the device is unreachable', async function () {
      simulator = await startSimulator();
      const device = deviceConfig(simulator);
      await helper.load(nodes, [device.node, ...info('info1'), ...info('info2'), ...catcher], device.credentials);
      simulator.setFault('offline');
      await simulator.ready();
      const caught = nextInput(helper.getNode('caught'));
      helper.getNode('info1').receive({});
      should((await caught).error.code).equal('UNREACHABLE');
      should(lastStatus(helper.getNode('info2'))).eql({ fill: 'red', shape: 'ring', text: text('localbattery-device.status.unreachable') });
    });

    it('marks users of an invalid config', async function () {
      simulator = await startSimulator();
      const device = deviceConfig(simulator, 'device1', { host: '' });
      await helper.load(nodes, [device.node, ...info('info1')], device.credentials);
      should(helper.getNode('device1').client).be.undefined();
      should(helper.getNode('device1').configError).match(/host/);
      should(lastStatus(helper.getNode('info1'))).eql({ fill: 'red', shape: 'ring', text: text('localbattery-device.status.invalid') });
    });

    it('takes its port, interval and time-out as decimal numbers only', async function () {
      simulator = await startSimulator();
      for (const [setting, value, field] of [
        ['port', '0x50', 'port'],
        ['minInterval', '0x3e8', 'minimum interval'],
        ['timeout', '0b11111010000', 'time-out'],
      ]) {
        const device = deviceConfig(simulator, 'device1', { [setting]: value });
        await helper.load(nodes, [device.node, ...info('info1')], device.credentials);
        should(helper.getNode('device1').client).be.undefined();
        should(helper.getNode('device1').configError).startWith(`Invalid ${field}: got "${value}"`);
        await helper.unload();
      }
    });
  });

  describe('admin routes', function () {
    it('are all behind RED.auth.needsPermission: read for the catalogue and the rules, write for the rest', async function () {
      simulator = await startSimulator();
      await helper.load(nodes, []);
      const routes = adminRoutes();
      should(routes.map((r) => `${r.method} ${r.path} ${r.stack[0].handle.permission}`).sort()).eql([
        'get /localbattery/catalogue localbattery-device.read',
        'get /localbattery/rules.js localbattery-device.read',
        'post /localbattery/discover localbattery-device.write',
        'post /localbattery/set-password localbattery-device.write',
        'post /localbattery/test localbattery-device.write',
      ]);
      // The permission check is the first handler, so a refused user reaches nothing.
      for (const route of routes) {
        const request = helper.request();
        const call = request[route.method](route.path)
          .set('x-test-deny', '1')
          .send({ host: '127.0.0.1', port: simulator.port, target: '127.0.0.1' });
        await call.expect(401);
      }
      should(simulator.stats.requests).equal(0);
      should(simulator.stats.udpQueries).equal(0);
    });

    it('GET /localbattery/catalogue returns the point catalogue', async function () {
      await helper.load(nodes, []);
      const res = await helper.request().get('/localbattery/catalogue').expect(200);
      should(res.body.read).have.length(READ_POINTS.length);
      should(res.body.write).have.length(WRITE_POINTS.length);
      should(res.body.read.map((p: { address: number }) => p.address)).eql(READ_POINTS.map((p) => p.address));
      should(res.body.write.map((p: { name: string }) => p.name)).eql(WRITE_POINTS.map((p) => p.name));
      for (const point of res.body.write) should(point.allowed).be.a.String().and.not.be.empty();
    });

    it("GET /localbattery/catalogue?lang= answers in the editor's language: German labels for de, English for others", async function () {
      await helper.load(nodes, []);
      const soc = async (query: string) =>
        ((await helper.request().get(`/localbattery/catalogue${query}`).expect(200)).body.read as { name: string }[]).find(
          (p) => p.name === 'batterySoc',
        );
      should(await soc('?lang=de')).containDeep({ label: 'Akku-Ladezustand (SOC) gesamt', category: 'Akku', address: 6002 });
      for (const query of ['', '?lang=en-US', '?lang=fr', '?lang[]=de']) {
        should(await soc(query)).containDeep({ label: 'Battery SOC total', category: 'Battery' });
      }
    });

    it("GET /localbattery/rules.js serves the runtime's rules built for the browser", async function () {
      await helper.load(nodes, []);
      const res = await helper
        .request()
        .get('/localbattery/rules.js')
        .expect('Content-Type', /javascript/)
        .expect(200);
      should(res.text).match(/window\.localBatteryRules = /);
      // Nothing of Node.js: every module it requires is one of the package's own, built into it.
      const required = [...res.text.matchAll(/require\(("[^"]*")\)/g)].map((match) => JSON.parse(match[1]) as string);
      should(required).containEql('./points/catalogue');
      for (const id of required) should(res.text).containEql(`${JSON.stringify(id)}: function (require, module, exports)`);
    });

    it('POST /localbattery/test answers with the device info, using the stored password for __PWRD__', async function () {
      simulator = await startSimulator(IDENTITY);
      const device = deviceConfig(simulator);
      await helper.load(nodes, [device.node], device.credentials);
      const { host, port, username, namespace, minInterval, timeout } = device.node;
      const res = await helper
        .request()
        .post('/localbattery/test')
        .send({ id: 'device1', host, port, username, namespace, minInterval, timeout, password: '__PWRD__' })
        .expect(200);
      should(res.body.device).have.properties({ sn: IDENTITY.serialNumber, type: IDENTITY.type, fw: IDENTITY.firmware });
      should(res.body).match({ auth: 'digest', namespace: 'Vendor', detected: false });
      // Same settings as the running config: the editor's test (device info, then the serial number) went through the flows' queue.
      should(helper.getNode('device1').client.requestCount).equal(2);
    });

    it("POST /localbattery/test reports a wrong password as 400 without echoing it, and never borrows another node's secret", async function () {
      simulator = await startSimulator();
      const device = deviceConfig(simulator);
      // A node of another type whose credential happens to be the device password.
      const other = { id: 'pw1', type: 'localbattery-password', device: 'device1', source: 'field', wires: [] };
      await helper.load(nodes, [device.node, other], { ...device.credentials, pw1: { password: PASSWORD } });
      const wrong = await helper
        .request()
        .post('/localbattery/test')
        .send({ host: '127.0.0.1', port: simulator.port, password: 'typo-pass-7' })
        .expect(400);
      should(wrong.body.error.code).equal('UNAUTHORIZED');
      should(JSON.stringify(wrong.body)).not.containEql('typo-pass-7');

      const borrowed = await helper
        .request()
        .post('/localbattery/test')
        .send({ id: 'pw1', host: '127.0.0.1', port: simulator.port, password: '__PWRD__' })
        .expect(400);
      should(borrowed.body.error.code).equal('UNAUTHORIZED');
      should(JSON.stringify(borrowed.body)).not.containEql(PASSWORD);
    });

    it('POST /localbattery/set-password sets the first password of a device with its default password', async function () {
      simulator = await startSimulator({ password: undefined, defaultPassword: 'factory-pw' });
      should(simulator.hasDefaultPassword).be.true();
      await helper.load(nodes, []);
      const res = await helper
        .request()
        .post('/localbattery/set-password')
        .send({ host: '127.0.0.1', port: simulator.port, username: 'opend', currentPassword: 'factory-pw', newPassword: 'first-own-pw' })
        .expect(200);
      should(res.body).eql({ result: true });
      should(simulator.hasDefaultPassword).be.false();
      should(simulator.password).equal('first-own-pw');
    });

    it('POST /localbattery/set-password answers a bad request with a clear 400 that holds no password', async function () {
      simulator = await startSimulator({ password: undefined, defaultPassword: 'factory-pw' });
      await helper.load(nodes, []);
      const base = { host: '127.0.0.1', port: simulator.port };
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ currentPassword: 'factory-pw', newPassword: 'seventeen-bytes-x' }, /new password.*17 bytes.*1 to 16 bytes/],
        [{ currentPassword: 'factory-pw', newPassword: '' }, /new password/],
        [{ currentPassword: 'factory-pw' }, /new password/],
        [{ currentPassword: 'factory-pw', newPassword: { text: 'good-new-pw' } }, /new password/],
        [{ newPassword: 'good-new-pw' }, /current password/],
        [{ host: '', currentPassword: 'factory-pw', newPassword: 'good-new-pw' }, /host/],
      ];
      for (const [body, message] of cases) {
        const res = await helper
          .request()
          .post('/localbattery/set-password')
          .send({ ...base, ...body })
          .expect(400);
        should(res.body.error.code).equal('INVALID_VALUE');
        should(res.body.error.message).match(message);
        for (const secret of ['factory-pw', 'seventeen-bytes-x', 'good-new-pw']) should(JSON.stringify(res.body)).not.containEql(secret);
      }
      should(simulator.stats.requests).equal(0);

      // A wrong current password reaches the device, which refuses.
      const refused = await helper
        .request()
        .post('/localbattery/set-password')
        .send({ ...base, currentPassword: 'wrong-current', newPassword: 'good-new-pw' })
        .expect(400);
      should(refused.body.error.code).equal('UNAUTHORIZED');
      should(JSON.stringify(refused.body)).not.containEql('wrong-current');
      should(simulator.hasDefaultPassword).be.true();
    });

    describe('POST /localbattery/discover', function () {
      onlyLoopbackUdp();

      it('finds the simulator at the target and port given', async function () {
        simulator = await startSimulator({ udpPort: 0, ...IDENTITY });
        await helper.load(nodes, []);
        const res = await helper
          .request()
          .post('/localbattery/discover')
          .send({ target: '127.0.0.1', port: simulator.udpPort, listenMs: 500 })
          .expect(200);
        should(res.body.devices.map((d: { sn: string; ip: string }) => [d.sn, d.ip])).eql([[IDENTITY.serialNumber, '127.0.0.1']]);
        should(res.body.warnings).be.an.Array();
        should(simulator.stats.udpQueries).equal(1);
      });

      it('answers an invalid port with 400', async function () {
        simulator = await startSimulator({ udpPort: 0 });
        await helper.load(nodes, []);
        const res = await helper.request().post('/localbattery/discover').send({ target: '127.0.0.1', port: 70000 }).expect(400);
        should(res.body.error.code).equal('INVALID_VALUE');
        should(simulator.stats.udpQueries).equal(0);
      });

      it('answers an unknown search method with 400, sending nothing', async function () {
        simulator = await startSimulator({ udpPort: 0 });
        await helper.load(nodes, []);
        const res = await helper.request().post('/localbattery/discover').send({ port: simulator.udpPort, method: 'dns' }).expect(400);
        should(res.body.error.code).equal('INVALID_VALUE');
        should(res.body.error.message).match(/discovery method/);
        should(simulator.stats.udpQueries).equal(0);
      });

      it('tells which search saw each device', async function () {
        simulator = await startSimulator({ udpPort: 0, ...IDENTITY });
        await helper.load(nodes, []);
        const res = await helper
          .request()
          .post('/localbattery/discover')
          .send({ target: '127.0.0.1', port: simulator.udpPort, listenMs: 500, method: 'udp' })
          .expect(200);
        should(res.body.devices.map((d: { sources: string[] }) => d.sources)).eql([['udp']]);
      });
    });
  });

  describe('redeploy while requests are in flight', function () {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

    beforeEach(function () {
      rejections.length = 0;
      process.on('unhandledRejection', onRejection);
    });

    afterEach(function () {
      process.off('unhandledRejection', onRejection);
    });

    /** Counts what the nodes do from now on, on the instances themselves (the helper's spies go with unload). */
    function watch(ids: string[]): { calls: string[] } {
      const record = { calls: [] as string[] };
      for (const id of ids) {
        const node = helper.getNode(id);
        for (const method of ['send', 'error', 'warn', 'status'] as const) {
          const original = (node[method] as (...args: unknown[]) => unknown).bind(node);
          node[method] = (...args: unknown[]) => {
            record.calls.push(`${id}.${method}`);
            return original(...args);
          };
        }
      }
      return record;
    }

    /** One request held by the device (started beforehand; `fault` decides its end), two more waiting in the queue. */
    async function busyFlow(
      fault: 'timeout' | 'slow' = 'timeout',
      neighbours: object[] = [],
    ): Promise<{
      client: DeviceClient;
      record: { calls: string[] };
      flow: any[];
      credentials: Record<string, unknown>;
    }> {
      simulator.setFault(fault, 1);
      const device = deviceConfig(simulator, 'device1', { timeout: 10000 });
      const flow = [device.node, ...info('info1'), ...info('info2'), ...catcher, ...neighbours];
      await helper.load(nodes, flow, device.credentials);
      const client: DeviceClient = helper.getNode('device1').client;
      helper.getNode('info1').receive({});
      helper.getNode('info2').receive({});
      helper.getNode('info1').receive({});
      await until(() => simulator.stats.requests === 1 && client.queueSize === 2, 2000, 'one request held, two waiting');
      return { client, record: watch(['info1', 'info2', 'info1-out', 'info2-out', 'caught']), flow, credentials: device.credentials };
    }

    it('stopping the flows: nothing happens after close, no rejection, no timer left', async function () {
      simulator = await startSimulator();
      const baseline = timers();
      const { client, record } = await busyFlow();
      should(timers()).be.above(baseline); // the time-out of the held request, the queue's wake-up
      await helper.unload();
      // With no client left the held request is cut after a short grace (a redeploy's new client would keep it).
      await until(() => timers() <= baseline, 4000, 'the held request cut, no timer left');
      should(client.queueSize).equal(0);
      should(record.calls).eql([]);
      should(rejections).eql([]);
      // Closed for good: nothing more goes out.
      should(simulator.stats.requests).equal(1);
      await client.getDeviceInfo().then(
        () => should.fail(null, null, 'a closed client answered'),
        (error: { code?: string }) => should(error.code).equal('CLOSED'),
      );
    });

    it('a full redeploy: the old nodes stay silent and the new ones work', async function () {
      simulator = await startSimulator({ slowDelayMs: 1500 });
      const { client, record, flow, credentials } = await busyFlow('slow');
      const renamed = flow.map((n) => (n.id === 'info1' ? { ...n, name: 'renamed' } : n));
      await redeploy(renamed, 'full', credentials);
      should(client.queueSize).equal(0);
      const fresh: DeviceClient = helper.getNode('device1').client;
      should(fresh).not.equal(client);

      const output = nextInput(helper.getNode('info1-out'));
      helper.getNode('info1').receive({});
      should((await output).payload.sn).be.a.String();
      await sleep(100);
      should(record.calls).eql([]);
      should(rejections).eql([]);
    });

    // The old and the new client share the device's line: the request in flight is not cut (the device would still
    // be busy with it), so the new one arrives after its answer, and the interval holds. A neighbour slow to close
    // keeps the line without a client for a while, as a busy host does.
    it('a full redeploy lets the request in flight finish: the next arrives after its answer, the 1 s interval kept', async function () {
      simulator = await startSimulator({ slowDelayMs: 1500 });
      const { flow, credentials } = await busyFlow('slow', [{ id: 'neighbour', type: 'slow-close' }]);
      await redeploy(flow, 'full', credentials);
      const output = nextInput(helper.getNode('info1-out'));
      helper.getNode('info1').receive({});
      await output;
      should(simulator.stats.violations).eql([]);
      should(simulator.stats.requests).equal(2);
      should(simulator.stats.minGapMs).be.aboveOrEqual(1500);
    });
  });
});
