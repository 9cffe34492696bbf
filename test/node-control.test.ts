/** The real-time control node against the simulator, and its editor validation. */
import fs from 'node:fs';
import path from 'node:path';
import should from 'should';
import deviceNode = require('../nodes/localbattery-device');
import controlNode = require('../nodes/localbattery-control');
import writeNode = require('../nodes/localbattery-write');
import readNode = require('../nodes/localbattery-read');
import { REAL_TIME, WORKING_MODES, pointByName, writePointByAddress, type ReadPoint } from '../src/points/catalogue';
import { CONTROL_DEFAULTS, MAX_CONTROL_SECONDS, STATE_CODES } from '../src/control/control';
import type { DeviceSimulator } from '../src/simulator';
import { PASSWORD, deviceConfig, helper, redeploy, startSimulator } from './support';
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

const nodes = [inEnglish(deviceNode), inEnglish(controlNode), inEnglish(writeNode)];
// The core nodes are CommonJS files found by path.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const core = (file: string) => require(require.resolve(`@node-red/nodes/core/${file}`));
const TIME = '\\d{1,2}:\\d{2}:\\d{2}( [AP]M)?';
const power = writePointByAddress(REAL_TIME.powerAddress)!;
const soc = writePointByAddress(REAL_TIME.socAddress)!;
// Node settings inside the catalogue bounds, and apart from the simulator's start SOC.
const SETTINGS = { power: power.min! * 10, chargeSoc: soc.max! - 10, dischargeSoc: soc.min! + 15 };

