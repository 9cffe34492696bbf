/** The zero feed-in node in real Node-RED against the simulator: stops, redeploys, exits and settings. */
import should from 'should';
import { REAL_TIME } from '../src/points/catalogue';
import { STATE_CODES } from '../src/control/control';
import type { DeviceSimulator } from '../src/simulator';
import { PASSWORD, helper, redeploy, startSimulator } from './support';
import { lastStatus, nextInput, statusesOf, until } from './node-support';
import { KETTLE_HOUSE, feedMeter, load, writes } from './zero-feed-in-support';

describe('localbattery-zero-feed-in node: stops, redeploys and exits', function () {
  this.timeout(40000);
  let simulator: DeviceSimulator;
  let stopFeed: (() => void) | undefined;

  afterEach(async function () {
    stopFeed?.();
    stopFeed = undefined;
    await helper.unload();
    await simulator?.stop();
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
    await redeploy(
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
    await redeploy(
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
    // The write node's answer has come back (its status shows it written): the device state knows the 1000 W.
    const write = helper.getNode('write1');
    await until(() => lastStatus(write)?.fill === 'green', 10000, 'the write answered');
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
