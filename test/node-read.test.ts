/** The read points node against the simulator. */
import should from 'should';
import deviceNode = require('../nodes/localbattery-device');
import readNode = require('../nodes/localbattery-read');
import { READ_POINTS, decodeValue, describeValue, formatHourMinute, pointByName, readPointByAddress } from '../src/points/catalogue';
import type { DeviceClient } from '../src/device/client';
import type { DeviceSimulator } from '../src/simulator';
import { deviceConfig, helper, startSimulator } from './support';
import { type EditorUnderTest, inEnglish, lastStatus, loadEditorScript, nextInput, sleep, statusesOf, text, until } from './node-support';

const nodes = [inEnglish(deviceNode), inEnglish(readNode)];

const addressOf = (name: string) => pointByName(name)!.address;

/** A read node with the editor's defaults. */
function reader(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'read1',
    type: 'localbattery-read',
    device: 'device1',
    points: ['batterySoc'],
    interval: '',
    output: 'object',
    topicPrefix: '',
    decode: false,
    onlyChange: false,
    wires: [['out']],
    ...extra,
  };
}

function load(simulator: DeviceSimulator, readers: Record<string, unknown>[], extra: Record<string, unknown>[] = []) {
  const device = deviceConfig(simulator);
  return helper.load(
    nodes,
    [
      device.node,
      ...readers,
      { id: 'out', type: 'helper' },
      { id: 'catch1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
      { id: 'caught', type: 'helper' },
      ...extra,
    ],
    device.credentials,
  );
}

/** Every msg `helperId` receives from now on. */
function collect(helperId: string): any[] {
  const messages: any[] = [];
  helper.getNode(helperId).on('input', (msg: any) => messages.push(msg));
  return messages;
}

/** Calls of a spied Node method (warn, error, send) made by this node. */
function callsOf(node: any, method: 'log' | 'warn' | 'error' | 'send'): unknown[][] {
  // On Node-RED before 4.1 the node wraps its own error method (keepErrorCodes): the helper's spy is the prototype's.
  const spy = typeof node[method].getCalls === 'function' ? node[method] : Object.getPrototypeOf(node)[method];
  return spy
    .getCalls()
    .filter((call: { thisValue: unknown }) => call.thisValue === node)
    .map((call: { args: unknown[] }) => call.args);
}

/** What the node must report for an address: the simulator's value, decoded as the catalogue says. */
function expectedValue(simulator: DeviceSimulator, address: number): number | string {
  const raw = simulator.value(address);
  should(raw).not.be.undefined();
  return decodeValue(address, raw)!;
}

const readStatus = /^\d+ points? · /;

describe('localbattery-read node', function () {
  let simulator: DeviceSimulator;

  afterEach(async function () {
    await helper.unload();
    await simulator?.stop();
  });

  it('reads the picked points into an object keyed by name, with units and metadata, reusing the msg', async function () {
    // timeScale 0 freezes the battery model, so the simulator's values can be compared exactly.
    simulator = await startSimulator({ timeScale: 0 });
    const names = ['batterySoc', 'batteryPower', 'workingMode', 'serialNumber', 'ratedCapacity', 'gridVoltage'];
    await load(simulator, [reader({ points: names })]);
    const read = helper.getNode('read1');
    const output = nextInput(helper.getNode('out'));
    read.receive({ payload: 'go', topic: 'keep me' });
    const msg = await output;

    should(msg.topic).equal('keep me');
    should(Object.keys(msg.payload)).eql(names);
    for (const name of names) should(msg.payload[name]).equal(expectedValue(simulator, addressOf(name)), name);
    should(msg.payload.serialNumber).be.a.String();
    const withUnits = names.filter((name) => readPointByAddress(addressOf(name))!.unit);
    should(Object.keys(msg.units)).eql(withUnits);
    for (const name of withUnits) should(msg.units[name]).equal(readPointByAddress(addressOf(name))!.unit);
    // Home Assistant's sensor semantics ride along where they apply (none for a serial number).
    const homeAssistant: Record<string, unknown> = {
      batterySoc: { device_class: 'battery', unit_of_measurement: '%', state_class: 'measurement' },
      batteryPower: { device_class: 'power', unit_of_measurement: 'W', state_class: 'measurement' },
      workingMode: {
        device_class: 'enum',
        options: ['Outdoor Portable', 'Self-consumed Prioritized', 'Real-time Control', 'Charge/Discharge Schedule'],
      },
      ratedCapacity: { device_class: 'energy_storage', unit_of_measurement: 'kWh' },
      gridVoltage: { device_class: 'voltage', unit_of_measurement: 'V', state_class: 'measurement' },
    };
    for (const name of names) {
      const point = readPointByAddress(addressOf(name))!;
      should(msg.metadata[name]).eql({
        address: point.address,
        label: point.label,
        ...(point.unit ? { unit: point.unit } : {}),
        category: point.category,
        ...(homeAssistant[name] ? { homeAssistant: homeAssistant[name] } : {}),
      });
    }
    should(msg.missing).eql([]);
    should(simulator.stats.byOperation['Vendor.GetData']).equal(1);
    const status = lastStatus(read)!;
    should(status).have.properties({ fill: 'green', shape: 'dot' });
    should(status.text).startWith(text('localbattery-read.status.read', { count: names.length, time: '' }));
  });

  it('keys values, units and metadata by address in address mode', async function () {
    simulator = await startSimulator({ timeScale: 0 });
    await load(simulator, [reader({ points: ['batterySoc', 'meterPower', 'serialNumber'], output: 'address' })]);
    const output = nextInput(helper.getNode('out'));
    helper.getNode('read1').receive({});
    const msg = await output;
    const keys = ['batterySoc', 'meterPower', 'serialNumber'].map((name) => String(addressOf(name)));
    // JavaScript lists integer-like keys in ascending order, whatever the order of the points.
    should(Object.keys(msg.payload)).eql([...keys].sort((a, b) => Number(a) - Number(b)));
    for (const key of keys) should(msg.payload[key]).equal(expectedValue(simulator, Number(key)));
    should(msg.units).eql({ [keys[0]]: '%', [keys[1]]: readPointByAddress(Number(keys[1]))!.unit });
    should(Object.keys(msg.metadata).sort()).eql([...keys].sort());
    should(msg.metadata[keys[0]].label).equal(readPointByAddress(Number(keys[0]))!.label);
  });

  it('sends one message per point in split mode, with the topic prefix and the point name as topic', async function () {
    simulator = await startSimulator({ timeScale: 0 });
    const names = ['batterySoc', 'batteryPower', 'serialNumber'];
    await load(simulator, [reader({ points: names, output: 'split', topicPrefix: 'battery/' })]);
    const messages = collect('out');
    helper.getNode('read1').receive({ _msgid: 'abc', keep: 1 });
    await until(() => messages.length === 3, 5000, 'three messages');
    await sleep(100);
    should(messages).have.length(3);
    should(messages.map((m) => m.topic)).eql(names.map((name) => `battery/${name}`));
    messages.forEach((m, i) => {
      const address = addressOf(names[i]);
      should(m.payload).equal(expectedValue(simulator, address));
      should(m.address).equal(address);
      should(m.keep).equal(1);
      should(m.missing).eql([]);
      if (readPointByAddress(address)!.unit) should(m.unit).equal(readPointByAddress(address)!.unit);
      else should(m).not.have.property('unit');
    });
    should(new Set(messages).size).equal(3);
    should(simulator.stats.byOperation['Vendor.GetData']).equal(1);
  });

  it('decodes enumerated values and packed times to {value, label} when asked', async function () {
    simulator = await startSimulator({ timeScale: 0 });
    const names = ['workingMode', 'batteryState', 'calibrationStartTime', 'batterySoc'];
    await load(simulator, [reader({ points: names, decode: true })]);
    const output = nextInput(helper.getNode('out'));
    helper.getNode('read1').receive({});
    const { payload } = await output;

    for (const name of ['workingMode', 'batteryState']) {
      const point = pointByName(name) as (typeof READ_POINTS)[number];
      const value = expectedValue(simulator, point.address);
      should(value).be.a.Number();
      should(payload[name]).eql({ value, label: point.enum!.find((o) => o.value === value)!.label });
    }
    // The simulator sends the battery state as a numeric string, as real firmware does.
    should(simulator.value(addressOf('batteryState'))).be.a.String();
    const time = expectedValue(simulator, addressOf('calibrationStartTime')) as number;
    should(payload.calibrationStartTime).eql({ value: time, label: formatHourMinute(time) });
    should(payload.calibrationStartTime).eql(describeValue(addressOf('calibrationStartTime'), time));
    should(payload.batterySoc).equal(expectedValue(simulator, addressOf('batterySoc')));
  });

  it('reads the points of msg.points instead of the picked ones: names, addresses or a string', async function () {
    simulator = await startSimulator({ timeScale: 0 });
    await load(simulator, [reader({ points: ['serialNumber'] })]);
    const messages = collect('out');
    const read = helper.getNode('read1');
    read.receive({ points: ['batterySoc', 'batteryPower'], tag: 'names' });
    read.receive({ points: [addressOf('batterySoc'), String(addressOf('meterPower'))], tag: 'addresses' });
    read.receive({ points: ' batterySoc, 6000 ,', tag: 'string' });
    await until(() => messages.length === 3, 5000, 'three messages');
    const byTag = Object.fromEntries(messages.map((m) => [m.tag, m]));
    should(Object.keys(byTag.names.payload)).eql(['batterySoc', 'batteryPower']);
    // A catalogue address comes out under its point name.
    should(Object.keys(byTag.addresses.payload)).eql(['batterySoc', 'meterPower']);
    should(Object.keys(byTag.string.payload)).eql(['batterySoc', readPointByAddress(6000)!.name]);
    for (const msg of messages) {
      for (const [name, value] of Object.entries(msg.payload)) should(value).equal(expectedValue(simulator, addressOf(name)));
    }
    // The three reads waited together and went out as one request.
    should(simulator.stats.byOperation['Vendor.GetData']).equal(1);
  });

  it('reads gridPower on either model class from the meter point it serves, picked or in msg.points; a meter point named itself keeps its name', async function () {
    for (const model of ['2000', '1600'] as const) {
      simulator = await startSimulator({ timeScale: 0, model });
      await load(simulator, [reader({ points: ['gridPower', 'batterySoc'] })]);
      const messages = collect('out');
      const read = helper.getNode('read1');
      read.receive({ tag: 'picked' });
      read.receive({ points: 'gridPower, meterPower', tag: 'both' });
      await until(() => messages.length === 2, 5000, 'two messages');
      const byTag = Object.fromEntries(messages.map((m) => [m.tag, m]));
      const served = model === '1600' ? addressOf('meterPower1600') : addressOf('meterPower');
      should(byTag.picked.payload).eql({
        gridPower: expectedValue(simulator, served),
        batterySoc: expectedValue(simulator, addressOf('batterySoc')),
      });
      // Another model's meter point is not missing: the point asked for (gridPower) came.
      should(byTag.picked.missing).eql([]);
      should(byTag.picked.metadata.gridPower).match({
        address: served,
        label: 'Grid power',
        unit: 'W',
        homeAssistant: { device_class: 'power' },
      });
      // meterPower named as well keeps its own name (missing on the 1600 class), and gridPower its other address.
      if (model === '1600') {
        should(byTag.both.payload).eql({ gridPower: expectedValue(simulator, served) });
        should(byTag.both.missing).eql(['meterPower']);
      } else {
        // One address goes out under one key: 11016 as meterPower, and gridPower's other address is missing.
        should(byTag.both.payload).eql({ meterPower: expectedValue(simulator, served) });
        should(byTag.both.missing).eql(['gridPower']);
      }
      await helper.unload();
      await simulator.stop();
    }
  });

  it('reads the points of msg.points when the node has none, and fails a message without them', async function () {
    simulator = await startSimulator({ timeScale: 0 });
    await load(simulator, [reader({ points: [] }), reader({ id: 'read2', points: undefined })]);
    const messages = collect('out');
    const caught = collect('caught');
    for (const id of ['read1', 'read2']) helper.getNode(id).receive({ points: 'batterySoc', tag: id });
    helper.getNode('read1').receive({ tag: 'none' });
    await until(() => messages.length === 2 && caught.length === 1, 5000, 'two reads and an error');
    for (const msg of messages) should(msg.payload).eql({ batterySoc: expectedValue(simulator, addressOf('batterySoc')) });
    should(messages.map((m) => m.tag).sort()).eql(['read1', 'read2']);
    should(caught[0].tag).equal('none');
    should(caught[0].error.message).match(/Invalid points: got \[\]/);
  });

  it('sends an invalid msg.points to Catch, naming the field and what is allowed, and asks the device nothing', async function () {
    simulator = await startSimulator();
    await load(simulator, [reader()]);
    const read = helper.getNode('read1');
    const caught = collect('caught');
    const outputs = collect('out');
    const before = simulator.stats.requests;
    const invalid: unknown[] = [['batterySoc', 'noSuchPoint'], [70000], { batterySoc: true }, ' , ', [], ['controlPower']];
    for (const points of invalid) read.receive({ points });
    await until(() => caught.length === invalid.length, 5000, 'every error');
    await sleep(300);

    for (const msg of caught) {
      should(msg.error.code).equal('INVALID_VALUE');
      should(msg.error.source.id).equal('read1');
      should(msg.error.message).match(/Invalid msg\.points: got .*, allowed is /);
    }
    const messages = caught.map((m) => m.error.message as string);
    should(messages[0]).containEql('"noSuchPoint"');
    should(messages[1]).containEql('70000');
    // A write point is no read point.
    should(messages[5]).containEql('"controlPower"');
    should(outputs).have.length(0);
    should(simulator.stats.requests).equal(before);
    should(lastStatus(read)).eql({ fill: 'red', shape: 'ring', text: 'invalid value' });
  });

  it('lists points the device leaves out in msg.missing and warns about them once', async function () {
    simulator = await startSimulator({ timeScale: 0 });
    const pack2 = addressOf('pack2Soc');
    should(simulator.isUnsupported(pack2)).be.true();
    // 65000 is no catalogue address: the device leaves it out too, and it is named by its address.
    await load(simulator, [reader({ points: ['batterySoc', 'pack2Soc', 65000] })]);
    const read = helper.getNode('read1');
    const messages = collect('out');
    read.receive({});
    await until(() => messages.length === 1, 5000, 'first read');
    read.receive({});
    await until(() => messages.length === 2, 5000, 'second read');

    for (const msg of messages) {
      should(msg.payload).eql({ batterySoc: expectedValue(simulator, addressOf('batterySoc')) });
      should(msg.missing).eql(['pack2Soc', '65000']);
    }
    should(callsOf(read, 'warn')).eql([[text('localbattery-read.warn.missing', { points: 'pack2Soc, 65000' })]]);
    should(lastStatus(read)!.text).startWith(text('localbattery-read.status.readOne', { time: '' }));
  });

  it('only on change: suppresses a repeat, and in split mode sends only the points that changed', async function () {
    simulator = await startSimulator({ timeScale: 0 });
    const names = ['batterySoc', 'backupSoc'];
    await load(
      simulator,
      [
        reader({ points: names, onlyChange: true }),
        reader({ id: 'read2', points: names, onlyChange: true, output: 'split', wires: [['out2']] }),
      ],
      [{ id: 'out2', type: 'helper' }],
    );
    const objects = collect('out');
    const splits = collect('out2');
    const read1 = helper.getNode('read1');
    const read2 = helper.getNode('read2');
    const reads = () => statusesOf(read1).filter((s) => readStatus.test(s.text ?? '')).length;
    const trigger = async (count: number) => {
      read1.receive({});
      read2.receive({});
      await until(
        () => reads() === count && statusesOf(read2).filter((s) => readStatus.test(s.text ?? '')).length === count,
        5000,
        `read ${count}`,
      );
      await sleep(50);
    };

    await trigger(1);
    should(objects).have.length(1);
    should(splits.map((m) => m.topic)).eql(names);

    await trigger(2);
    should(objects).have.length(1);
    should(splits).have.length(2);
    should(lastStatus(read1)).have.properties({ fill: 'green', shape: 'ring' });

    const client = (helper.getNode('device1') as unknown as { client: DeviceClient }).client;
    const backup = Number(simulator.value(addressOf('backupSoc')));
    await client.write('backupSocSetting', backup < 50 ? backup + 5 : backup - 5);
    const changed = expectedValue(simulator, addressOf('backupSoc'));
    should(changed).not.equal(backup);

    await trigger(3);
    should(objects).have.length(2);
    should(objects[1].payload).eql({ batterySoc: expectedValue(simulator, addressOf('batterySoc')), backupSoc: changed });
    should(splits).have.length(3);
    should(splits[2]).have.properties({ topic: 'backupSoc', payload: changed });
  });

  it('polls at its interval without any input', async function () {
    simulator = await startSimulator({ timeScale: 0 });
    const started = Date.now();
    await load(simulator, [reader({ points: ['batterySoc', 'batteryPower'], interval: 1 })]);
    const messages = collect('out');
    const times: number[] = [];
    helper.getNode('out').on('input', () => times.push(Date.now() - started));
    await until(() => messages.length >= 3, 5000, 'three polls');
    for (const msg of messages) {
      should(msg.payload).eql({
        batterySoc: expectedValue(simulator, addressOf('batterySoc')),
        batteryPower: expectedValue(simulator, addressOf('batteryPower')),
      });
      should(msg._msgid).be.a.String();
    }
    should(new Set(messages.map((m) => m._msgid)).size).equal(messages.length);
    // The first read comes right after deploy, the next ones about a second apart.
    should(times[0]).be.below(1000);
    should(times[2] - times[1]).be.within(800, 1300);
    console.log(`      polls at ${times.slice(0, 3).join(', ')} ms after deploy`);
  });

  it('queues one poll behind a slow answer so the device never idles, and skips a tick while one still waits', async function () {
    simulator = await startSimulator({ timeScale: 0, slowDelayMs: 1700 });
    simulator.setFault('slow', 2);
    await load(simulator, [reader({ interval: 1 })]);
    const client = (helper.getNode('device1') as unknown as { client: DeviceClient }).client;
    const messages = collect('out');
    let maxQueue = 0;
    const started = Date.now();
    while (Date.now() - started < 4500) {
      maxQueue = Math.max(maxQueue, client.queueSize);
      await sleep(20);
    }
    // Two slow answers (1.7 s each) with ticks every second: one poll waited behind each, none more.
    should(maxQueue).equal(1);
    should(messages.length).be.within(3, 4);
    should(simulator.stats.byOperation['Vendor.GetData']).equal(messages.length);
    should(simulator.stats.violations).eql([]);
  });

  it('sends a device failure to Catch with its code and shows it red, then recovers', async function () {
    simulator = await startSimulator({ timeScale: 0 });
    await load(simulator, [reader()]);
    const read = helper.getNode('read1');
    simulator.setFault('http500', 1);
    const caught = nextInput(helper.getNode('caught'));
    read.receive({ payload: 'first' });
    const failure = await caught;
    should(failure.payload).equal('first');
    should(failure.error).have.properties({ code: 'HTTP_STATUS' });
    should(failure.error.message).match(/HTTP 500/);
    should(lastStatus(read)).eql({ fill: 'red', shape: 'ring', text: 'http status' });

    const output = nextInput(helper.getNode('out'));
    read.receive({ payload: 'second' });
    should((await output).payload).eql({ batterySoc: expectedValue(simulator, addressOf('batterySoc')) });
    const statuses = statusesOf(read);
    const red = statuses.findIndex((s) => s.fill === 'red');
    const green = statuses.findIndex((s, i) => i > red && s.fill === 'green' && readStatus.test(s.text ?? ''));
    should(red).be.above(-1);
    should(green).be.above(red);
    should(lastStatus(read)).have.properties({ fill: 'green', shape: 'dot' });
  });

  it('sends a poll failure to Catch as well, and keeps polling', async function () {
    simulator = await startSimulator({ timeScale: 0 });
    simulator.setFault('http500', 1);
    await load(simulator, [reader({ interval: 1 })]);
    const read = helper.getNode('read1');
    const caught = nextInput(helper.getNode('caught'));
    const output = nextInput(helper.getNode('out'));
    const failure = await caught;
    should(failure.error).have.properties({ code: 'HTTP_STATUS' });
    should(failure.error.source.id).equal('read1');
    should(failure._msgid).be.a.String();
    should((await output).payload).eql({ batterySoc: expectedValue(simulator, addressOf('batterySoc')) });
    const statuses = statusesOf(read);
    const red = statuses.findIndex((s) => s.fill === 'red');
    should(red).be.above(-1);
    should(statuses.findIndex((s, i) => i > red && s.fill === 'green' && readStatus.test(s.text ?? ''))).be.above(red);
  });

  it('reports an outage once, polls less often while the device is away, and says once that it is back', async function () {
    // The back-off's shape up to its minute is tested on a manual clock (poller.test.ts); a 2 s cap shows it here.
    const cap = readNode.pollBackoff.maxMs;
    readNode.pollBackoff.maxMs = 2000;
    try {
      simulator = await startSimulator({ timeScale: 0 });
      await load(simulator, [reader({ interval: 1 })]);
      const read = helper.getNode('read1');
      const messages = collect('out');
      const caught = collect('caught');
      await until(() => messages.length >= 1, 5000, 'the first poll');
      const client = (helper.getNode('device1') as unknown as { client: DeviceClient }).client;
      const attempts: number[] = [];
      const readOnce = client.read.bind(client);
      client.read = (addresses: number[]) => {
        attempts.push(Date.now());
        return readOnce(addresses);
      };

      simulator.setFault('offline');
      await simulator.ready();
      const away = Date.now();
      // The third poll is only due once the second has failed, so both failures have been handled by then.
      await until(() => attempts.filter((at) => at >= away).length >= 3, 10000, 'three polls while away');
      const during = attempts.filter((at) => at >= away);
      should(caught).have.length(1);
      should(caught[0].error).have.properties({ code: 'UNREACHABLE' });
      should(caught[0].error.source.id).equal('read1');
      should(statusesOf(read).some((s) => s.fill === 'red' && s.text === 'unreachable')).be.true();
      // 2 s apart instead of every second.
      const gaps = during.slice(1).map((at, i) => at - during[i]);
      for (const gap of gaps) should(gap).be.within(1500, 2600);
      should(callsOf(read, 'log')).be.empty();

      simulator.setFault(null);
      await simulator.ready();
      await until(() => callsOf(read, 'log').length === 1, 6000, 'the message that the device is back');
      should(String(callsOf(read, 'log')[0][0])).match(/answers again after \d+ s \(UNREACHABLE\)/);
      const back = messages.length;
      const times: number[] = [];
      helper.getNode('out').on('input', () => times.push(Date.now()));
      await until(() => messages.length >= back + 3, 6000, 'polls at the interval again');
      should(times[2] - times[1]).be.within(700, 1400);
      should(caught).have.length(1);
      should(callsOf(read, 'log')).have.length(1);
      should(lastStatus(read)).have.properties({ fill: 'green', shape: 'dot' });
      console.log(`      ${during.length} polls while away, ${gaps.map((g) => (g / 1000).toFixed(1)).join(', ')} s apart`);
    } finally {
      readNode.pollBackoff.maxMs = cap;
    }
  });

  it('reports a wrong password once while polling, and a read that a message triggered each time', async function () {
    simulator = await startSimulator({ timeScale: 0 });
    const device = deviceConfig(simulator);
    device.credentials.device1.password = 'wrong-password';
    await helper.load(
      nodes,
      [
        device.node,
        reader({ interval: 1 }),
        { id: 'out', type: 'helper' },
        { id: 'catch1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
        { id: 'caught', type: 'helper' },
      ],
      device.credentials,
    );
    const caught = collect('caught');
    const client = (helper.getNode('device1') as unknown as { client: DeviceClient }).client;
    const polls: Promise<unknown>[] = [];
    const readOnce = client.read.bind(client);
    client.read = (addresses: number[]) => {
      const poll = readOnce(addresses);
      polls.push(poll);
      return poll;
    };
    await until(() => polls.length >= 2, 5000, 'two polls');
    await polls[1].catch(() => undefined);
    await new Promise((resolve) => setImmediate(resolve));
    should(caught.map((msg) => msg.error.code)).eql(['UNAUTHORIZED']);
    helper.getNode('read1').receive({ payload: 'one' });
    helper.getNode('read1').receive({ payload: 'two' });
    await until(() => caught.length === 3, 8000, 'both triggered reads at Catch');
    should(caught.slice(1).map((msg) => [msg.payload, msg.error.code])).eql([
      ['one', 'UNAUTHORIZED'],
      ['two', 'UNAUTHORIZED'],
    ]);
  });

  it('only on change with a dead band: a numeric point counts as changed when it moves by more than its band', async function () {
    // The rules are tested in poller.test.ts; here the setting reaches them. The mode changes in the app, no request.
    simulator = await startSimulator({ timeScale: 0 });
    await load(simulator, [reader({ points: ['workingMode', 'batterySoc'], onlyChange: true, deadband: '50, workingMode=3.5' })]);
    const read = helper.getNode('read1');
    const messages = collect('out');
    const reads = () => statusesOf(read).filter((s) => readStatus.test(s.text ?? '')).length;
    /** How many messages one read sends. */
    const readNow = async () => {
      const [before, count] = [messages.length, reads()];
      read.receive({});
      await until(() => reads() === count + 1, 5000, 'a read');
      await sleep(50);
      return messages.length - before;
    };
    simulator.changeWorkingMode(1);
    should(await readNow()).equal(1);
    simulator.changeWorkingMode(4);
    should(await readNow()).equal(0, 'moved 3, within its band');
    simulator.changeWorkingMode(5);
    should(await readNow()).equal(1, 'moved 4 from the value sent last');
    should(messages[messages.length - 1].payload).eql({ workingMode: 5, batterySoc: expectedValue(simulator, addressOf('batterySoc')) });
  });

  it('only on change with a heartbeat: sends the current values again after its time without a change', async function () {
    simulator = await startSimulator({ timeScale: 0 });
    await load(simulator, [reader({ points: ['batterySoc'], interval: 1, onlyChange: true, heartbeat: 3 })]);
    const messages = collect('out');
    const times: number[] = [];
    const started = Date.now();
    helper.getNode('out').on('input', () => times.push(Date.now() - started));
    const reads = () => statusesOf(helper.getNode('read1')).filter((s) => readStatus.test(s.text ?? '')).length;
    await until(() => messages.length >= 2, 8000, 'the heartbeat');
    // Unchanged values: the first read, then after 3 s; the two polls between sent nothing.
    should(messages.length).equal(2);
    should(reads()).be.aboveOrEqual(4);
    should(times[1] - times[0]).be.within(2800, 3600);
    for (const msg of messages) should(msg.payload).eql({ batterySoc: expectedValue(simulator, addressOf('batterySoc')) });
  });

  it('only on change, one message per point: each point has its own heartbeat, so a changing one starves no other', async function () {
    simulator = await startSimulator({ timeScale: 0 });
    await load(simulator, [reader({ points: ['workingMode', 'batterySoc'], output: 'split', onlyChange: true, heartbeat: 1.5 })]);
    const read = helper.getNode('read1');
    const messages = collect('out');
    const reads = () => statusesOf(read).filter((s) => readStatus.test(s.text ?? '')).length;
    /** The topics one read sends; the working mode changes (in the app) before each. */
    const topics: string[][] = [];
    for (const mode of [1, 4, 1]) {
      simulator.changeWorkingMode(mode);
      const [before, count] = [messages.length, reads()];
      read.receive({});
      await until(() => reads() === count + 1, 5000, 'a read');
      await sleep(50);
      topics.push(messages.slice(before).map((m) => m.topic));
    }
    // The reads are a second apart (the device's spacing): the SOC's heartbeat is due by the third at the latest.
    should(topics.map((list) => list.includes('workingMode'))).eql([true, true, true]);
    should(topics[0]).containEql('batterySoc');
    should(topics[1].includes('batterySoc') || topics[2].includes('batterySoc')).be.true();
  });

  it('rejects an invalid dead band or heartbeat, naming the field, and keeps saying so while others connect', async function () {
    simulator = await startSimulator();
    await load(simulator, [
      reader({ onlyChange: true, deadband: 'batterySoc=-1' }),
      reader({ id: 'read2', onlyChange: true, heartbeat: 0.5 }),
      reader({ id: 'read3', points: [] }),
      reader({ id: 'read4' }),
    ]);
    should(String(callsOf(helper.getNode('read1'), 'error')[0][0])).match(/dead band/);
    should(String(callsOf(helper.getNode('read2'), 'error')[0][0])).match(/heartbeat.*1 to 86400 seconds/);
    const output = nextInput(helper.getNode('out'));
    helper.getNode('read4').receive({});
    await output;
    const invalid = { fill: 'red', shape: 'ring', text: text('localbattery-read.status.invalid') };
    for (const id of ['read1', 'read2']) should(lastStatus(helper.getNode(id))).eql(invalid);
    // Without points a node still reads those of msg.points: it follows the connection.
    should(lastStatus(helper.getNode('read3'))).eql({ fill: 'green', shape: 'dot', text: text('localbattery-device.status.connected') });
  });

  it('reports an invalid configuration at start and on input, and does not poll', async function () {
    simulator = await startSimulator();
    // A valid node on another device shows when the first polls were due: they start on the same 100 ms boundary.
    const other = await startSimulator({ timeScale: 0 });
    const device = deviceConfig(simulator);
    const otherDevice = deviceConfig(other, 'device2');
    try {
      const firstPoll = helper
        .load(
          nodes,
          [
            device.node,
            otherDevice.node,
            reader({ points: ['batterySoc', 'noSuchPoint'], interval: 1 }),
            reader({ id: 'read2', interval: '0.5' }),
            reader({ id: 'read3', points: [] }),
            reader({ id: 'read4', device: '', interval: 1 }),
            reader({ id: 'read5', interval: '0x5' }),
            reader({ id: 'read6', device: 'device2', interval: 1, wires: [['out6']] }),
            { id: 'out6', type: 'helper' },
            { id: 'catch1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
            { id: 'caught', type: 'helper' },
          ],
          { ...device.credentials, ...otherDevice.credentials },
        )
        .then(() => nextInput(helper.getNode('out6')));
      await firstPoll;
      const invalid = { fill: 'red', shape: 'ring', text: text('localbattery-read.status.invalid') };
      should(callsOf(helper.getNode('read1'), 'error')[0][0]).match(/Invalid points: got "noSuchPoint", allowed is/);
      should(callsOf(helper.getNode('read2'), 'error')[0][0]).match(/Invalid interval: got "0.5", allowed is empty or 0/);
      should(callsOf(helper.getNode('read3'), 'error')[0][0]).match(/Invalid points: got \[\]/);
      should(callsOf(helper.getNode('read5'), 'error')[0][0]).match(/Invalid interval: got "0x5", allowed is empty or 0/);
      for (const id of ['read1', 'read2', 'read3', 'read5']) should(lastStatus(helper.getNode(id))).eql(invalid);
      should(lastStatus(helper.getNode('read4'))).eql({ fill: 'red', shape: 'ring', text: text('localbattery-read.errors.noDevice') });
      should(simulator.stats.requests).equal(0);

      const caught = collect('caught');
      for (const id of ['read1', 'read2', 'read3', 'read4']) helper.getNode(id).receive({});
      await until(() => caught.length === 4, 5000, 'four errors');
      should(caught.map((m) => m.error.source.id).sort()).eql(['read1', 'read2', 'read3', 'read4']);
      should(caught.find((m) => m.error.source.id === 'read4').error.message).equal(`Error: ${text('localbattery-read.errors.noDevice')}`);
      should(simulator.stats.requests).equal(0);
    } finally {
      await helper.unload();
      await other.stop();
    }
  });

  it('stops on redeploy while a poll is in flight: nothing after close, no timer, no unhandled rejection', async function () {
    simulator = await startSimulator({ timeScale: 0, slowDelayMs: 1000 });
    simulator.setFault('slow');
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      await load(simulator, [reader({ interval: 1 })]);
      const read: any = helper.getNode('read1');
      let closed = false;
      const afterClose: string[] = [];
      for (const method of ['send', 'status', 'error', 'warn'] as const) {
        const original = read[method];
        read[method] = function (this: unknown, ...args: unknown[]) {
          if (closed) afterClose.push(method);
          return original.apply(this, args);
        };
      }
      read.on('close', () => {
        closed = true;
      });
      await until(() => simulator.stats.requests === 1, 3000, 'a poll in flight');
      await helper.unload();
      const requests = simulator.stats.requests;
      // Past the slow answer and the next tick.
      await sleep(1500);
      should(afterClose).eql([]);
      should(rejections).eql([]);
      should(simulator.stats.requests).equal(requests);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });

  it('load: twenty nodes polling one device every second share few requests, with no violations', async function () {
    this.timeout(20000);
    simulator = await startSimulator();
    const supported = READ_POINTS.filter((p) => !simulator.isUnsupported(p.address));
    const readers = Array.from({ length: 20 }, (_, i) =>
      reader({ id: `load${i}`, points: [supported[2 * i].name, supported[2 * i + 1].name], interval: 1, wires: [[`out${i}`]] }),
    );
    await load(
      simulator,
      readers,
      readers.map((_, i) => ({ id: `out${i}`, type: 'helper' })),
    );
    const received = readers.map((_, i) => collect(`out${i}`));
    const client = (helper.getNode('device1') as unknown as { client: DeviceClient }).client;
    let maxQueue = 0;
    const started = Date.now();
    while (Date.now() - started < 5000) {
      maxQueue = Math.max(maxQueue, client.queueSize);
      await sleep(20);
    }
    await helper.unload();

    const stats = simulator.stats;
    const nodeReads = received.reduce((sum, list) => sum + list.length, 0);
    console.log(
      `      20 nodes, 5 s: ${nodeReads} node reads (per node ${received.map((l) => l.length).join('/')}), ` +
        `${stats.requests} device requests (${JSON.stringify(stats.byOperation)}), max ${stats.maxAddressesPerRead} addresses per request, ` +
        `max queue ${maxQueue}, violations ${stats.violations.length}`,
    );
    received.forEach((list, i) => {
      should(list.length).be.above(2, `load${i} got ${list.length} reads`);
      const names = readers[i].points as string[];
      for (const msg of list) {
        should(Object.keys(msg.payload)).eql(names);
        for (const name of names) should(msg.payload[name]).not.be.undefined();
      }
    });
    should(stats.violations).eql([]);
    should(stats.protocolErrors).eql([]);
    should(stats.requests * 10).be.belowOrEqual(nodeReads);
    // Each node has at most one poll waiting: ticks are skipped, never queued.
    should(maxQueue).be.belowOrEqual(20);
  });
});

describe('localbattery-read editor validation', function () {
  let editor: EditorUnderTest;
  const check = (field: string, v: unknown) => editor.definition.defaults[field].validate.call({}, v, {});

  beforeEach(function () {
    editor = loadEditorScript('localbattery-read');
  });

  it('accepts ${VAR} for the interval and the heartbeat, and checks numbers against 1 to 86400 seconds', async function () {
    // The bounds and the decimal-number rule come with the catalogue.
    editor.definition.onpaletteadd();
    editor.finishLoad();
    await until(() => editor.revalidated > 0, 1000, 'revalidation after loading');
    for (const field of ['interval', 'heartbeat']) {
      should(check(field, '${POLL_SECONDS}')).be.true(field);
      should(check(field, '')).be.true();
      should(check(field, '0')).be.true();
      should(check(field, '5')).be.true();
      should(check(field, '0.5')).be.a.String();
      should(check(field, '86401')).be.a.String();
      should(check(field, '0x5')).be.a.String();
      should(check(field, '${}')).be.a.String();
    }
  });

  it("checks the dead band with the runtime's rule once it has arrived: a number for every numeric point and point=number entries", async function () {
    // Before the rules arrive nothing is refused: the runtime checks at deploy.
    should(check('deadband', 'noSuchPoint=1')).be.true();
    editor.definition.onpaletteadd();
    editor.finishLoad();
    await until(() => editor.revalidated > 0, 1000, 'revalidation after loading');
    for (const ok of ['', '20', '0.5, batterySoc=1', 'batterySoc=1, 6000=25', '${DEAD_BAND}']) should(check('deadband', ok)).be.true(ok);
    for (const bad of ['-1', 'batterySoc=', 'batterySoc=x', '20 W', 'a=b=c', '70000=1', 'batterySoc=1=2', 'noSuchPoint=1']) {
      should(check('deadband', bad)).be.a.String();
    }
    should(check('deadband', 'batterySoc=1')).be.true();
  });
});
