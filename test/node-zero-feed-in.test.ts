/** The zero feed-in node in real Node-RED against the simulator: direction, limits, safety, hand-back. */
import should from 'should';
import deviceNode = require('../nodes/localbattery-device');
import zeroNode = require('../nodes/localbattery-zero-feed-in');
import controlNode = require('../nodes/localbattery-control');
import writeNode = require('../nodes/localbattery-write');
import { REAL_TIME } from '../src/points/catalogue';
import { STATE_CODES } from '../src/control/control';
import type { DeviceSimulator } from '../src/simulator';
import { PASSWORD, deviceConfig, helper, startSimulator } from './support';
import { inEnglish, lastStatus, nextInput, statusesOf, until } from './node-support';

const nodes = [inEnglish(deviceNode), inEnglish(zeroNode), inEnglish(controlNode), inEnglish(writeNode)];

async function load(simulator: DeviceSimulator, zero: Record<string, unknown> = {}) {
  const device = deviceConfig(simulator);
  const flow = [
    device.node as Record<string, unknown>,
    { id: 'zero1', type: 'localbattery-zero-feed-in', device: 'device1', meterSource: 'message', ...zero, wires: [['out']] },
    { id: 'out', type: 'helper' },
    { id: 'catch1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', type: 'helper' },
    { id: 'control1', type: 'localbattery-control', device: 'device1', power: 800, chargeSoc: 100, dischargeSoc: 10, wires: [[]] },
    { id: 'write1', type: 'localbattery-write', device: 'device1', point: 'controlPower', value: 'payload', valueType: 'msg', wires: [[]] },
  ];
  await helper.load(nodes, flow, device.credentials);
  const outputs: any[] = [];
  helper.getNode('out').on('input', (msg: any) => outputs.push(msg));
  return { node: helper.getNode('zero1'), outputs, flow, credentials: device.credentials };
}

/** A kettle on for 8 s every 16 s over 300 W of house; the battery lags 1.5 s after a dead time of 1 s. */
const KETTLE_HOUSE = {
  workingMode: 5,
  deadTimeS: 1,
  lagS: 1.5,
  house: { baseLoadW: 300, events: [{ name: 'kettle', atS: 4, durationS: 8, everyS: 16, loadW: 2000 }] },
};

const writes = (simulator: DeviceSimulator) => simulator.stats.byOperation['Vendor.SetData'] ?? 0;

/** Feeds the simulator's own meter to the node every 500 ms until stopped: the loop closed through the house. */
function feedMeter(simulator: DeviceSimulator, node: any): () => void {
  const timer = setInterval(() => node.receive({ payload: simulator.meterPower }), 500);
  return () => clearInterval(timer);
}

