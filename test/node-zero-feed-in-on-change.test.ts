/**
 * The zero feed-in node in real Node-RED against the simulator, with a meter that publishes only on change (many Home
 * Assistant sensors): silence is "unchanged" up to the time-out; with the default, the time-out still acts.
 */
import should from 'should';
import { STATE_CODES } from '../src/control/control';
import type { DeviceSimulator } from '../src/simulator';
import { helper, startSimulator } from './support';
import { lastStatus, nextInput, until } from './node-support';
import { load } from './zero-feed-in-support';

describe('localbattery-zero-feed-in node: a meter that publishes only on change', function () {
  this.timeout(40000);
  let simulator: DeviceSimulator;
  let feeding: NodeJS.Timeout | undefined;

  afterEach(async function () {
    clearInterval(feeding);
    await helper.unload();
    await simulator?.stop();
  });

  /** Feeds the simulator's meter every 500 ms until the loop holds in its dead band; then the meter falls silent. */
  async function settleThenSilence(node: any, outputs: any[]): Promise<{ at: number; from: number; grid: number }> {
    let last = { at: 0, grid: 0 };
    feeding = setInterval(() => {
      last = { at: Date.now(), grid: simulator.meterPower };
      node.receive({ payload: last.grid });
    }, 500);
    await until(() => simulator.controlState === STATE_CODES.discharge, 10000, 'discharging');
    const steering = outputs.length;
    await until(() => outputs.slice(steering).some((m) => m.payload.reason === 'dead band'), 15000, 'settled in the dead band');
    clearInterval(feeding);
    return { ...last, from: outputs.length };
  }

  const timeoutAt = (outputs: any[]) => outputs.findIndex((m) => m.payload.reason === 'meter timeout');

  it('only on change: a settled loop steers on through a silence longer than the default time-out, then times out', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node, outputs } = await load(simulator, { meterSends: 'on-change', meterInterval: 1, meterTimeout: 10, onTimeout: 'standby' });
    const silence = await settleThenSilence(node, outputs);
    // The last reading counts again each interval: five of them take over 5 s, longer than the 4 s of the next test.
    await until(() => outputs.length >= silence.from + 5, 10000, 'five readings taken again');
    should(Date.now() - silence.at).be.above(5000);
    const repeated = outputs.slice(silence.from);
    should(timeoutAt(repeated)).equal(-1);
    for (const msg of repeated) should(msg.payload.grid).equal(silence.grid);
    should(simulator.controlState).equal(STATE_CODES.discharge);
    should(lastStatus(node)?.text).match(/^↓ \d+ W · grid/);
    // The time-out is the longest silence: it acts then (within an interval, and up to a tick of the 250 ms clock
    // before it: 9.78 s was seen), and the battery stands by.
    await until(() => timeoutAt(outputs) >= 0, 10000, 'the time-out decision');
    const silentMs = Date.now() - silence.at;
    should(silentMs).be.within(9700, 11500);
    should(lastStatus(node)?.text).equal('meter time-out');
    await until(() => simulator.controlState === STATE_CODES.standby, 5000, 'standby');
    should(simulator.stats.violations).be.empty();
  });

  it('only on change: back on after a silence longer than the time-out, the silence counts from the switch-on', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node, outputs } = await load(simulator, { meterSends: 'on-change', meterInterval: 1, meterTimeout: 4, onStop: 'keep' });
    const silence = await settleThenSilence(node, outputs);
    node.receive({ enable: false });
    // Off for longer than the time-out, the meter silent all along (the house did not change).
    await until(() => Date.now() - silence.at > 5000, 8000, 'a silence past the time-out');
    const from = outputs.length;
    const on = Date.now();
    node.receive({ enable: true });
    // The silence counts from the switch-on: readings taken again, and the time-out only the time-out later.
    await until(() => timeoutAt(outputs.slice(from)) >= 0, 8000, 'the time-out decision');
    should(Date.now() - on).be.within(3800, 5500);
    should(timeoutAt(outputs.slice(from))).equal(2);
    for (const msg of outputs.slice(from, from + 2)) should(msg.payload.grid).equal(silence.grid);
  });

  it('every reading (the default): the same silence times out after the time-out, nothing taken again', async function () {
    simulator = await startSimulator({ workingMode: 5 });
    const { node, outputs } = await load(simulator, { meterInterval: 1, meterTimeout: 4, onTimeout: 'standby' });
    const silence = await settleThenSilence(node, outputs);
    await until(() => timeoutAt(outputs) >= 0, 8000, 'the time-out decision');
    should(Date.now() - silence.at).be.within(3700, 5000);
    should(timeoutAt(outputs)).equal(silence.from);
    await until(() => simulator.controlState === STATE_CODES.standby, 5000, 'standby');
  });

  it('only on change keeps the time-out rule: under two meter intervals is refused, naming the time-out', async function () {
    simulator = await startSimulator();
    const { node } = await load(simulator, { meterSends: 'on-change', meterInterval: 3, meterTimeout: 5 });
    should(lastStatus(node)?.text).equal('invalid settings');
    const caught = nextInput(helper.getNode('caught'));
    node.receive({ payload: 1 });
    should((await caught).error.message).match(/meter time-out.*two meter intervals.*6/);
  });

  it('refuses a meter-sends setting other than always or on-change, naming it', async function () {
    simulator = await startSimulator();
    const { node } = await load(simulator, { meterSends: 'sometimes' });
    should(lastStatus(node)?.text).equal('invalid settings');
    const caught = nextInput(helper.getNode('caught'));
    node.receive({ payload: 1 });
    should((await caught).error.message).match(/meter sends.*sometimes.*always.*on-change/);
  });
});
