/** The device info node against the simulator. */
import should from 'should';
import deviceNode = require('../nodes/localbattery-device');
import infoNode = require('../nodes/localbattery-info');
import type { DeviceSimulator } from '../src/simulator';
import { deviceConfig, helper, startSimulator } from './support';
import { inEnglish, lastStatus, nextInput, statusesOf, text } from './node-support';

const IDENTITY = { serialNumber: 'SIMINFO000000042', type: 'SIM-2400', firmware: 'V9.8.7_TEST_00000001' };

const nodes = [inEnglish(deviceNode), inEnglish(infoNode)];

function flow(simulator: DeviceSimulator, extra: Record<string, unknown> = {}) {
  const device = deviceConfig(simulator, 'device1', extra);
  return {
    flow: [
      device.node as Record<string, unknown>,
      { id: 'info1', type: 'localbattery-info', device: 'device1', wires: [['out']] },
      { id: 'out', type: 'helper' },
      { id: 'catch1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
      { id: 'caught', type: 'helper' },
    ],
    credentials: device.credentials,
  };
}

describe('localbattery-info node', function () {
  let simulator: DeviceSimulator;
  const originalTz = process.env.TZ;

  afterEach(async function () {
    process.env.TZ = originalTz;
    if (originalTz === undefined) delete process.env.TZ;
    await helper.unload();
    await simulator?.stop();
  });

  it('outputs the device object with date, utcOffset and uptime, reusing the msg', async function () {
    // A zone with a half-hour offset shows that utcOffset is measured, not assumed.
    process.env.TZ = 'Asia/Kolkata';
    simulator = await startSimulator(IDENTITY);
    const { flow: nodesFlow, credentials } = flow(simulator);
    await helper.load(nodes, nodesFlow, credentials);
    const info = helper.getNode('info1');
    const output = nextInput(helper.getNode('out'));
    info.receive({ payload: 'go', topic: 'keep me' });
    const msg = await output;

    should(msg.topic).equal('keep me');
    const p = msg.payload;
    should(p).have.properties({ type: IDENTITY.type, sn: IDENTITY.serialNumber, fw: IDENTITY.firmware });
    should(p.hostname).be.a.String();
    // The maker's shape: twelve hex digits; the node adds the usual colon form.
    should(p.mac).match(/^[0-9A-F]{12}$/);
    should(p.macAddress).equal(p.mac.toLowerCase().match(/../g).join(':'));
    should(p.time).match(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    should(p.time_stamp).be.a.Number();
    should(p.run_time).be.a.Number().and.not.below(0);
    should(p.timezone).equal(330); // minutes, as the maker's example
    should(p.date).equal(new Date(p.time_stamp * 1000).toISOString());
    should(Math.abs(Date.parse(p.date) - Date.now())).be.below(5000);
    should(p.utcOffset).equal(330);
    should(p.uptime).equal(`${p.run_time}s`);
    should(p).have.properties({ serial: IDENTITY.serialNumber, serialSource: 'sn' });
    should(simulator.stats.byOperation['Sys.GetConfig']).equal(1);
    // With a serial in Sys.GetConfig, point 0 is not read.
    should(simulator.stats.requests).equal(1);

    // The config node reports the connection to every user, then the node shows what it got.
    should(statusesOf(info)).eql([
      { fill: 'blue', shape: 'ring', text: text('localbattery-info.status.requesting') },
      { fill: 'green', shape: 'dot', text: text('localbattery-device.status.connected') },
      { fill: 'green', shape: 'dot', text: `${IDENTITY.type} · ${IDENTITY.firmware}` },
    ]);
  });

  it("takes the maker's example shape: empty sn and hostname, a firmware with a space, a 1600-class device", async function () {
    process.env.TZ = 'Asia/Shanghai';
    const firmware = 'T1.4.06_ROOD. 072_M4801_0000002C';
    simulator = await startSimulator({ blankIdentity: true, model: '1600', type: 'CMS-BK1600', firmware });
    const { flow: nodesFlow, credentials } = flow(simulator);
    await helper.load(nodes, nodesFlow, credentials);
    const info = helper.getNode('info1');
    const output = nextInput(helper.getNode('out'));
    let errors = 0;
    helper.getNode('caught').on('input', () => errors++);
    info.receive({ payload: true });
    const p = (await output).payload;

    should(p).have.properties({ sn: '', hostname: '', type: 'CMS-BK1600', fw: firmware, timezone: 480, utcOffset: 480 });
    should(p.localTime).match(/\+08:00$/);
    should(p.macAddress).match(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
    // The identifier comes from point 0 instead, so topics and ids never have an empty level.
    should(p).have.properties({ serial: String(simulator.value(0)), serialSource: 'point0' });
    should(p.serial).not.be.empty();
    should(errors).equal(0);
    should(lastStatus(info)).eql({ fill: 'green', shape: 'dot', text: `CMS-BK1600 · ${firmware}` });
  });

  it('takes the MAC as the identifier when sn is empty and point 0 is not served', async function () {
    simulator = await startSimulator({ blankIdentity: true, unsupported: [0] });
    const { flow: nodesFlow, credentials } = flow(simulator);
    await helper.load(nodes, nodesFlow, credentials);
    const output = nextInput(helper.getNode('out'));
    helper.getNode('info1').receive({});
    const p = (await output).payload;
    should(p.sn).equal('');
    should(p).have.properties({ serial: p.mac.toUpperCase(), serialSource: 'mac' });
    should(p.serial).match(/^[0-9A-F]{12}$/);
  });

  it('sends a wrong password to Catch with the error code, and shows it', async function () {
    simulator = await startSimulator({ password: 'another-secret' });
    const { flow: nodesFlow, credentials } = flow(simulator);
    await helper.load(nodes, nodesFlow, credentials);
    const info = helper.getNode('info1');
    const caught = nextInput(helper.getNode('caught'));
    let outputs = 0;
    helper.getNode('out').on('input', () => outputs++);
    info.receive({ payload: 1 });
    const msg = await caught;

    should(msg.error.code).equal('UNAUTHORIZED');
    should(msg.error.source.id).equal('info1');
    should(msg.error.message).match(/401/);
    should(outputs).equal(0);
    should(lastStatus(info)).eql({ fill: 'red', shape: 'ring', text: 'unauthorized' });
    // The config node told this user first, with the more precise text.
    should(statusesOf(info).map((s) => s.text)).containEql(text('localbattery-device.status.defaultPassword'));
  });

  it('reports an unreachable device to Catch', async function () {
    simulator = await startSimulator();
    const { flow: nodesFlow, credentials } = flow(simulator);
    await simulator.stop();
    await helper.load(nodes, nodesFlow, credentials);
    const caught = nextInput(helper.getNode('caught'));
    helper.getNode('info1').receive({});
    const msg = await caught;
    should(msg.error.code).equal('UNREACHABLE');
    should(lastStatus(helper.getNode('info1'))).eql({ fill: 'red', shape: 'ring', text: 'unreachable' });
  });

  it('reports a missing device configuration at start and on input', async function () {
    simulator = await startSimulator();
    const { flow: nodesFlow, credentials } = flow(simulator);
    nodesFlow[1] = { ...nodesFlow[1], device: '' };
    await helper.load(nodes, nodesFlow, credentials);
    const info = helper.getNode('info1');
    should(lastStatus(info)).eql({ fill: 'red', shape: 'ring', text: text('localbattery-info.errors.noDevice') });
    const caught = nextInput(helper.getNode('caught'));
    info.receive({});
    should((await caught).error.message).equal(`Error: ${text('localbattery-info.errors.noDevice')}`);
    should(lastStatus(info)).eql({ fill: 'red', shape: 'ring', text: text('localbattery-info.errors.noDevice') });
    should(simulator.stats.requests).equal(0);
  });

  it('reports an invalid device configuration on input, sending nothing', async function () {
    simulator = await startSimulator();
    const { flow: nodesFlow, credentials } = flow(simulator, { minInterval: 10 });
    await helper.load(nodes, nodesFlow, credentials);
    const info = helper.getNode('info1');
    should(lastStatus(info)).eql({ fill: 'red', shape: 'ring', text: text('localbattery-device.status.invalid') });
    const caught = nextInput(helper.getNode('caught'));
    info.receive({});
    should((await caught).error.message).match(/minimum interval/);
    should(lastStatus(info)).eql({ fill: 'red', shape: 'ring', text: text('localbattery-device.status.invalid') });
    should(simulator.stats.requests).equal(0);
  });

  describe('describeInfo', function () {
    const { describeInfo } = infoNode;

    it('leaves out what the members do not allow', function () {
      should(describeInfo({ type: 'X' })).eql({ type: 'X' });
      // No time_stamp: the wall clock alone has no zone, so no date, and a local time without a zone.
      should(describeInfo({ time: '2024-05-01 12:00:00' })).eql({ time: '2024-05-01 12:00:00', localTime: '2024-05-01T12:00:00' });
      const odd = describeInfo({ time: 'noon', time_stamp: 1714557600 });
      should(odd.date).equal('2024-05-01T10:00:00.000Z');
      should(odd).not.have.property('utcOffset');
      should(odd).not.have.property('localTime');
      should(describeInfo({ time_stamp: 0, run_time: -1 })).eql({ time_stamp: 0, run_time: -1 });
      const hex = { time_stamp: '0x6632161a', run_time: '0x10', timezone: '0x1e0' };
      should(describeInfo(hex as never)).eql(hex);
    });

    it('reads numeric strings and writes the uptime in words', function () {
      const info = describeInfo({ time: '2024-05-01 12:00:00', time_stamp: '1714557600', run_time: '90061' } as never);
      should(info).have.properties({
        date: '2024-05-01T10:00:00.000Z',
        utcOffset: 120,
        localTime: '2024-05-01T12:00:00+02:00',
        uptime: '1d 1h 1m',
      });
      should(describeInfo({ run_time: 3725 }).uptime).equal('1h 2m');
      should(describeInfo({ run_time: 125 }).uptime).equal('2m 5s');
      should(describeInfo({ time: '2024-05-01 04:30:00', time_stamp: 1714557600 })).have.properties({
        utcOffset: -330,
        localTime: '2024-05-01T04:30:00-05:30',
      });
    });

    it('takes the offset from timezone where the clock cannot give it: minutes as the maker sends, hours within ±14', function () {
      should(describeInfo({ timezone: 480 })).eql({ timezone: 480, utcOffset: 480 });
      should(describeInfo({ timezone: '-300' } as never)).have.property('utcOffset', -300);
      should(describeInfo({ timezone: 5.5 })).have.property('utcOffset', 330);
      should(describeInfo({ timezone: -8 })).have.property('utcOffset', -480);
      should(describeInfo({ timezone: 0 })).have.property('utcOffset', 0);
      for (const odd of [900, 'UTC+8', null]) should(describeInfo({ timezone: odd } as never)).not.have.property('utcOffset');
      // The clock wins where it measures the offset.
      should(describeInfo({ timezone: 480, time: '2024-05-01 12:00:00', time_stamp: 1714557600 })).have.properties({
        utcOffset: 120,
        localTime: '2024-05-01T12:00:00+02:00',
      });
      should(describeInfo({ timezone: 480, time: '2024-05-01 12:00:00' })).have.properties({
        utcOffset: 480,
        localTime: '2024-05-01T12:00:00+08:00',
      });
    });

    it('writes the MAC address in the colon form, whatever the device sent, and passes on empty sn and hostname', function () {
      should(describeInfo({ mac: '7C3E82EF997F' }).macAddress).equal('7c:3e:82:ef:99:7f');
      should(describeInfo({ mac: '7c-3e-82-ef-99-7f' }).macAddress).equal('7c:3e:82:ef:99:7f');
      should(describeInfo({ mac: '7C:3E:82:EF:99:7F' }).macAddress).equal('7c:3e:82:ef:99:7f');
      for (const odd of ['', '7C3E82EF99', 'not a mac', 12]) should(describeInfo({ mac: odd } as never)).not.have.property('macAddress');
      should(describeInfo({ sn: '', hostname: '', mac: '7C3E82EF997F' })).eql({
        sn: '',
        hostname: '',
        mac: '7C3E82EF997F',
        macAddress: '7c:3e:82:ef:99:7f',
      });
    });
  });
});