describe('localbattery-zero-feed-in node', function () {
  this.timeout(40000);
  let simulator: DeviceSimulator;
  let stopFeed: (() => void) | undefined;

  afterEach(async function () {
    stopFeed?.();
    stopFeed = undefined;
    await helper.unload();
    await simulator?.stop();
  });

  it('meter from messages: discharges against an import, within the maximum discharge power, one message per decision', async function () {
    // Mode 5 leaves the battery idle: the meter shows the house's net import.
    simulator = await startSimulator({ workingMode: 5 });
    const importing = simulator.meterPower;
    should(importing).be.above(100);
    const { node, outputs } = await load(simulator, { maxDischarge: 100 });
    stopFeed = feedMeter(simulator, node);
    await until(() => simulator.workingMode === REAL_TIME.mode && simulator.controlState === STATE_CODES.discharge, 10000, 'discharging');
    should(simulator.control).containEql({ state: STATE_CODES.discharge, power: 100 });
    await until(() => outputs.some((m) => m.payload.reason === 'limit'), 5000, 'a decision bound by the limit');
    const decision = outputs.find((m) => m.payload.reason === 'limit')!.payload;
    should(Object.keys(decision).sort()).eql(['battery', 'deadBand', 'grid', 'reason', 'setpoint', 'soc', 'steady']);
    should(decision.setpoint).equal(100);
    for (const msg of outputs) should(msg.payload.setpoint ?? 0).be.belowOrEqual(100);
    await until(() => /^↓ 100 W · grid \+\d+ W$/.test(lastStatus(node)?.text ?? ''), 5000, 'the status');
    should(simulator.stats.violations).be.empty();
  });

  it('closes the loop through the simulated house: the meter comes to about 0 W', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node } = await load(simulator);
    stopFeed = feedMeter(simulator, node);
    await until(() => simulator.workingMode === REAL_TIME.mode && Math.abs(simulator.meterPower) <= 50, 15000, 'meter near 0 W');
    should(simulator.stats.violations).be.empty();
  });

  it('learns the battery from the meter and overdrives a kettle step; the needed setpoint follows one interval later', async function () {
    simulator = await startSimulator(KETTLE_HOUSE);
    const { node } = await load(simulator);
    const decisions: { payload: any; at: number }[] = [];
    helper.getNode('out').on('input', (msg: any) => decisions.push({ payload: msg.payload, at: performance.now() }));
    stopFeed = feedMeter(simulator, node);
    // The first kettle steps show the lag; a later one starts with an overdrive.
    await until(() => decisions.some((d) => d.payload.reason === 'overdrive'), 38000, 'an overdrive');
    const index = decisions.findIndex((d) => d.payload.reason === 'overdrive');
    const pulse = decisions[index];
    const following = () => decisions.slice(index + 1).find((d) => d.payload.setpoint !== pulse.payload.setpoint);
    await until(() => following() !== undefined, 5000, 'the needed setpoint');
    const next = following()!;
    // Sent when the pulse was acknowledged (held at a power limit: a reading later), and short of the pulse.
    should(next.at - pulse.at).be.belowOrEqual(2500);
    should(Math.abs(next.payload.setpoint - pulse.payload.battery)).be.below(Math.abs(pulse.payload.setpoint - pulse.payload.battery));
    should(simulator.stats.violations).be.empty();
  });

  it('charges only from surplus, unless grid charging is allowed', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node } = await load(simulator, { target: 300 });
    // Exporting 200 W: only those charge the battery, although the target asks for 300 W of import.
    node.receive({ payload: -200 });
    await until(() => simulator.controlState === STATE_CODES.charge, 10000, 'charging');
    should(simulator.control.power).equal(200);
    await helper.unload();
    const allowed = await load(simulator, { target: 300, gridCharge: true, onStop: 'keep' });
    allowed.node.receive({ payload: '-200' });
    await until(() => simulator.control.power === 500, 10000, 'charging 500 W');
    should(simulator.controlState).equal(STATE_CODES.charge);
  });

  it('ignores nonsense readings: NaN, text, 10 MW, an object without meterPower', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node, outputs } = await load(simulator, { onStop: 'keep' });
    for (const payload of [NaN, 'abc', 10e6, { meterPower: 'x' }, { power: 300 }, null]) node.receive({ payload });
    await until(() => lastStatus(node)?.text?.includes('reading ignored') === true, 5000, 'ignored status');
    // Give a reading the time it takes to reach the device: none goes.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    should(writes(simulator)).equal(0);
    should(outputs).be.empty();
    node.receive({ payload: { meterPower: 400 } });
    await until(() => simulator.controlState === STATE_CODES.discharge, 10000, 'discharging after a real reading');
  });

  it('a silent meter leads to standby within the time-out plus one interval', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node, outputs } = await load(simulator, { meterTimeout: 2, onTimeout: 'standby' });
    const feeding = setInterval(() => node.receive({ payload: 500 }), 500);
    await until(() => simulator.controlState === STATE_CODES.discharge, 10000, 'discharging').finally(() => clearInterval(feeding));
    const last = Date.now();
    node.receive({ payload: 480 });
    await until(() => outputs.some((m) => m.payload.reason === 'meter timeout'), 6000, 'the time-out decision');
    should(Date.now() - last).be.belowOrEqual(3000);
    should(lastStatus(node)?.text).equal('meter time-out');
    await until(() => simulator.controlState === STATE_CODES.standby, 5000, 'standby');
  });

  it('a silent meter hands back to self-consumption when so configured', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node } = await load(simulator, { meterTimeout: 2, onTimeout: 'self-consumption', onStop: 'keep' });
    // Readings until the node steers (its first setpoint may wait behind the start's read of the working mode).
    const feeding = setInterval(() => node.receive({ payload: 500 }), 500);
    await until(() => simulator.controlState === STATE_CODES.discharge, 10000, 'discharging').finally(() => clearInterval(feeding));
    await until(() => simulator.workingMode === 1, 8000, 'working mode 1');
  });

  it('msg.enable false hands back (working mode 1) and readings then move nothing; true steers again', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node } = await load(simulator);
    node.receive({ payload: 500 });
    await until(() => simulator.workingMode === REAL_TIME.mode && simulator.controlState === STATE_CODES.discharge, 10000, 'discharging');
    node.receive({ enable: false });
    await until(() => simulator.workingMode === 1, 8000, 'working mode 1');
    should(lastStatus(node)?.text).equal('off');
    const before = writes(simulator);
    node.receive({ payload: 900 });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    should(writes(simulator)).equal(before);
    node.receive({ enable: true, payload: 900 });
    await until(() => simulator.workingMode === REAL_TIME.mode, 10000, 'real-time control again');
  });

  it("takes another writer's setpoint as its state: the next reading steers from there", async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node, outputs } = await load(simulator, { onStop: 'keep' });
    stopFeed = feedMeter(simulator, node);
    await until(() => simulator.workingMode === REAL_TIME.mode && Math.abs(simulator.meterPower) <= 50, 15000, 'meter near 0 W');
    // A control node (a dashboard button) charges with 800 W: the grid imports that much more.
    helper.getNode('control1').receive({ payload: -800 });
    await until(() => simulator.controlState === STATE_CODES.charge, 10000, 'charging');
    const from = outputs.length;
    // Zero feed-in is on: it takes the battery back to the load, in one step from -800 W (not from its own last one).
    await until(() => simulator.controlState !== STATE_CODES.charge && Math.abs(simulator.meterPower) <= 50, 15000, 'meter near 0 W again');
    const netLoad = simulator.meterPower + simulator.batteryPower;
    const moves = outputs.slice(from).filter((m) => m.payload.reason === 'load');
    should(moves[0].payload.setpoint).be.within(netLoad - 60, netLoad + 60);
    should(simulator.stats.violations).be.empty();
  });

  it('refuses a msg.enable that is not true or false', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node } = await load(simulator);
    const caught = nextInput(helper.getNode('caught'));
    node.receive({ enable: 'false', payload: 1 });
    should((await caught).error.message).match(/msg\.enable/);
  });

  it('msg.target: a new target from the next reading on; the loop then holds about +300 W import', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    // Grid charging allowed: +300 W is reachable whatever the house needs.
    const { node } = await load(simulator, { gridCharge: true, onStop: 'keep' });
    stopFeed = feedMeter(simulator, node);
    await until(() => simulator.workingMode === REAL_TIME.mode && Math.abs(simulator.meterPower) <= 50, 15000, 'meter near 0 W');
    // Alone, without a reading: taken, and the readings that follow steer to it.
    node.receive({ target: 300 });
    await until(() => Math.abs(simulator.meterPower - 300) <= 50, 15000, 'meter near +300 W');
    // Text, with enable, as a number entity or a change node may send it.
    node.receive({ target: '-100', enable: true });
    await until(() => Math.abs(simulator.meterPower + 100) <= 50, 15000, 'meter near -100 W');
    should(simulator.stats.violations).be.empty();
  });

  it('refuses a msg.target out of range or no number, naming it and the range; nothing changes', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node, outputs } = await load(simulator, { onStop: 'keep' });
    for (const target of [20000, 'abc', true]) {
      const caught = nextInput(helper.getNode('caught'));
      node.receive({ target, enable: false, payload: 400 });
      const message = (await caught).error.message as string;
      should(message).match(/msg\.target/);
      should(message).match(/-10000 to 10000 W/);
    }
    // Neither the target nor enable took: a reading steers to 0 W as configured.
    should(outputs).be.empty();
    node.receive({ payload: 400 });
    await until(() => outputs.length > 0, 5000, 'a decision');
    should(outputs[0].payload).containEql({ setpoint: 400, reason: 'start' });
  });

  for (const how of [undefined, 'standby', 'keep'] as const) {
    it(`stop${how ? ` with onStop ${how}` : ''} leaves the battery ${how === 'keep' ? 'as it is' : how === 'standby' ? 'in standby' : 'in self-consumption (the default)'}`, async function () {
      simulator = await startSimulator({ workingMode: 5 });
      const { node } = await load(simulator, how ? { onStop: how } : {});
      node.receive({ payload: 600 });
      await until(() => simulator.controlState === STATE_CODES.discharge, 10000, 'discharging');
      const before = writes(simulator);
      await helper.unload();
      if (how === 'keep') {
        should(writes(simulator)).equal(before);
        should(simulator.controlState).equal(STATE_CODES.discharge);
      } else if (how === 'standby') {
        should(simulator.workingMode).equal(REAL_TIME.mode);
        should(simulator.controlState).equal(STATE_CODES.standby);
      } else {
        should(simulator.workingMode).equal(1);
      }
      should(simulator.stats.violations).be.empty();
    });
  }

  it('a stop while the device does not answer still ends, bounded, without an uncaught error', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node } = await load(simulator);
    node.receive({ payload: 600 });
    await until(() => simulator.controlState === STATE_CODES.discharge, 10000, 'discharging');
    simulator.setFault('timeout');
    const started = Date.now();
    // The hand-back waits for the client's time-out (2 s here), far under Node-RED's 15 s for a close.
    await helper.unload();
    should(Date.now() - started).be.below(12000);
    simulator.setFault(null);
  });

  it('settings from environment variables (${NAME}), as Node-RED puts them in', async function () {
    process.env.LB_ZERO_MAX = '150';
    try {
      simulator = await startSimulator({ workingMode: 5 });
      const { node } = await load(simulator, { maxDischarge: '${LB_ZERO_MAX}', onStop: 'keep' });
      node.receive({ payload: 900 });
      await until(() => simulator.controlState === STATE_CODES.discharge, 10000, 'discharging');
      should(simulator.control.power).equal(150);
    } finally {
      delete process.env.LB_ZERO_MAX;
    }
  });

  it('a full redeploy hands back before the new flow steers again; the password appears nowhere', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const log = helper.log();
    const { node, outputs, flow, credentials } = await load(simulator);
    node.receive({ payload: 600 });
    await until(() => simulator.controlState === STATE_CODES.discharge, 10000, 'discharging');
    const seen = [...statusesOf(node)];
    await helper.setFlows(
      flow.map((n) => (n.id === 'zero1' ? { ...n, name: 'renamed' } : n)),
      'full',
      credentials,
    );
    should(simulator.workingMode).equal(1);
    const fresh = helper.getNode('zero1');
    fresh.receive({ payload: 300 });
    await until(() => simulator.workingMode === REAL_TIME.mode, 10000, 'the new node steering');
    const everything = JSON.stringify([seen, statusesOf(fresh), outputs, log.args]);
    should(everything).not.containEql(PASSWORD);
    should(simulator.stats.violations).be.empty();
  });

  it('the device meter: reads 11016 with battery power and SOC through the queue and steers by it', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { outputs } = await load(simulator, { meterSource: 'device', meterInterval: 1 });
    await until(() => simulator.workingMode === REAL_TIME.mode && Math.abs(simulator.meterPower) <= 50, 15000, 'meter near 0 W');
    const decision = outputs.at(-1).payload;
    should(decision.soc).be.within(0, 100);
    should(decision.battery).be.a.Number();
    should(simulator.stats.violations).be.empty();
  });

  it('invalid settings: shown at deploy, and every message fails with the setting named', async function () {
    simulator = await startSimulator();
    const { node } = await load(simulator, { maxDischarge: 99999 });
    should(lastStatus(node)?.text).equal('invalid settings');
    const caught = nextInput(helper.getNode('caught'));
    node.receive({ payload: 1 });
    should((await caught).error.message).match(/maximum discharge power/);
    should(writes(simulator)).equal(0);
  });

  it('switched off with keep in the middle of a pulse (the Dashboard switch): the battery is left at the setpoint the pulse was heading to', async function () {
    simulator = await startSimulator(KETTLE_HOUSE);
    const { node } = await load(simulator, { onStop: 'keep' });
    // At the pulse's message, as a dashboard switch would: the loop goes off with the pulse on its way (a wait for the
    // message could see it late on a loaded machine, after the decisions that follow it).
    let pulse: any;
    helper.getNode('out').on('input', (msg: any) => {
      if (pulse || msg.payload.reason !== 'overdrive') return;
      pulse = msg.payload;
      node.receive({ enable: false });
    });
    stopFeed = feedMeter(simulator, node);
    await until(() => pulse !== undefined, 38000, 'an overdrive');
    stopFeed();
    stopFeed = undefined;
    const signed = () =>
      simulator.controlState === STATE_CODES.charge
        ? -simulator.control.power
        : simulator.controlState === STATE_CODES.discharge
          ? simulator.control.power
          : 0;
    await until(() => signed() === pulse.steady, 5000, `the steady setpoint ${pulse.steady} W`);
    const writesThen = writes(simulator);
    await until(() => lastStatus(node)?.text === 'off', 5000, 'off');
    should(signed()).equal(pulse.steady);
    should(signed()).not.equal(pulse.setpoint);
    should(writes(simulator)).equal(writesThen);
  });

  it('after a redeploy the first step starts from the battery power the start read (6000), not from 0 W', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node, flow, credentials } = await load(simulator);
    node.receive({ payload: 600 });
    await until(() => simulator.controlState === STATE_CODES.discharge, 10000, 'discharging');
    // Only this node is redeployed: it hands back (self-consumption), the queue remembers that write of the mode.
    await helper.setFlows(
      flow.map((n) => (n.id === 'zero1' ? { ...n, name: 'renamed' } : n)),
      'nodes',
      credentials,
    );
    should(simulator.workingMode).equal(1);
    // The battery covers the house; the new node's start read of 6000 sees that.
    await until(() => simulator.batteryPower > 150, 10000, 'the battery covering the house');
    const reads = simulator.stats.byOperation['Vendor.GetData'] ?? 0;
    const fresh = helper.getNode('zero1');
    const outputs: any[] = [];
    helper.getNode('out').on('input', (msg: any) => outputs.push(msg));
    await until(() => (simulator.stats.byOperation['Vendor.GetData'] ?? 0) > reads, 5000, 'the start read');
    // Its answer is on its way back (a local exchange takes milliseconds).
    await new Promise((resolve) => setTimeout(resolve, 500));
    const battery = simulator.batteryPower;
    fresh.receive({ payload: simulator.meterPower });
    await until(() => outputs.length > 0, 5000, 'a decision');
    should(outputs[0].payload.setpoint).be.within(battery - 80, battery + 80);
  });

  it('stop and disable act only if the node has steered: no write before the first setpoint', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node } = await load(simulator, { onStop: 'standby' });
    // Before anything happened the status is no green "self-consumption".
    should(lastStatus(node)).containEql({ fill: 'grey', text: 'waiting for the meter' });
    node.receive({ enable: false });
    node.receive({ enable: true });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await helper.unload();
    should(writes(simulator)).equal(0);
    should(simulator.workingMode).equal(5);
  });

  it('a message with msg.target is no meter reading, though a change node left msg.payload', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node, outputs } = await load(simulator, { onStop: 'keep' });
    node.receive({ target: 100, payload: 100 });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    should(outputs).be.empty();
    should(writes(simulator)).equal(0);
  });

  it('follows a write of 47016 alone by another node: the next reading steers from that power', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node, outputs } = await load(simulator, { onStop: 'keep' });
    node.receive({ payload: 600 });
    await until(() => simulator.controlState === STATE_CODES.discharge && simulator.control.power === 600, 10000, 'discharging');
    // Another node writes the power alone: the battery now discharges 1000 W (the state stays discharge).
    helper.getNode('write1').receive({ payload: 1000 });
    await until(() => simulator.control.power === 1000, 10000, '1000 W');
    const from = outputs.length;
    // The grid shows the 400 W more the battery gives: the load is still 600 W, so back to 600 W in one step.
    node.receive({ payload: -400 });
    await until(() => outputs.length > from, 5000, 'a decision');
    should(outputs[from].payload.setpoint).be.within(600 - 30, 600 + 30);
  });

  it('msg.payload.batteryPower: positive discharging; an implausible value (the other sign) is ignored with one warning', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node, outputs } = await load(simulator, { onStop: 'keep' });
    const warnings: string[] = [];
    const warn = node.warn.bind(node);
    node.warn = (message: string) => {
      warnings.push(message);
      warn(message);
    };
    node.receive({ payload: { meterPower: 600, batteryPower: 0 } });
    await until(() => simulator.control.power === 600, 10000, 'discharging 600 W');
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const from = outputs.length;
    // Settled: the grid shows 0 W; a meter that counts discharging as negative says -600 W.
    for (let i = 0; i < 2; i++) node.receive({ payload: { meterPower: 0, batteryPower: -600 } });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    for (const msg of outputs.slice(from)) should(msg.payload.setpoint).equal(600);
    should(warnings.filter((w) => /batteryPower/.test(w))).have.length(1);
  });

  it('refuses a meter time-out under two meter intervals, naming both', async function () {
    simulator = await startSimulator();
    const { node } = await load(simulator, { meterInterval: 3, meterTimeout: 5 });
    should(lastStatus(node)?.text).equal('invalid settings');
    const caught = nextInput(helper.getNode('caught'));
    node.receive({ payload: 1 });
    should((await caught).error.message).match(/meter time-out.*two meter intervals.*6/);
  });
});
