/** The zero feed-in node in real Node-RED against the simulator: direction, limits, safety, messages. */
import should from 'should';
import { REAL_TIME } from '../src/points/catalogue';
import { STATE_CODES } from '../src/control/control';
import type { DeviceSimulator } from '../src/simulator';
import { helper, startSimulator } from './support';
import { lastStatus, nextInput, statusesOf, until } from './node-support';
import { KETTLE_HOUSE, feedMeter, load, writes } from './zero-feed-in-support';

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
    should(Object.keys(decision).sort()).eql(['battery', 'deadBand', 'grid', 'mode', 'reason', 'setpoint', 'soc', 'steady']);
    should(decision.mode).equal('normal');
    should(decision.setpoint).equal(100);
    for (const msg of outputs) should(msg.payload.setpoint ?? 0).be.belowOrEqual(100);
    // 2 % of the simulator's 5.12 kWh (142): what the battery may move by itself if Node-RED stopped.
    await until(() => /^↓ 100 W · grid \+\d+ W · stops by itself within 102 Wh$/.test(lastStatus(node)?.text ?? ''), 5000, 'the status');
    should(simulator.stats.violations).be.empty();
  });

  it("the status keeps the last reading's grid once the setpoint it sent is acknowledged", async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node } = await load(simulator, {});
    node.receive({ payload: 600 });
    await until(() => simulator.controlState === STATE_CODES.discharge, 10000, 'discharging');
    // The acknowledgement's status (green) comes after the decision's (blue, in flight): it used to drop the grid until
    // the next reading. The device's own status ('connected') may come in between.
    const steering = () => statusesOf(node).filter((s) => /^↓/.test(s.text ?? '') && s.fill === 'green');
    await until(() => steering().length > 0, 5000, 'the acknowledged status');
    should(steering().at(-1)?.text).match(/^↓ \d+ W · grid \+600 W/);
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
    await until(() => simulator.controlState === STATE_CODES.standby, 5000, 'standby');
    // The status says why until a reading comes: the decision's, and the one after the device took the standby.
    const texts = () => node.status.getCalls().map((call: any) => call.args[0].text as string);
    const sinceTimeOut = () => texts().slice(texts().indexOf('meter time-out'));
    await until(() => sinceTimeOut().length >= 2, 5000, 'the status after the standby was taken');
    should(sinceTimeOut()).matchEach('meter time-out');
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
});
