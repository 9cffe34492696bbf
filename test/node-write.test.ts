/** The write point node against the simulator, and its editor validation. */
import should from 'should';
import deviceNode = require('../nodes/localbattery-device');
import writeNode = require('../nodes/localbattery-write');
import {
  CONTROL_STATES,
  REAL_TIME,
  WORKING_MODES,
  describeAllowed,
  pointByName,
  resolveWritePoint,
  type ReadPoint,
} from '../src/points/catalogue';
import type { DeviceSimulator } from '../src/simulator';
import { deviceConfig, helper, startSimulator } from './support';
import {
  type EditorUnderTest,
  inEnglish,
  loadEditorScript,
  watchAfterClose,
  lastStatus,
  nextInput,
  sleep,
  statusesOf,
  text,
  until,
} from './node-support';

const nodes = [inEnglish(deviceNode), inEnglish(writeNode)];
const TIME = '\\d{1,2}:\\d{2}:\\d{2}( [AP]M)?';

function flow(simulator: DeviceSimulator, write: Record<string, unknown> = {}, extra: Record<string, unknown>[] = []) {
  const device = deviceConfig(simulator);
  // On a tab, so that the nodes have flow context.
  const onTab = (node: Record<string, unknown>) => ({ z: 'tab1', ...node });
  return {
    flow: [
      { id: 'tab1', type: 'tab' },
      device.node as Record<string, unknown>,
      ...[
        {
          id: 'write1',
          type: 'localbattery-write',
          device: 'device1',
          point: '',
          value: 'payload',
          valueType: 'msg',
          ...write,
          wires: [['out']],
        },
        { id: 'out', type: 'helper' },
        { id: 'catch1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
        { id: 'caught', type: 'helper' },
        { id: 'complete1', type: 'complete', scope: ['write1'], uncaught: false, wires: [['completed']] },
        { id: 'completed', type: 'helper' },
        ...extra,
      ].map(onTab),
    ],
    credentials: device.credentials,
  };
}

async function load(simulator: DeviceSimulator, write: Record<string, unknown> = {}, extra: Record<string, unknown>[] = []) {
  const { flow: nodesFlow, credentials } = flow(simulator, write, extra);
  await helper.load(nodes, nodesFlow, credentials);
  return helper.getNode('write1');
}

const writePoint = (name: string) => resolveWritePoint(name);

/** The value the simulator reports for the read point paired with write point `name`. */
function pairedValue(simulator: DeviceSimulator, name: string): number {
  const read = pointByName(writePoint(name).readAs!) as ReadPoint;
  return Number(simulator.value(read.address));
}

/** A value in the point's range that differs from what the device reports now. */
function otherValue(simulator: DeviceSimulator, name: string): number {
  const point = writePoint(name);
  const current = pairedValue(simulator, name);
  return current + 100 <= point.max! ? current + 100 : current - 100;
}

/** The enum option of `name` that the device does not report now. */
function otherOption(simulator: DeviceSimulator, name: string) {
  const point = writePoint(name);
  const current = pairedValue(simulator, name) - (point.readValueOffset ?? 0);
  return point.enum!.find((o) => o.value !== current)!;
}

describe('localbattery-write node', function () {
  let simulator: DeviceSimulator;

  afterEach(async function () {
    await helper.unload();
    await simulator?.stop();
  });

  it('writes a constant, reuses the msg and the paired read point reports the value', async function () {
    simulator = await startSimulator();
    const name = 'feedInPowerLimitSetting';
    const wanted = otherValue(simulator, name);
    const node = await load(simulator, { point: name, valueType: 'num', value: String(wanted) });
    const output = nextInput(helper.getNode('out'));
    node.receive({ payload: 'ignored', topic: 'keep me' });
    const msg = await output;

    should(msg.payload).eql({ result: true });
    should(msg).have.properties({ topic: 'keep me', point: name, address: writePoint(name).address, value: wanted });
    should(pairedValue(simulator, name)).equal(wanted);
    should(simulator.stats.byOperation).eql({ 'Vendor.SetData': 1 });
    should(simulator.stats.violations).be.empty();
    const statuses = statusesOf(node);
    should(statuses.slice(0, 2)).eql([
      { fill: 'blue', shape: 'ring', text: text('localbattery-write.status.writing') },
      { fill: 'green', shape: 'dot', text: text('localbattery-device.status.connected') },
    ]);
    should(statuses).have.length(3);
    should(statuses[2]).have.properties({ fill: 'green', shape: 'dot' });
    should(statuses[2].text).match(new RegExp(`^${wanted} ${writePoint(name).unit} · ${TIME}$`));
  });

  it('writes an option picked from the enum drop-down, and one given by its label in msg.payload', async function () {
    simulator = await startSimulator();
    const picked = otherOption(simulator, 'lightSetting');
    const labelled = otherOption(simulator, 'gridChargingSetting');
    await load(simulator, { point: 'lightSetting', valueType: 'enum', value: String(picked.value) }, [
      {
        id: 'write2',
        type: 'localbattery-write',
        device: 'device1',
        point: 'gridChargingSetting',
        value: 'payload',
        valueType: 'msg',
        wires: [['out']],
      },
    ]);
    const out = helper.getNode('out');
    let output = nextInput(out);
    helper.getNode('write1').receive({});
    should((await output).value).equal(picked.value);
    should(pairedValue(simulator, 'lightSetting')).equal(picked.value);
    should(lastStatus(helper.getNode('write1'))!.text).startWith(`${picked.label} · `);

    output = nextInput(out);
    helper.getNode('write2').receive({ payload: labelled.label.toUpperCase() });
    should((await output).value).equal(labelled.value);
    should(pairedValue(simulator, 'gridChargingSetting')).equal(labelled.value + writePoint('gridChargingSetting').readValueOffset!);
  });

  it('msg.point overrides the picked point, by name or by address, with the value from msg.payload', async function () {
    simulator = await startSimulator();
    const node = await load(simulator, { point: 'feedInPowerLimitSetting' });
    const out = helper.getNode('out');
    const maxAc = otherValue(simulator, 'maxAcOutputPowerSetting');
    let output = nextInput(out);
    node.receive({ point: 'maxAcOutputPowerSetting', payload: maxAc });
    should(await output).have.properties({ point: 'maxAcOutputPowerSetting', value: maxAc, payload: { result: true } });
    should(pairedValue(simulator, 'maxAcOutputPowerSetting')).equal(maxAc);
    should(lastStatus(node)!.text).match(new RegExp(`^maxAcOutputPowerSetting = ${maxAc} W · ${TIME}$`));

    const inverter = writePoint('inverterInputLimitSetting');
    const limit = otherValue(simulator, inverter.name);
    output = nextInput(out);
    node.receive({ point: String(inverter.address), payload: String(limit) });
    should(await output).have.properties({ point: inverter.name, address: inverter.address, value: limit });
    should(pairedValue(simulator, inverter.name)).equal(limit);
    should(simulator.stats.byOperation['Vendor.SetData']).equal(2);
  });

  it('takes the value from JSONata', async function () {
    simulator = await startSimulator();
    const wanted = otherValue(simulator, 'feedInPowerLimitSetting');
    const node = await load(simulator, { point: 'feedInPowerLimitSetting', valueType: 'jsonata', value: 'payload.half * 2' });
    const output = nextInput(helper.getNode('out'));
    node.receive({ payload: { half: wanted / 2 } });
    should((await output).value).equal(wanted);
    should(pairedValue(simulator, 'feedInPowerLimitSetting')).equal(wanted);
  });

  it('writes [state, power, SOC] to controlState in one request once the mode is real-time control', async function () {
    simulator = await startSimulator();
    const power = writePoint('controlPower');
    const soc = writePoint('controlSoc');
    const values = [CONTROL_STATES.find((o) => o.label === 'Charging')!.value, power.max! - 100, soc.max! - 5];
    await load(simulator, { point: 'controlState', valueType: 'json', value: JSON.stringify(values) }, [
      {
        id: 'mode',
        type: 'localbattery-write',
        device: 'device1',
        point: 'workingModeSetting',
        value: 'payload',
        valueType: 'msg',
        wires: [['out']],
      },
    ]);
    const out = helper.getNode('out');
    let output = nextInput(out);
    helper.getNode('mode').receive({ payload: WORKING_MODES.find((m) => m.value === REAL_TIME.mode)!.label });
    await output;
    should(simulator.workingMode).equal(REAL_TIME.mode);

    output = nextInput(out);
    helper.getNode('write1').receive({});
    should((await output).value).eql(values);
    should(simulator.control).eql({ state: values[0], power: values[1], soc: values[2] });
    should(simulator.stats.byOperation['Vendor.SetData']).equal(2);
  });

  describe('values that must not reach the device', function () {
    async function rejected(write: Record<string, unknown>, msg: Record<string, unknown>, setup?: (node: any) => void) {
      const node = await load(simulator, write);
      setup?.(node);
      let outputs = 0;
      helper.getNode('out').on('input', () => outputs++);
      const caught = nextInput(helper.getNode('caught'));
      node.receive(msg);
      const error = (await caught).error;
      await sleep(50);
      should(outputs).equal(0);
      should(simulator.stats.requests).equal(0);
      should(error.code).equal('INVALID_VALUE');
      should(error.source.id).equal('write1');
      should(lastStatus(node)).eql({ fill: 'red', shape: 'ring', text: 'invalid value' });
      await helper.unload();
      return error as { message: string };
    }

    it('rejects out-of-range, non-integer and unknown values, naming point, value and allowed range', async function () {
      simulator = await startSimulator();
      const limit = writePoint('feedInPowerLimitSetting');
      for (const payload of [limit.max! + 1, limit.min! - 1, limit.min! + 0.5, 'lots', [limit.min, limit.min]]) {
        const error = await rejected({ point: limit.name }, { payload });
        should(error.message).containEql(limit.name);
        if (!Array.isArray(payload)) should(error.message).containEql(JSON.stringify(payload));
        should(error.message).containEql(Array.isArray(payload) ? 'exactly one value' : describeAllowed(limit));
      }
      const light = writePoint('lightSetting');
      const error = await rejected({ point: light.name }, { payload: 'Dimmed' });
      should(error.message).containEql('"Dimmed"');
      should(error.message).containEql(describeAllowed(light));
    });

    it('checks values from msg.point, flow and global context, env and JSONata as well', async function () {
      simulator = await startSimulator();
      const limit = writePoint('feedInPowerLimitSetting');
      const soc = writePoint('controlSoc');
      const tooMuch = limit.max! + 1;
      should((await rejected({ point: '' }, { point: limit.name, payload: tooMuch })).message).containEql(String(tooMuch));
      should((await rejected({ point: 'lightSetting' }, { point: String(limit.address), payload: 0 })).message).containEql(limit.name);
      should(
        (await rejected({ point: limit.name, valueType: 'flow', value: 'limit' }, {}, (node) => node.context().flow.set('limit', tooMuch)))
          .message,
      ).containEql(String(tooMuch));
      should(
        (await rejected({ point: limit.name, valueType: 'global', value: 'limit' }, {}, (node) => node.context().global.set('limit', -5)))
          .message,
      ).containEql('-5');
      process.env.LOCALBATTERY_TEST_LIMIT = String(tooMuch);
      try {
        should((await rejected({ point: limit.name, valueType: 'env', value: 'LOCALBATTERY_TEST_LIMIT' }, {})).message).containEql(
          String(tooMuch),
        );
      } finally {
        delete process.env.LOCALBATTERY_TEST_LIMIT;
      }
      should(
        (await rejected({ point: limit.name, valueType: 'jsonata', value: 'payload * 10' }, { payload: limit.max })).message,
      ).containEql(String(limit.max! * 10));
      const control = [CONTROL_STATES[0].value, writePoint('controlPower').min, soc.max! + 1];
      should((await rejected({ point: 'controlState' }, { payload: control })).message).containEql(soc.name);
    });

    it('rejects an unknown msg.point, and a message without any point', async function () {
      simulator = await startSimulator();
      should((await rejected({ point: 'feedInPowerLimitSetting' }, { point: 'batterySoc', payload: 100 })).message).containEql('msg.point');
      should((await rejected({ point: '' }, { point: 99999, payload: 100 })).message).containEql('99999');
      should((await rejected({ point: '' }, { payload: 100 })).message).containEql(text('localbattery-write.errors.pointRequired'));
    });

    it('reports an invalid configured point at start and on input', async function () {
      simulator = await startSimulator();
      const node = await load(simulator, { point: 'noSuchPoint' });
      should(lastStatus(node)).eql({ fill: 'red', shape: 'ring', text: text('localbattery-write.status.invalidPoint') });
      await helper.unload();
      should((await rejected({ point: 'noSuchPoint' }, { payload: 100 })).message).containEql('noSuchPoint');
    });
  });

  it('reports result false to Catch, naming point and value, and sends nothing on', async function () {
    simulator = await startSimulator();
    const name = 'feedInPowerLimitSetting';
    const before = pairedValue(simulator, name);
    const wanted = otherValue(simulator, name);
    const node = await load(simulator, { point: name });
    let outputs = 0;
    helper.getNode('out').on('input', () => outputs++);
    simulator.setFault('resultFalse', 1);
    const caught = nextInput(helper.getNode('caught'));
    node.receive({ payload: wanted });
    const error = (await caught).error;
    should(error.code).equal('REFUSED');
    should(error.message).containEql(name);
    should(error.message).containEql(`= ${wanted}`);
    should(outputs).equal(0);
    should(pairedValue(simulator, name)).equal(before);
    should(lastStatus(node)).eql({ fill: 'red', shape: 'ring', text: 'refused' });
  });

  it('says that a control point needs real-time control mode when the device refuses it', async function () {
    simulator = await startSimulator();
    should(simulator.workingMode).not.equal(REAL_TIME.mode);
    const node = await load(simulator, { point: 'controlSoc' });
    const caught = nextInput(helper.getNode('caught'));
    node.receive({ payload: writePoint('controlSoc').max });
    const error = (await caught).error;
    should(error.code).equal('REFUSED');
    should(error.message).containEql(text('localbattery-write.errors.realTimeOnly'));
  });

  it('ends a write superseded by a newer one to the same point without output', async function () {
    simulator = await startSimulator();
    const node = await load(simulator);
    const limit = writePoint('feedInPowerLimitSetting');
    const first = otherValue(simulator, limit.name);
    const last = first === limit.min ? limit.min + 1 : first - 1;
    const outputs: any[] = [];
    helper.getNode('out').on('input', (msg: any) => outputs.push(msg));
    const completed: any[] = [];
    helper.getNode('completed').on('input', (msg: any) => completed.push(msg));

    // The first write occupies the device for a second; the next two wait, and the newer replaces the older.
    node.receive({ point: 'maxAcOutputPowerSetting', payload: otherValue(simulator, 'maxAcOutputPowerSetting'), id: 'a' });
    await sleep(50);
    node.receive({ point: limit.name, payload: first, id: 'b' });
    await sleep(50);
    node.receive({ point: limit.name, payload: last, id: 'c' });
    await until(() => completed.length === 3, 5000, 'three completed messages');

    should(outputs.map((msg) => msg.id)).eql(['a', 'c']);
    should(completed.map((msg) => msg.id).sort()).eql(['a', 'b', 'c']);
    should(pairedValue(simulator, limit.name)).equal(last);
    should(simulator.stats.byOperation['Vendor.SetData']).equal(2);
    should(statusesOf(node).map((s) => s.text)).containEql(text('localbattery-write.status.superseded'));
  });

  it('reports a missing device configuration', async function () {
    simulator = await startSimulator();
    const node = await load(simulator, { device: '' });
    should(lastStatus(node)).eql({ fill: 'red', shape: 'ring', text: text('localbattery-write.errors.noDevice') });
    const caught = nextInput(helper.getNode('caught'));
    node.receive({ payload: 800 });
    should((await caught).error.message).containEql(text('localbattery-write.errors.noDevice'));
    should(simulator.stats.requests).equal(0);
  });

  it('sends nothing on and sets no status after a redeploy while its write is in flight', async function () {
    simulator = await startSimulator({ slowDelayMs: 300 });
    const node = await load(simulator, { point: 'feedInPowerLimitSetting' });
    simulator.setFault('slow', 1);
    node.receive({ payload: otherValue(simulator, 'feedInPowerLimitSetting') });
    await until(() => simulator.stats.requests === 1, 2000, 'the write to start');
    const after = watchAfterClose(node);
    await helper.unload();
    await sleep(500);
    should(after).eql([]);
  });
});

describe('localbattery-write editor validation', function () {
  let editor: EditorUnderTest;

  beforeEach(function () {
    editor = loadEditorScript('localbattery-write', {
      utils: { validateTypedProperty: (v: string, type: string) => (type === 'json' && !/^[[\d]/.test(v) ? 'bad JSON' : true) },
    });
  });

  const value = (node: Record<string, unknown>, v: string) => editor.definition.defaults.value.validate.call(node, v, {});
  const point = (v: string) => editor.definition.defaults.point.validate.call({}, v, {});

  it('refuses nothing until the rules have loaded (no verdict of its own), then checks the number and its range', async function () {
    const limit = writePoint('feedInPowerLimitSetting');
    const node = { point: limit.name, valueType: 'num' };
    should(value(node, String(limit.max! + 1))).be.true();
    should(value(node, 'abc')).be.true();
    should(value(node, '')).be.true();
    should(point('noSuchPoint')).be.true();
    should(editor.requests).eql(['localbattery/catalogue']);

    editor.finishLoad();
    await until(() => editor.revalidated > 0, 1000, 'revalidation after loading');
    // The catalogue, then the runtime's rules: once for every node of the package.
    should(editor.requests).eql(['localbattery/catalogue', 'localbattery/rules.js']);
    should(value(node, String(limit.max))).be.true();
    should(value(node, String(limit.max! + 1))).equal(
      text('localbattery-write.validation.range', { value: limit.max! + 1, point: limit.name, allowed: describeAllowed(limit) }),
    );
    should(value(node, String(limit.min! + 0.5))).be.a.String();
    should(value(node, 'abc')).equal(text('localbattery-write.validation.number'));
    should(value(node, '')).equal(text('localbattery-write.validation.number'));
    should(editor.definition.defaults.value.validate.call(node, 'abc')).be.false();
  });

  it('checks enum options, labels, three-value control writes and point names once loaded', async function () {
    point('');
    editor.finishLoad();
    await until(() => editor.revalidated > 0, 1000, 'revalidation after loading');
    const light = writePoint('lightSetting');
    should(value({ point: light.name, valueType: 'enum' }, String(light.enum![0].value))).be.true();
    should(value({ point: light.name, valueType: 'enum' }, '7')).be.a.String();
    should(value({ point: light.name, valueType: 'str' }, light.enum![1].label)).be.true();
    should(value({ point: light.name, valueType: 'str' }, 'Dimmed')).be.a.String();
    const power = writePoint('controlPower');
    const soc = writePoint('controlSoc');
    const state = CONTROL_STATES[1].value;
    should(value({ point: 'controlState', valueType: 'json' }, JSON.stringify([state, power.max, soc.min]))).be.true();
    should(value({ point: 'controlState', valueType: 'json' }, JSON.stringify([state, power.max! + 1, soc.min]))).be.a.String();
    should(value({ point: 'controlState', valueType: 'json' }, 'nope')).equal('bad JSON');
    // Values from messages, context and expressions are checked at run time.
    should(value({ point: light.name, valueType: 'msg' }, 'payload')).be.true();
    should(value({ point: '', valueType: 'num' }, '99999')).be.true();
    should(point('')).be.true();
    should(point('feedInPowerLimitSetting')).be.true();
    should(point(String(writePoint('feedInPowerLimitSetting').address))).be.true();
    should(point('noSuchPoint')).equal(text('localbattery-write.validation.point', { point: 'noSuchPoint' }));
  });
});