function flow(simulator: DeviceSimulator, control: Record<string, unknown> = {}) {
  const device = deviceConfig(simulator);
  return {
    flow: [
      device.node as Record<string, unknown>,
      {
        id: 'control1',
        type: 'localbattery-control',
        device: 'device1',
        ...SETTINGS,
        clamp: false,
        switchMode: true,
        modeCheck: 600,
        repeat: 30,
        skipped: 'pass',
        ...control,
        wires: [['out']],
      },
      { id: 'out', type: 'helper' },
      {
        id: 'mode',
        type: 'localbattery-write',
        device: 'device1',
        point: 'workingModeSetting',
        value: 'payload',
        valueType: 'msg',
        wires: [['modeOut']],
      },
      { id: 'modeOut', type: 'helper' },
      { id: 'catch1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
      { id: 'caught', type: 'helper' },
      { id: 'complete1', type: 'complete', scope: ['control1'], uncaught: false, wires: [['completed']] },
      { id: 'completed', type: 'helper' },
    ],
    credentials: device.credentials,
  };
}

async function load(simulator: DeviceSimulator, control: Record<string, unknown> = {}) {
  const { flow: nodesFlow, credentials } = flow(simulator, control);
  await helper.load(nodes, nodesFlow, credentials);
  return helper.getNode('control1');
}

/** Sends `payload` to the control node and resolves with the output msg. */
async function control(payload: unknown, extra: Record<string, unknown> = {}): Promise<any> {
  const output = nextInput(helper.getNode('out'));
  helper.getNode('control1').receive({ payload, ...extra });
  return output;
}

const batteryState = pointByName('batteryState') as ReadPoint;
const batteryStateLabel = (simulator: DeviceSimulator) =>
  batteryState.enum!.find((o) => o.value === Number(simulator.value(batteryState.address)))!.label;

describe('localbattery-control node', function () {
  let simulator: DeviceSimulator;

  afterEach(async function () {
    await helper.unload();
    await simulator?.stop();
  });

  it('a negative number charges: switches to real-time control first, then writes state, power and SOC in one request', async function () {
    simulator = await startSimulator();
    should(simulator.workingMode).not.equal(REAL_TIME.mode);
    should(simulator.soc).be.below(SETTINGS.chargeSoc);
    const node = await load(simulator);
    const msg = await control(-800, { topic: 'keep me' });

    should(msg.topic).equal('keep me');
    should(msg.payload).eql({
      state: 'charge',
      stateCode: STATE_CODES.charge,
      power: 800,
      soc: SETTINGS.chargeSoc,
      clamped: false,
      belowMinimum: false,
      modeChanged: true,
      skipped: false,
    });
    should(msg.skipped).be.false();
    should(simulator.workingMode).equal(REAL_TIME.mode);
    should(simulator.control).eql({ state: STATE_CODES.charge, power: 800, soc: SETTINGS.chargeSoc });
    should(simulator.batteryPower).be.below(0);
    should(batteryStateLabel(simulator)).equal('Charging');
    // The message came before the node's read of the mode had gone out: the read was withdrawn and the mode written
    // without it, the setpoint second.
    should(simulator.stats.byOperation).eql({ 'Vendor.SetData': 2 });
    should(simulator.stats.violations).be.empty();

    const statuses = statusesOf(node);
    // Connected once the mode write is answered: no request came before it.
    should(statuses.slice(0, -1)).eql([
      { fill: 'blue', shape: 'ring', text: text('localbattery-control.status.sending') },
      { fill: 'blue', shape: 'ring', text: text('localbattery-control.status.switching') },
      { fill: 'green', shape: 'dot', text: text('localbattery-device.status.connected') },
    ]);
    should(statuses.at(-1)).have.properties({ fill: 'green', shape: 'dot' });
    should(statuses.at(-1)!.text).match(new RegExp(`^charge 800 W · ${TIME}$`));
  });

  it('takes an object payload, and switches the mode only once', async function () {
    simulator = await startSimulator();
    await load(simulator);
    let msg = await control({ state: 'discharge', power: 600, soc: SETTINGS.dischargeSoc + 5 });
    should(msg.payload).have.properties({ state: 'discharge', power: 600, soc: SETTINGS.dischargeSoc + 5, modeChanged: true });
    should(simulator.control).eql({ state: STATE_CODES.discharge, power: 600, soc: SETTINGS.dischargeSoc + 5 });

    msg = await control({ state: 'discharge' });
    should(msg.payload).have.properties({ state: 'discharge', power: SETTINGS.power, soc: SETTINGS.dischargeSoc, modeChanged: false });
    should(simulator.control).eql({ state: STATE_CODES.discharge, power: SETTINGS.power, soc: SETTINGS.dischargeSoc });
    should(simulator.batteryPower).be.above(0);
    should(batteryStateLabel(simulator)).equal('Discharging');
    should(simulator.stats.byOperation).eql({ 'Vendor.SetData': 3 });
    should(lastStatus(helper.getNode('control1'))!.text).match(new RegExp(`^discharge ${SETTINGS.power} W · ${TIME}$`));
  });

  it('rejects out-of-range and malformed setpoints without any request', async function () {
    simulator = await startSimulator();
    const node = await load(simulator);
    await until(() => lastStatus(node)?.text === text('localbattery-device.status.connected'), 5000, 'the mode read at start');
    let outputs = 0;
    helper.getNode('out').on('input', () => outputs++);
    const payloads = [
      power.max! + 1,
      -(power.max! + 1),
      { state: 'charge', power: power.min! - 1 },
      { state: 'charge', power: power.max! + 1 },
      { state: 'discharge', soc: soc.min! - 1 },
      { state: 'charge', soc: soc.max! + 1 },
      { state: 'boost' },
      'nonsense',
      { soc: 50 },
    ];
    for (const payload of payloads) {
      const caught = nextInput(helper.getNode('caught'));
      node.receive({ payload });
      const error = (await caught).error;
      should(error.code).equal('INVALID_VALUE');
      should(error.source.id).equal('control1');
    }
    await sleep(50);
    should(outputs).equal(0);
    // Only the read of the working mode at start.
    should(simulator.stats.byOperation).eql({ 'Vendor.GetData': 1 });
    should(lastStatus(node)).eql({ fill: 'red', shape: 'ring', text: 'invalid value' });
  });

  it('clamps with clamp on and says so; the same setpoint again is skipped and passed on', async function () {
    simulator = await startSimulator();
    const node = await load(simulator, { clamp: true });
    let msg = await control(power.max! + 600);
    should(msg.payload).have.properties({ state: 'discharge', power: power.max, clamped: true, skipped: false });
    should(simulator.control.power).equal(power.max);
    should(lastStatus(node)!.text).match(new RegExp(`^discharge ${power.max} W \\(clamped\\) · ${TIME}$`));

    const requests = simulator.stats.requests;
    msg = await control(power.max! + 600);
    should(msg.skipped).be.true();
    should(msg.payload).have.properties({ power: power.max, clamped: true, skipped: true });
    should(simulator.stats.requests).equal(requests);
    should(lastStatus(node)).eql({ fill: 'green', shape: 'ring', text: `discharge ${power.max} W (clamped) · repeat skipped` });
  });

  it('drops repeats within the repeat time, sends them with msg.force, and rests below the minimum power', async function () {
    simulator = await startSimulator();
    const node = await load(simulator, { skipped: 'drop' });
    const outputs: any[] = [];
    helper.getNode('out').on('input', (msg: any) => outputs.push(msg));
    const completed: any[] = [];
    helper.getNode('completed').on('input', (msg: any) => completed.push(msg));

    node.receive({ payload: -800 });
    await until(() => outputs.length === 1, 5000, 'the first setpoint');
    const requests = simulator.stats.requests;
    node.receive({ payload: -800.2 });
    await until(() => completed.length === 2, 2000, 'the repeat to complete');
    should(outputs).have.length(1);
    should(simulator.stats.requests).equal(requests);

    const caught = nextInput(helper.getNode('caught'));
    node.receive({ payload: -800, force: 'yes' });
    should((await caught).error.message).match(/msg\.force.*"yes".*true or false/);
    should(simulator.stats.requests).equal(requests);

    node.receive({ payload: -800, force: true });
    await until(() => outputs.length === 2, 5000, 'the forced setpoint');
    should(simulator.stats.requests).equal(requests + 1);

    node.receive({ payload: -(power.min! - 1) });
    await until(() => outputs.length === 3, 5000, 'standby');
    should(outputs[2].payload).have.properties({ state: 'standby', power: power.min, soc: SETTINGS.dischargeSoc, belowMinimum: true });
    should(simulator.control).eql({ state: STATE_CODES.standby, power: power.min, soc: SETTINGS.dischargeSoc });
    should(simulator.batteryPower).equal(0);
    should(lastStatus(node)!.text).match(new RegExp(`^standby \\(below ${power.min} W\\) · ${TIME}$`));
    should(simulator.stats.violations).be.empty();
  });

  it('sends only the newest of setpoints arriving faster than the device takes requests', async function () {
    simulator = await startSimulator();
    const node = await load(simulator, { repeat: 0 });
    const outputs: any[] = [];
    helper.getNode('out').on('input', (msg: any) => outputs.push(msg));
    const completed: any[] = [];
    helper.getNode('completed').on('input', (msg: any) => completed.push(msg));
    const setpoints = [600, 610, 620, 630, 640, 650];
    for (const watts of setpoints) {
      node.receive({ payload: watts });
      await sleep(100);
    }
    await until(() => completed.length === setpoints.length, 8000, 'every message to complete');
    should(outputs.at(-1).payload.power).equal(setpoints.at(-1));
    should(simulator.control.power).equal(setpoints.at(-1));
    // The mode switch (the read at start withdrawn for it), then at most two control writes: the device is never flooded.
    should(simulator.stats.byOperation['Vendor.GetData']).be.undefined();
    should(simulator.stats.byOperation['Vendor.SetData']).be.belowOrEqual(3);
    should(simulator.stats.violations).be.empty();
    should(statusesOf(node).map((s) => s.text)).containEql(text('localbattery-control.status.superseded'));
  });

  it('reports a refused write to Catch when it may not switch the mode', async function () {
    simulator = await startSimulator();
    const node = await load(simulator, { switchMode: false });
    let outputs = 0;
    helper.getNode('out').on('input', () => outputs++);
    const caught = nextInput(helper.getNode('caught'));
    node.receive({ payload: 500 });
    const error = (await caught).error;
    should(error.code).equal('REFUSED');
    should(error.message).match(/real-time control/);
    should(outputs).equal(0);
    should(simulator.stats.byOperation).eql({ 'Vendor.SetData': 1 });
    should(simulator.workingMode).not.equal(REAL_TIME.mode);
    should(lastStatus(node)).eql({ fill: 'red', shape: 'ring', text: 'refused' });
  });

  it('switches back at once when another node changed the mode, without a refused write', async function () {
    simulator = await startSimulator();
    await load(simulator);
    await control(-800);
    const other = WORKING_MODES.find((m) => m.value !== REAL_TIME.mode)!;
    const changed = nextInput(helper.getNode('modeOut'));
    helper.getNode('mode').receive({ payload: other.value });
    await changed;
    should(simulator.workingMode).equal(other.value);

    const msg = await control(600);
    should(msg.payload).have.properties({ state: 'discharge', power: 600, modeChanged: true });
    should(simulator.workingMode).equal(REAL_TIME.mode);
    should(simulator.control).eql({ state: STATE_CODES.discharge, power: 600, soc: SETTINGS.dischargeSoc });
    // Switch, write (the read at start withdrawn); the other node's switch; switch, write.
    should(simulator.stats.byOperation).eql({ 'Vendor.SetData': 5 });
  });

  it('switches back and sends once more when the device refuses because the mode was changed in the app', async function () {
    simulator = await startSimulator();
    await load(simulator);
    await control(-800);
    simulator.changeWorkingMode(WORKING_MODES.find((m) => m.value !== REAL_TIME.mode)!.value);
    const msg = await control(600);
    should(msg.payload).have.properties({ state: 'discharge', power: 600, modeChanged: true });
    should(simulator.workingMode).equal(REAL_TIME.mode);
    should(simulator.control).eql({ state: STATE_CODES.discharge, power: 600, soc: SETTINGS.dischargeSoc });
    // Switch, write (the read at start withdrawn); refused write, switch, write.
    should(simulator.stats.byOperation).eql({ 'Vendor.SetData': 5 });
    should(simulator.stats.violations).be.empty();
  });

  it('reports a refused mode switch to Catch and lets the next message try again', async function () {
    simulator = await startSimulator();
    const node = await load(simulator);
    simulator.setFault('resultFalse', 1);
    const caught = nextInput(helper.getNode('caught'));
    node.receive({ payload: 700 });
    const error = (await caught).error;
    should(error.code).equal('REFUSED');
    should(error.message).containEql(String(REAL_TIME.modeAddress));
    should(lastStatus(node)).eql({ fill: 'red', shape: 'ring', text: 'refused' });

    const msg = await control(700);
    should(msg.payload).have.properties({ state: 'discharge', power: 700, modeChanged: true });
    should(simulator.control.power).equal(700);
  });

  it('reports invalid settings and a missing device configuration', async function () {
    simulator = await startSimulator();
    let node = await load(simulator, { repeat: -1 });
    should(lastStatus(node)).eql({ fill: 'red', shape: 'ring', text: text('localbattery-control.status.invalidConfig') });
    let caught = nextInput(helper.getNode('caught'));
    node.receive({ payload: 800 });
    should((await caught).error.message).match(/repeat time/);
    await helper.unload();

    node = await load(simulator, { modeCheck: '0x10' });
    should(lastStatus(node)).eql({ fill: 'red', shape: 'ring', text: text('localbattery-control.status.invalidConfig') });
    caught = nextInput(helper.getNode('caught'));
    node.receive({ payload: 800 });
    should((await caught).error.message).match(/mode re-check time.*"0x10"/);
    await helper.unload();

    node = await load(simulator, { device: '' });
    should(lastStatus(node)).eql({ fill: 'red', shape: 'ring', text: text('localbattery-control.errors.noDevice') });
    caught = nextInput(helper.getNode('caught'));
    node.receive({ payload: 800 });
    should((await caught).error.message).containEql(text('localbattery-control.errors.noDevice'));
    should(simulator.stats.requests).equal(0);
  });

  it('sends nothing on and sets no status after a redeploy while it is switching the mode', async function () {
    simulator = await startSimulator();
    const node = await load(simulator);
    node.receive({ payload: -800 });
    // The mode read at start, then the mode write.
    await until(() => simulator.stats.requests === 2, 3000, 'the mode write');
    const after = watchAfterClose(node);
    await helper.unload();
    await sleep(1500);
    should(after).eql([]);
    should(simulator.stats.requests).equal(2);
  });

  it('reads the mode when it starts: the first setpoint is one request on a device in real-time control', async function () {
    simulator = await startSimulator({ workingMode: REAL_TIME.mode });
    await load(simulator);
    await until(() => simulator.stats.byOperation['Vendor.GetData'] === 1, 3000, 'the mode read at start');
    const msg = await control(-800);
    should(msg.payload).have.properties({ state: 'charge', modeChanged: false });
    should(simulator.stats.byOperation).eql({ 'Vendor.GetData': 1, 'Vendor.SetData': 1 });
  });

  it('after a redeploy it reads the mode again: changed meanwhile in the app, the first setpoint is two requests', async function () {
    simulator = await startSimulator({ workingMode: REAL_TIME.mode });
    const { flow: deployed, credentials } = flow(simulator);
    await helper.load(nodes, deployed, credentials);
    await control(-800);
    simulator.changeWorkingMode(WORKING_MODES.find((m) => m.value !== REAL_TIME.mode)!.value);
    const reads = simulator.stats.byOperation['Vendor.GetData'] ?? 0;
    await redeploy(
      deployed.map((n) => (n.id === 'control1' ? { ...n, name: 'redeployed' } : n)),
      'full',
      credentials,
    );
    await until(() => simulator.stats.byOperation['Vendor.GetData'] === reads + 1, 3000, 'the mode read at the new start');
    const writes = simulator.stats.byOperation['Vendor.SetData'];
    const msg = await control(600);
    should(msg.payload).have.properties({ state: 'discharge', power: 600, modeChanged: true });
    // The mode, then the setpoint: none refused on the strength of what the old deployment saw.
    should(simulator.stats.byOperation['Vendor.SetData'] - writes).equal(2);
    should(simulator.control).eql({ state: STATE_CODES.discharge, power: 600, soc: SETTINGS.dischargeSoc });
  });

  it('a throw in send becomes the message error, never an unhandled rejection', async function () {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      simulator = await startSimulator({ workingMode: REAL_TIME.mode });
      const node = await load(simulator);
      node.send = () => {
        throw new Error('the next node failed');
      };
      const caught = nextInput(helper.getNode('caught'));
      node.receive({ payload: -800 });
      should((await caught).error.message).match(/the next node failed/);
      await sleep(10);
      should(rejections).eql([]);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });
});

/**
 * The Cheap-hours charging example as shipped, armed and pointed at a slow simulator (answers after 1 s, as the
 * specification says): "start" (a read, then grid charging on and the control node charging 1500 W to 90 %) and, 0.4 s later, "stop"
 * (working mode 1, grid charging off). The last command wins by the time it was given, on a busy line too.
 */
describe('Cheap-hours charging example: stop 0.4 s after start on a slow device', function () {
  this.timeout(20000);
  let simulator: DeviceSimulator;

  afterEach(async function () {
    await helper.unload();
    await simulator?.stop();
  });

  async function deploy(): Promise<{ flow: Record<string, any>[]; writes: string[] }> {
    const file = path.join(__dirname, '..', '..', 'examples', 'Cheap-hours charging.json');
    const example: Record<string, any>[] = JSON.parse(fs.readFileSync(file, 'utf8'));
    const device = example.find((n) => n.type === 'localbattery-device')!;
    const writers = example.filter((n) => n.type === 'localbattery-write' || n.type === 'localbattery-control').map((n) => n.id);
    // Armed (every node enabled), on a tab as the editor's Import puts it.
    const flow = [
      { id: 'tab', type: 'tab', label: 'Cheap-hours charging' },
      ...example.map(({ d: _disabled, ...n }) =>
        n.type === 'debug'
          ? { id: n.id, z: 'tab', type: 'helper', wires: [] }
          : n.id === device.id
            ? { ...n, host: '127.0.0.1', port: simulator.port }
            : { ...n, z: 'tab' },
      ),
      { id: 'done', z: 'tab', type: 'complete', scope: writers, uncaught: false, wires: [['completed']] },
      { id: 'completed', z: 'tab', type: 'helper' },
    ];
    await helper.load(
      [
        ...nodes,
        readNode,
        core('common/20-inject.js'),
        core('common/90-comment.js'),
        core('function/10-function.js'),
        core('common/24-complete.js'),
      ],
      flow,
      {
        [device.id]: { password: PASSWORD },
      },
    );
    // Every write the device accepted, in order.
    const client = helper.getNode(device.id).client;
    const writes: string[] = [];
    const writeRange = client.writeRange.bind(client);
    client.writeRange = async (at: number, values: number[], context: unknown) => {
      await writeRange(at, values, context);
      writes.push(`${at}=${JSON.stringify(values)}`);
    };
    return { flow, writes };
  }

  for (const line of ["busy (the control node's start read of the mode in flight)", 'idle']) {
    it(`ends in working mode 1, not charging, with the line ${line}`, async function () {
      simulator = await startSimulator({ workingMode: 1, latencyMs: 1000 });
      const { flow, writes } = await deploy();
      const control = flow.find((n) => n.type === 'localbattery-control')!;
      await until(() => simulator.stats.requests === 1, 3000, 'the start read at the device');
      if (line === 'idle')
        await until(
          () => lastStatus(helper.getNode(control.id))?.text === text('localbattery-device.status.connected'),
          3000,
          'its answer',
        );
      const completed: unknown[] = [];
      helper.getNode('completed').on('input', (msg: unknown) => completed.push(msg));
      helper.getNode(flow.find((n) => n.type === 'inject' && /start/.test(n.name))!.id).receive({});
      await sleep(400);
      helper.getNode(flow.find((n) => n.type === 'inject' && /05:00/.test(n.name))!.id).receive({});
      await until(() => completed.length === 4, 10000, 'all four commands done');
      should(simulator.workingMode).equal(1);
      should(simulator.control.state).not.equal(STATE_CODES.charge);
      should(simulator.value(pointByName('gridCharging')!.address)).equal(1000);
      should(writes).not.containEql(`${REAL_TIME.stateAddress}=[1,1500,90]`);
      should(writes.at(-1)).not.equal(`${REAL_TIME.modeAddress}=[${REAL_TIME.mode}]`);
      should(simulator.stats.violations).be.empty();
    });
  }
});

describe('localbattery-control editor validation', function () {
  let editor: EditorUnderTest;

  beforeEach(function () {
    editor = loadEditorScript('localbattery-control');
  });

  const check = (field: string, v: unknown) => editor.definition.defaults[field].validate.call({}, v, {});

  it("checks power and SOC with the runtime's rules once they have arrived: whole numbers in bounds, empty for the default", async function () {
    // Before the rules arrive nothing is refused: the runtime checks at deploy.
    should(check('power', String(power.max! + 1))).be.true();
    should(check('chargeSoc', '10.5')).be.true();

    editor.finishLoad();
    await until(() => editor.revalidated > 0, 1000, 'revalidation after loading');
    should(check('power', '12.5')).equal(text('localbattery-control.validation.power', { min: power.min, max: power.max }));
    should(check('chargeSoc', '10.5')).equal(text('localbattery-control.validation.soc', { min: soc.min, max: soc.max }));
    should(check('chargeSoc', '')).be.true();
    should(check('power', '')).be.true();
    should(check('power', String(power.max))).be.true();
    should(check('power', String(power.min))).be.true();
    should(check('power', String(power.max! + 1))).equal(text('localbattery-control.validation.power', { min: power.min, max: power.max }));
    should(check('power', String(power.min! - 1))).be.a.String();
    should(check('chargeSoc', String(soc.max! + 1))).equal(text('localbattery-control.validation.soc', { min: soc.min, max: soc.max }));
    should(check('dischargeSoc', String(soc.min! - 1))).be.a.String();
    should(check('dischargeSoc', String(soc.min))).be.true();
    should(editor.definition.defaults.power.validate.call({}, 'x')).be.false();
  });

  it('wants repeat and re-check times from 0 to the maximum the runtime serves', async function () {
    check('repeat', '0');
    editor.finishLoad();
    await sleep(0);
    const max = MAX_CONTROL_SECONDS;
    for (const field of ['repeat', 'modeCheck']) {
      should(check(field, '0')).be.true();
      should(check(field, '2.5')).be.true();
      should(check(field, String(max))).be.true();
      should(check(field, '-1')).equal(text('localbattery-control.validation.seconds', { max }));
      should(check(field, String(max + 1))).be.a.String();
      should(check(field, '1e400')).be.a.String();
      should(check(field, 'soon')).be.a.String();
      // Empty: the default, as at run time.
      should(check(field, '')).be.true();
    }
  });

  it("accepts ${VAR} in every number field, as Node-RED's own validators do", async function () {
    check('power', '1');
    editor.finishLoad();
    await until(() => editor.revalidated > 0, 1000, 'revalidation after loading');
    for (const field of ['power', 'chargeSoc', 'dischargeSoc', 'repeat', 'modeCheck']) {
      should(check(field, '${BATTERY_SETTING}')).be.true(field);
      should(check(field, '${}')).be.a.String();
      should(check(field, '${OPEN')).be.a.String();
    }
  });

  it('starts with defaults that pass its own validation', async function () {
    check('power', '1');
    editor.finishLoad();
    await until(() => editor.revalidated > 0, 1000, 'revalidation after loading');
    for (const spec of Object.values<any>(editor.definition.defaults)) {
      if (spec.validate) should(spec.validate.call({}, spec.value, {})).be.true();
    }
  });

  it("offers the runtime's defaults (Node-RED reads them before the catalogue could arrive, so they are checked here)", function () {
    const defaults = editor.definition.defaults;
    const offered = {
      power: defaults.power.value,
      chargeSoc: defaults.chargeSoc.value,
      dischargeSoc: defaults.dischargeSoc.value,
      clamp: defaults.clamp.value,
      repeatSeconds: defaults.repeat.value,
      modeCheckSeconds: defaults.modeCheck.value,
    };
    should(offered).eql({ ...CONTROL_DEFAULTS });
  });
});
