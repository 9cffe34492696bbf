/**
 * The device configuration's charge and discharge limits: the upper bounds of the power points of each direction, in
 * the client (nothing above them is sent), in the write and control nodes, in their editors, and what Test connection
 * offers from the device's own points 114 and 115.
 */
import should from 'should';
import controlNode = require('../nodes/localbattery-control');
import deviceNode = require('../nodes/localbattery-device');
import writeNode = require('../nodes/localbattery-write');
import { MODEL_CLASSES, POWER_LIMIT, WRITE_POINTS, pointByName, type WritePoint } from '../src/points/catalogue';
import { DeviceClient } from '../src/device/client';
import type { DeviceSimulator } from '../src/simulator';
import { PASSWORD, deviceConfig, helper, startSimulator } from './support';
import { inEnglish, loadEditorScript, nextInput, text, until } from './node-support';

const LIMIT = 1000;
const LIMITS = { chargeLimit: LIMIT, dischargeLimit: LIMIT };
const powerPoints = WRITE_POINTS.filter((p) => p.powerLimited);
const controlPower = pointByName('controlPower') as WritePoint;

describe('charge and discharge limits', function () {
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
      client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, ...LIMITS });
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
      client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, chargeLimit: 3000, dischargeLimit: 3000 });
      // The client lets it through; the simulated 2000-class device itself refuses more than 2400 W.
      const outcome = await client.write('maxAcOutputPowerSetting', 2800).then(
        () => 'written',
        (e) => e.code,
      );
      should(outcome).equal('REFUSED');
      should(simulator.stats.requests).equal(1);
      client.close();
      client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD });
      should(client.limits).eql({ chargeLimit: POWER_LIMIT.default, dischargeLimit: POWER_LIMIT.default });
      await client.write('maxAcOutputPowerSetting', POWER_LIMIT.default + 1).should.be.rejectedWith({ code: 'INVALID_VALUE' });
    });

    it('refuses a limit outside its range, naming the field and the range', () => {
      for (const bad of [POWER_LIMIT.min - 1, POWER_LIMIT.max + 1, 1500.5]) {
        (() => new DeviceClient({ host: '127.0.0.1', chargeLimit: bad })).should.throw(
          new RegExp(`charge limit.*${bad}.*${POWER_LIMIT.min} to ${POWER_LIMIT.max} W`),
        );
        (() => new DeviceClient({ host: '127.0.0.1', dischargeLimit: bad })).should.throw(new RegExp(`discharge limit.*${bad}`));
      }
    });

    it('refuses a charge above the charge limit and a discharge above the discharge limit; power alone takes the larger', async () => {
      simulator = await startSimulator({ model: '1600' });
      client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, chargeLimit: 1200, dischargeLimit: 800 });
      await client.setRealTime(1, 1201, 90).should.be.rejectedWith(/controlPower.*1201.*50 to 1200 W/);
      await client.setRealTime(2, 801, 10).should.be.rejectedWith(/controlPower.*801.*50 to 800 W/);
      await client.write('controlPower', 1201).should.be.rejectedWith(/50 to 1200 W/);
      await client.write('maxAcOutputPowerSetting', 801).should.be.rejectedWith(/50 to 800 W/);
      should(simulator.stats.requests).equal(0);
      await client.write('workingModeSetting', 4);
      await client.setRealTime(1, 1200, 90);
      should(simulator.control).containEql({ state: 1, power: 1200 });
      await client.setRealTime(2, 800, 10);
      should(simulator.control).containEql({ state: 2, power: 800 });
    });

    it("Test connection reads the device's own limits (114 and 115) in the same request as the serial number", async () => {
      for (const [model, reported] of [
        ['1600', { chargeLimit: 1200, dischargeLimit: 800 }],
        ['2000', { chargeLimit: 2400, dischargeLimit: 2400 }],
      ] as const) {
        simulator = await startSimulator({ model });
        client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, namespace: 'Vendor' });
        const report = await client.testConnection();
        should(report.reported).eql(reported);
        // Sys.GetConfig and one GetData.
        should(simulator.stats.requests).equal(2);
        client.close();
        await simulator.stop();
        simulator = undefined;
      }
    });
    it('Test connection tells the model class from the meter point the device serves, with what the class takes', async () => {
      for (const model of ['1600', '2000'] as const) {
        // Without 114 and 115 the class is all there is to offer.
        simulator = await startSimulator({ model, unsupported: [114, 115] });
        client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, namespace: 'Vendor' });
        const report = await client.testConnection();
        should(report.reported).eql({});
        should(report.model).eql({
          modelClass: model,
          label: MODEL_CLASSES[model].label,
          chargeLimit: MODEL_CLASSES[model].maxChargePower,
          dischargeLimit: MODEL_CLASSES[model].maxDischargePower,
        });
        should(simulator.stats.requests).equal(2);
        client.close();
        await simulator.stop();
        simulator = undefined;
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
      const device = deviceConfig(simulator, 'device1', { chargeLimit: String(LIMIT), dischargeLimit: String(LIMIT) });
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

    it('a configuration of an earlier version keeps its single power limit for both; each limit set overrides it', async () => {
      simulator = await startSimulator();
      const old = deviceConfig(simulator, 'old', { powerLimit: '1000' });
      const mixed = deviceConfig(simulator, 'mixed', { powerLimit: '1000', dischargeLimit: '800' });
      await helper.load(nodes, [old.node, mixed.node], { ...old.credentials, ...mixed.credentials });
      should(helper.getNode('old').client.limits).eql({ chargeLimit: 1000, dischargeLimit: 1000 });
      should(helper.getNode('mixed').client.limits).eql({ chargeLimit: 1000, dischargeLimit: 800 });
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
    // A 1600-class device, and one whose charge limit comes from the environment at run time.
    const devices: Record<string, Record<string, unknown>> = {
      dev: { id: 'dev', type: 'localbattery-device', chargeLimit: '1200', dischargeLimit: '800' },
      env: { id: 'env', type: 'localbattery-device', chargeLimit: '${CHARGE_LIMIT}', dischargeLimit: '' },
    };
    const red = { nodes: { node: (id: string) => devices[id] ?? null } };

    it("the write editor bounds each power point by the device's limit of its direction", async () => {
      const editor = loadEditorScript('localbattery-write', red);
      const value = (point: string, v: string, device = 'dev') =>
        editor.definition.defaults.value.validate.call({ point, valueType: 'num', device }, v, {});
      // Before the rules have arrived only the number form counts.
      should(value('feedInPowerLimitSetting', '801')).be.true();
      editor.finishLoad();
      await until(() => editor.revalidated > 0, 1000, 'catalogue');
      should(value('feedInPowerLimitSetting', '800')).be.true();
      should(value('feedInPowerLimitSetting', '801')).equal(
        text('localbattery-write.validation.range', {
          value: 801,
          point: 'feedInPowerLimitSetting',
          allowed: 'an integer from 50 to 800 W',
        }),
      );
      should(value('inverterInputLimitSetting', '1200')).be.true();
      should(value('inverterInputLimitSetting', '1201')).be.a.String();
      should(value('controlPower', '1200')).be.true();
      // A limit known only at run time is not taken for the specification's 2400 W.
      should(value('inverterInputLimitSetting', '3000', 'env')).be.true();
      should(value('feedInPowerLimitSetting', '2401', 'env')).be.a.String();
      // Without a device the catalogue's bound holds.
      should(value('feedInPowerLimitSetting', '2400', '')).be.true();
      should(value('feedInPowerLimitSetting', '2401', '')).be.a.String();
    });

    it("the control editor bounds its power setting by the device's larger limit", async () => {
      const editor = loadEditorScript('localbattery-control', red);
      const power = (v: string, node: Record<string, unknown> = { device: 'dev' }) =>
        editor.definition.defaults.power.validate.call(node, v, {});
      should(power('1201')).be.true();
      editor.finishLoad();
      await until(() => editor.revalidated > 0, 1000, 'catalogue');
      should(power('1200')).be.true();
      should(power('1201')).equal(text('localbattery-control.validation.power', { min: controlPower.min, max: 1200 }));
      should(power('3000', { device: 'env' })).be.true();
      should(power('2401', {})).be.a.String();
    });

    it("the device editor checks both limits (and the earlier single one) against the catalogue's range", async () => {
      const editor = loadEditorScript('localbattery-device');
      const limit = (name: string, v: string) => editor.definition.defaults[name].validate.call(editor.definition, v, {});
      should(limit('chargeLimit', '')).be.true();
      editor.finishLoad();
      await until(() => editor.revalidated > 0, 1000, 'catalogue');
      for (const name of ['chargeLimit', 'dischargeLimit', 'powerLimit']) {
        should(limit(name, '')).be.true();
        should(limit(name, '${LIMIT}')).be.true();
        should(limit(name, String(POWER_LIMIT.max))).be.true();
        should(limit(name, String(POWER_LIMIT.min - 1))).equal(
          text('localbattery-device.validation.powerLimit', { min: POWER_LIMIT.min, max: POWER_LIMIT.max }),
        );
        should(limit(name, '2400.5')).be.a.String();
      }
    });
  });
});
