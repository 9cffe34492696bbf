/**
 * The device configuration's power limit: the upper bound of every power point, in the client (nothing above it
 * is sent), in the write and control nodes, and in their editors.
 */
import should from 'should';
import controlNode = require('../nodes/localbattery-control');
import deviceNode = require('../nodes/localbattery-device');
import writeNode = require('../nodes/localbattery-write');
import { POWER_LIMIT, WRITE_POINTS, pointByName, type WritePoint } from '../src/catalogue';
import { DeviceClient } from '../src/client';
import type { DeviceSimulator } from '../src/simulator';
import { PASSWORD, deviceConfig, helper, startSimulator } from './support';
import { inEnglish, loadEditorScript, nextInput, text, until } from './node-support';

const LIMIT = 1000;
const powerPoints = WRITE_POINTS.filter((p) => p.powerLimited);
const controlPower = pointByName('controlPower') as WritePoint;

describe('power limit', function () {
  this.timeout(20000);
  let simulator: DeviceSimulator | undefined;

  afterEach(async () => {
    await simulator?.stop();
    simulator = undefined;
  });

  describe('client', () => {
    let client: DeviceClient | undefined;
    afterEach(() => client?.close());

    it('bounds every power point by the limit and sends nothing above it', async () => {
      simulator = await startSimulator();
      client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, powerLimit: LIMIT });
      powerPoints
        .map((p) => p.name)
        .should.containDeep(['controlPower', 'maxAcOutputPowerSetting', 'feedInPowerLimitSetting', 'inverterInputLimitSetting']);
      for (const point of powerPoints) {
        await client
          .write(point, LIMIT + 1)
          .should.be.rejectedWith(new RegExp(`${point.name}.*${LIMIT + 1}.*from ${point.min} to ${LIMIT} W`));
      }
      await client.setRealTime(1, LIMIT + 1, 90).should.be.rejectedWith({ code: 'INVALID_VALUE' });
      should(simulator.stats.requests).equal(0);
      await client.write('feedInPowerLimitSetting', LIMIT);
      should(simulator.value(pointByName('feedInPowerLimit')!.address)).equal(LIMIT);
    });

    it("lets a larger limit through to the device, and keeps the specification's bound without one", async () => {
      simulator = await startSimulator();
      client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, powerLimit: 3000 });
      // The client lets it through; the simulated 2000-class device itself refuses more than 2400 W.
      const outcome = await client.write('maxAcOutputPowerSetting', 2800).then(
        () => 'written',
        (e) => e.code,
      );
      should(outcome).equal('REFUSED');
      should(simulator.stats.requests).equal(1);
      client.close();
      client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD });
      should(client.limits.powerLimit).equal(POWER_LIMIT.default);
      await client.write('maxAcOutputPowerSetting', POWER_LIMIT.default + 1).should.be.rejectedWith({ code: 'INVALID_VALUE' });
    });

    it('refuses a limit outside its range, naming the field and the range', () => {
      for (const bad of [POWER_LIMIT.min - 1, POWER_LIMIT.max + 1, 1500.5]) {
        (() => new DeviceClient({ host: '127.0.0.1', powerLimit: bad })).should.throw(
          new RegExp(`power limit.*${bad}.*${POWER_LIMIT.min} to ${POWER_LIMIT.max} W`),
        );
      }
    });
  });

  describe('nodes', () => {
    const nodes = [inEnglish(deviceNode), inEnglish(writeNode), inEnglish(controlNode)];
    before(() => helper.startServer());
    after(() => helper.stopServer());
    afterEach(() => helper.unload());

    async function load(): Promise<void> {
      simulator = await startSimulator();
      const device = deviceConfig(simulator, 'device1', { powerLimit: String(LIMIT) });
      await helper.load(
        nodes,
        [
          { id: 'tab1', type: 'tab' },
          { ...device.node, z: 'tab1' },
          {
            id: 'write1',
            z: 'tab1',
            type: 'localbattery-write',
            device: 'device1',
            point: 'feedInPowerLimitSetting',
            value: 'payload',
            valueType: 'msg',
            wires: [['out']],
          },
          {
            id: 'control1',
            z: 'tab1',
            type: 'localbattery-control',
            device: 'device1',
            power: 800,
            chargeSoc: 100,
            dischargeSoc: 10,
            switchMode: true,
            modeCheck: 600,
            repeat: 0,
            wires: [['out']],
          },
          { id: 'out', z: 'tab1', type: 'helper' },
          { id: 'catch1', z: 'tab1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
          { id: 'caught', z: 'tab1', type: 'helper' },
        ],
        device.credentials,
      );
    }

    it('the write node refuses a value above the limit with the point and range, and writes one within it', async () => {
      await load();
      const caught = nextInput(helper.getNode('caught'));
      helper.getNode('write1').receive({ payload: LIMIT + 100 });
      should((await caught).error.message).match(new RegExp(`feedInPowerLimitSetting.*${LIMIT + 100}.*50 to ${LIMIT} W`));
      should(simulator!.stats.requests).equal(0);
      const out = nextInput(helper.getNode('out'));
      helper.getNode('write1').receive({ payload: LIMIT });
      should((await out).value).equal(LIMIT);
    });

    it('the control node refuses a setpoint above the limit and sends one within it', async () => {
      await load();
      const caught = nextInput(helper.getNode('caught'));
      helper.getNode('control1').receive({ payload: -(LIMIT + 1) });
      should((await caught).error.message).match(new RegExp(`-${LIMIT} to ${LIMIT} W`));
      should(simulator!.stats.requests).equal(0);
      const out = nextInput(helper.getNode('out'));
      helper.getNode('control1').receive({ payload: -LIMIT });
      should((await out).payload).have.properties({ state: 'charge', power: LIMIT });
      await until(() => simulator!.control.power === LIMIT);
    });
  });

  describe('editors', () => {
    const device = { id: 'dev', type: 'localbattery-device', powerLimit: String(LIMIT) };
    const red = { nodes: { node: (id: string) => (id === device.id ? device : null) } };

    it("the write editor takes the device's limit as the upper bound of power points", async () => {
      const editor = loadEditorScript('localbattery-write');
      const value = (node: Record<string, unknown>, v: string) => editor.definition.defaults.value.validate.call(node, v, {});
      value({ point: 'feedInPowerLimitSetting', valueType: 'num' }, '1');
      editor.finishLoad();
      await until(() => editor.revalidated > 0, 1000, 'catalogue');
      const node = { point: 'feedInPowerLimitSetting', valueType: 'num', device: 'dev' };
      // The editor finds the device configuration with RED.nodes.node.
      const withDevice = loadEditorScript('localbattery-write', red);
      const check = (v: string) => withDevice.definition.defaults.value.validate.call(node, v, {});
      // Before the catalogue has arrived only the number form counts.
      should(check(String(LIMIT + 1))).be.true();
      withDevice.finishLoad();
      await until(() => withDevice.revalidated > 0, 1000, 'catalogue');
      should(check(String(LIMIT))).be.true();
      should(check(String(LIMIT + 1))).equal(
        text('localbattery-write.validation.range', {
          value: LIMIT + 1,
          point: 'feedInPowerLimitSetting',
          allowed: `an integer from 50 to ${LIMIT} W`,
        }),
      );
      // Without a device limit the catalogue's bound holds.
      should(value({ point: 'feedInPowerLimitSetting', valueType: 'num' }, String(LIMIT + 1))).be.true();
    });

    it("the control editor takes the device's limit as the upper bound of its power setting", async () => {
      const editor = loadEditorScript('localbattery-control', red);
      const power = (v: string, node: Record<string, unknown> = { device: 'dev' }) =>
        editor.definition.defaults.power.validate.call(node, v, {});
      should(power(String(LIMIT + 1))).be.true();
      editor.finishLoad();
      await until(() => editor.revalidated > 0, 1000, 'catalogue');
      should(power(String(LIMIT))).be.true();
      should(power(String(LIMIT + 1))).equal(text('localbattery-control.validation.power', { min: controlPower.min, max: LIMIT }));
      should(power(String(LIMIT + 1), {})).be.true();
    });

    it("the device editor checks the limit against the catalogue's range", async () => {
      const editor = loadEditorScript('localbattery-device');
      const limit = (v: string) => editor.definition.defaults.powerLimit.validate.call(editor.definition, v, {});
      should(limit('')).be.true();
      editor.finishLoad();
      await until(() => editor.revalidated > 0, 1000, 'catalogue');
      should(limit(String(POWER_LIMIT.max))).be.true();
      should(limit(String(POWER_LIMIT.min - 1))).equal(
        text('localbattery-device.validation.powerLimit', { min: POWER_LIMIT.min, max: POWER_LIMIT.max }),
      );
      should(limit('2400.5')).be.a.String();
    });
  });
});
