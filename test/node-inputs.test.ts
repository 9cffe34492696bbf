/**
 * Inputs described once (src/editor/inputs.ts): the order setting → msg override → default, one error form for every
 * node (field, short preview, allowed range), and every setting checked at deploy, in real Node-RED.
 */
import should from 'should';
import deviceNode = require('../nodes/localbattery-device');
import discoverNode = require('../nodes/localbattery-discover');
import infoNode = require('../nodes/localbattery-info');
import passwordNode = require('../nodes/localbattery-password');
import readNode = require('../nodes/localbattery-read');
import writeNode = require('../nodes/localbattery-write');
import { ValidationError } from '../src/errors';
import { NUMBER_RULES, describeInputs, flag, numberIn, oneOf } from '../src/editor/inputs';
import type { DeviceSimulator } from '../src/simulator';
import { deviceConfig, helper, startSimulator } from './support';
import { errorsOf, inEnglish, lastStatus, nextInput, onlyLoopbackUdp, sleep, text } from './node-support';

const nodes = [deviceNode, discoverNode, infoNode, passwordNode, readNode, writeNode].map((module) => inEnglish(module as never));

const catcher = [
  { id: 'catch1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
  { id: 'caught', type: 'helper' },
];

/** The next error a Catch node gets. */
async function caughtError(node: any, msg: Record<string, unknown>): Promise<{ message: string; code?: string }> {
  const caught = nextInput(helper.getNode('caught'));
  node.receive(msg);
  return ((await caught) as { error: { message: string; code?: string } }).error;
}

describe('inputs described once', function () {
  describe('the declaration', function () {
    const inputs = describeInputs({
      listen: { setting: 'listenTime', label: 'listen time', msg: 'listenTime', fallback: 3, parse: numberIn(NUMBER_RULES.listenTime) },
      force: { msg: 'force', parse: flag },
      mode: { setting: 'mode', fallback: 'a', parse: oneOf(['a', 'b'] as const) },
    });

    it('takes the setting, then the msg override, then the default', function () {
      should(inputs.forMessage({}, inputs.deploy({}))).eql({ listen: 3, mode: 'a' });
      should(inputs.forMessage({}, inputs.deploy({ listenTime: '10', mode: 'b' }))).eql({ listen: 10, mode: 'b' });
      should(inputs.forMessage({ listenTime: 0.5, force: true }, inputs.deploy({ listenTime: '10' }))).eql({
        listen: 0.5,
        force: true,
        mode: 'a',
      });
    });

    it('names the field, a short preview and the allowed range in one error form', function () {
      const deployed = inputs.deploy({ listenTime: '1e400', mode: 'c' });
      should(deployed.error).be.instanceOf(ValidationError);
      should(deployed.error!.message).equal('Invalid listen time: got "1e400", allowed is a number from 0.5 to 60 seconds');
      should(deployed.errors.get('mode')!.message).equal('Invalid mode: got "c", allowed is one of "a", "b"');
      // A bad setting fails each message, unless the message brings its own value.
      should(() => inputs.forMessage({}, deployed)).throw(/Invalid listen time/);
      should(() => inputs.forMessage({ listenTime: 2 }, deployed)).throw(/Invalid mode/);
      const fine = inputs.deploy({});
      should(() => inputs.forMessage({ listenTime: '0x2' }, fine)).throw(
        'Invalid msg.listenTime: got "0x2", allowed is a number from 0.5 to 60 seconds',
      );
      should(() => inputs.forMessage({ force: 'true' }, fine)).throw('Invalid msg.force: got "true", allowed is true or false');
      should(() => inputs.forMessage({ listenTime: 'x'.repeat(1000000) }, fine)).throw(
        /^Invalid msg\.listenTime: got "x{60}"… \(1000000 characters\), allowed/,
      );
    });
  });

  describe('in Node-RED', function () {
    let simulator: DeviceSimulator;
    onlyLoopbackUdp();

    before(async function () {
      await helper.startServer();
    });

    after(async function () {
      await helper.stopServer();
    });

    beforeEach(async function () {
      simulator = await startSimulator({ udpPort: 0 });
    });

    afterEach(async function () {
      await helper.unload();
      await simulator.stop();
    });

    it('checks the device settings at deploy with the bounds the editor has', async function () {
      const configs = [
        deviceConfig(simulator, 'slow', { minInterval: 4000000 }),
        deviceConfig(simulator, 'endless', { timeout: '1e400' }),
        deviceConfig(simulator, 'hex', { port: '0x50' }),
      ];
      await helper.load(
        nodes,
        [
          ...configs.map((config) => config.node),
          ...configs.map((config) => ({ id: `info-${config.node.id}`, type: 'localbattery-info', device: config.node.id, wires: [[]] })),
          ...catcher,
        ],
        Object.assign({}, ...configs.map((config) => config.credentials)),
      );
      should(errorsOf(helper.getNode('slow'))).eql([
        'Invalid minimum interval: got 4000000, allowed is an integer from 1000 to 3600000 ms',
      ]);
      should(errorsOf(helper.getNode('endless'))).eql(['Invalid time-out: got "1e400", allowed is an integer from 100 to 120000 ms']);
      should(errorsOf(helper.getNode('hex'))).eql(['Invalid port: got "0x50", allowed is an integer from 1 to 65535']);
      for (const config of configs) {
        should(lastStatus(helper.getNode(`info-${config.node.id}`))).eql({
          fill: 'red',
          shape: 'ring',
          text: text('localbattery-device.status.invalid'),
        });
      }
      const error = await caughtError(helper.getNode('info-slow'), {});
      should(error.message).match(/Invalid minimum interval/);
      should(simulator.stats.requests).equal(0);
    });

    it('read: msg.points stands in for the setting; a bad one fails in the common form', async function () {
      const device = deviceConfig(simulator);
      await helper.load(
        nodes,
        [
          device.node,
          {
            id: 'read1',
            type: 'localbattery-read',
            device: 'device1',
            points: ['batterySoc'],
            interval: '',
            output: 'object',
            wires: [['out']],
          },
          { id: 'out', type: 'helper' },
          ...catcher,
        ],
        device.credentials,
      );
      const read = helper.getNode('read1');
      let out = nextInput(helper.getNode('out'));
      read.receive({});
      should(Object.keys((await out).payload)).eql(['batterySoc']);
      out = nextInput(helper.getNode('out'));
      read.receive({ points: 'batteryPower, 1501' });
      should(Object.keys((await out).payload).sort()).eql(['batteryPower', 'pvPower']);
      const error = await caughtError(read, { points: 7 });
      should(error).have.properties({
        message:
          'ValidationError: Invalid msg.points: got 7, allowed is an array of read point names or addresses, or a comma-separated string of them',
        code: 'INVALID_VALUE',
      });
    });

    it('write: msg.point stands in for the setting, even a bad one; a bad msg.point fails in the common form', async function () {
      const device = deviceConfig(simulator);
      await helper.load(
        nodes,
        [
          device.node,
          {
            id: 'write1',
            type: 'localbattery-write',
            device: 'device1',
            point: 'noSuchPoint',
            value: 'payload',
            valueType: 'msg',
            wires: [['out']],
          },
          { id: 'out', type: 'helper' },
          ...catcher,
        ],
        device.credentials,
      );
      const write = helper.getNode('write1');
      // Checked at deploy, before any message.
      should(errorsOf(write)[0]).match(/^Invalid point: got "noSuchPoint", allowed is a write point: /);
      should(lastStatus(write)).eql({ fill: 'red', shape: 'ring', text: text('localbattery-write.status.invalidPoint') });
      should(await caughtError(write, { payload: 1 })).have.properties({ code: 'INVALID_VALUE' });
      const out = nextInput(helper.getNode('out'));
      write.receive({ point: 'backupSocSetting', payload: 15 });
      should((await out).point).equal('backupSocSetting');
      const error = await caughtError(write, { point: { name: 'x'.repeat(500) }, payload: 1 });
      should(error.message).match(
        /^ValidationError: Invalid msg\.point: got \{"name":"x{51}… \(511 characters\), allowed is a write point: /,
      );
    });

    it('discover: every setting is checked at deploy; msg.listenTime takes decimal numbers only', async function () {
      await helper.load(nodes, [
        {
          id: 'disc1',
          type: 'localbattery-discover',
          target: '127.0.0.1',
          listenTime: '1e400',
          port: simulator.udpPort,
          localPort: 0,
          wires: [[], []],
        },
        {
          id: 'disc2',
          type: 'localbattery-discover',
          target: '127.0.0.1',
          listenTime: 0.5,
          port: simulator.udpPort,
          localPort: 0,
          wires: [['all'], []],
        },
        { id: 'all', type: 'helper' },
        ...catcher,
      ]);
      should(errorsOf(helper.getNode('disc1'))).eql(['Invalid listen time: got "1e400", allowed is a number from 0.5 to 60 seconds']);
      should(lastStatus(helper.getNode('disc1'))).eql({ fill: 'red', shape: 'ring', text: text('localbattery-discover.status.invalid') });
      const disc = helper.getNode('disc2');
      const error = await caughtError(disc, { listenTime: '0x2' });
      should(error.message).endWith('Invalid msg.listenTime: got "0x2", allowed is a number from 0.5 to 60 seconds');
      const all = nextInput(helper.getNode('all'));
      const started = Date.now();
      disc.receive({ listenTime: '1.5' });
      should((await all).payload).have.length(1);
      should(Date.now() - started).be.aboveOrEqual(1400);
    });

    it('password: an unknown password source is refused at deploy, and msg.payload never travels on', async function () {
      const device = deviceConfig(simulator, 'device1', { auth: 'digest' });
      await helper.load(
        nodes,
        [
          device.node,
          { id: 'pw1', type: 'localbattery-password', device: 'device1', source: 'clipboard', wires: [['out']] },
          { id: 'out', type: 'helper' },
          ...catcher,
        ],
        { ...device.credentials, pw1: { password: 'new-secret-2' } },
      );
      const password = helper.getNode('pw1');
      should(errorsOf(password)).eql(['Invalid source: got "clipboard", allowed is one of "field", "payload"']);
      should(lastStatus(password)).eql({ fill: 'red', shape: 'ring', text: text('localbattery-password.status.invalid') });
      const caught = nextInput(helper.getNode('caught'));
      password.receive({ payload: 'new-secret-3' });
      const msg = (await caught) as { payload?: unknown; error: { message: string } };
      should(msg.error.message).match(/Invalid source/);
      should(msg).not.have.property('payload');
      await sleep(200);
      should(simulator.stats.requests).equal(0);
    });
  });
});
