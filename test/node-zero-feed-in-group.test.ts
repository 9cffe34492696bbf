/**
 * The zero feed-in node with several devices (issue 25) in real Node-RED: two simulated units in one house behind one
 * meter (a 2000 class at 80 %, a 1600 class at 40 %), one node steering both.
 */
import should from 'should';
import { DeviceSimulator, SharedHouse } from '../src/simulator';
import type { HouseScenario } from '../src/simulator/house';
import { PASSWORD, deviceConfig, helper, startUnits } from './support';
import { errorsOf, lastStatus, until, warningsOf } from './node-support';
import { nodes } from './zero-feed-in-support';
import { held } from './setpoint';
import { pointByName } from '../src/points/catalogue';

const GRID_CHARGING = pointByName('gridCharging')!.address;
const GRID_CHARGING_SETTING = pointByName('gridChargingSetting')!.address;

/** The node on both units, the meter from messages. */
const GROUP_NODE = { id: 'zero1', type: 'localbattery-zero-feed-in', device: 'dev-big', device2: 'dev-small', meterSource: 'message' };

describe('localbattery-zero-feed-in node with several devices', function () {
  this.timeout(60000);
  let sims: DeviceSimulator[] = [];
  const timers: NodeJS.Timeout[] = [];

  afterEach(async function () {
    for (const timer of timers.splice(0)) clearInterval(timer);
    await helper.unload();
    for (const sim of sims) await sim.stop();
    sims = [];
  });

  /** Both units in `house`, the node on both, the first unit's meter fed to it every 500 ms; samples every 100 ms. */
  async function load(house: HouseScenario, zero: Record<string, unknown> = {}) {
    const shared = new SharedHouse({ house, timeScale: 1 });
    const unit = { workingMode: 5, deadTimeS: 0.5, lagS: 1 };
    sims = await startUnits(shared, [
      { ...unit, model: '2000', initialSoc: 80 },
      { ...unit, model: '1600', initialSoc: 40 },
    ]);
    const big = deviceConfig(sims[0], 'dev-big', { name: 'big' });
    const small = deviceConfig(sims[1], 'dev-small', { name: 'small', chargeLimit: 1200, dischargeLimit: 800 });
    const flow = [big.node, small.node, { ...GROUP_NODE, ...zero, wires: [['out']] }, { id: 'out', type: 'helper' }];
    await helper.load(nodes, flow, { ...big.credentials, ...small.credentials });
    const node = helper.getNode('zero1');
    const outputs: any[] = [];
    helper.getNode('out').on('input', (msg: any) => outputs.push(msg));
    const samples: { setpoints: number[]; grid: number }[] = [];
    timers.push(setInterval(() => node.receive({ payload: sims[0].meterPower }), 500));
    timers.push(setInterval(() => samples.push({ setpoints: sims.map(held), grid: sims[0].gridPower }), 100));
    return { node, outputs, samples };
  }

  const opposite = (s: { setpoints: number[] }) => s.setpoints.some((a) => a > 0) && s.setpoints.some((a) => a < 0);

  it('at low load runs one unit, the fuller, and reports both units in each message', async function () {
    const { outputs, samples } = await load({ baseLoadW: 400, noiseW: 0 });
    await until(() => Math.abs(sims[0].meterPower) <= 30 && held(sims[0]) > 0, 20000, 'the grid near 0 W');
    const steady = samples.length;
    await until(() => samples.length >= steady + 30, 10000, '3 s more');
    for (const s of samples.slice(steady)) s.setpoints.should.eql([s.setpoints[0], 0]);
    const units = outputs.at(-1).payload.units;
    should(units.map((u: any) => [u.device, u.active, u.leftOut])).eql([
      ['big', true, false],
      ['small', false, false],
    ]);
    should(units[0].soc).equal(80);
    samples.some(opposite).should.be.false();
  });

  it('never commands one unit to charge while the other discharges, through a reversal with both units running', async function () {
    // 2.5 kW for 12 s with no sun (both discharge), then 2.6 kW of PV over 300 W (both charge).
    const night = { name: 'night', atS: 0, durationS: 12, cloud: 1, rampS: 0.5 };
    const kettle = { name: 'kettle', atS: 0, durationS: 12, loadW: 2200 };
    const { samples } = await load({ baseLoadW: 300, noiseW: 0, pvW: 2600, events: [kettle, night] }, { gridCharge: false });
    await until(() => samples.some((s) => s.setpoints.every((a) => a > 0)), 15000, 'both units discharging');
    await until(() => samples.some((s) => s.setpoints.every((a) => a < 0)), 30000, 'both units charging');
    samples.some(opposite).should.be.false();
  });

  it('leaves out a unit that is switched off, says so, and the other carries the load', async function () {
    const { node, outputs } = await load({ baseLoadW: 400, noiseW: 0 });
    await until(() => Math.abs(sims[0].meterPower) <= 30 && held(sims[0]) > 0, 20000, 'the big unit steering');
    sims[0].switchOff();
    await until(() => outputs.at(-1)?.payload.units[0].leftOut === 'unreachable', 20000, 'the big unit left out');
    should(lastStatus(node)?.text).match(/big left out/);
    await until(() => held(sims[1]) > 0 && Math.abs(sims[1].meterPower) <= 30, 20000, 'the small unit holding the grid near 0 W');
    should(outputs.at(-1).payload.units[1]).containEql({ device: 'small', active: true, leftOut: false });
  });

  it('hands a switched-off unit’s share to the other at its first failed request, before it is left out', async function () {
    const { outputs } = await load({ baseLoadW: 400, noiseW: 0 });
    await until(() => Math.abs(sims[0].meterPower) <= 30 && held(sims[0]) > 0, 20000, 'the big unit steering');
    held(sims[1]).should.equal(0);
    const before = outputs.length;
    sims[0].switchOff();
    await until(() => outputs.at(-1)?.payload.units[0].leftOut === 'unreachable', 20000, 'the big unit left out');
    // Decisions between the switch-off and the leave-out: the small unit already carries the load.
    const early = outputs.slice(before).filter((msg) => msg.payload.units[0].leftOut === false && msg.payload.units[1].setpoint > 0);
    early.length.should.be.above(0);
  });

  it('refuses a device given twice, naming the field', async function () {
    sims = [new DeviceSimulator({ port: 0, udpPort: null, password: PASSWORD })];
    await sims[0].start();
    const device = deviceConfig(sims[0], 'one');
    const flow = [device.node, { id: 'zero1', type: 'localbattery-zero-feed-in', device: 'one', device2: '', device3: 'one', wires: [[]] }];
    await helper.load(nodes, flow, device.credentials);
    const node = helper.getNode('zero1');
    should(lastStatus(node)?.text).equal('invalid settings');
    should(errorsOf(node)).eql(['Invalid device3: got "one", allowed is a device not chosen in another device field']);
  });

  it("charge mode: the group charges from the grid at the mode's power, each unit told the SOC, grid charging on where the unit has it; normal puts it back", async function () {
    const { node, outputs } = await load({ baseLoadW: 400, noiseW: 0 }, { chargeModePower: 1500, chargeModeSoc: 90 });
    for (const sim of sims) sim.setData(GRID_CHARGING_SETTING, [0]);
    await until(() => held(sims[0]) > 0, 20000, 'the big unit discharging');
    node.receive({ mode: 'charge' });
    // 1500 W is above 80 % of one unit's 1200 W or so: both charge, and the total is the mode's power.
    await until(() => sims.every((sim) => held(sim) < 0), 8000, 'both units charging');
    // The 2000 class takes grid charging (1143); the 1600 class has none (no 2618): left alone there, said once.
    await until(() => sims[0].value(GRID_CHARGING) === 1001, 8000, 'grid charging on at the big unit');
    await until(() => warningsOf(node).some((w) => /no grid-charging setting/.test(w)), 8000, 'the small unit without the setting warned');
    warningsOf(node)
      .filter((w) => /1143|grid-charging/.test(w))
      .length.should.equal(1);
    // Once the units' hand-over pulses have ended, the total is the mode's power.
    await until(() => held(sims[0]) + held(sims[1]) === -1500, 8000, "the mode's power in total");
    for (const sim of sims) should(sim.control).containEql({ soc: 90 });
    should(outputs.at(-1).payload.mode).equal('charge');
    node.receive({ mode: 'normal' });
    await until(() => sims[0].value(GRID_CHARGING) === 1000, 8000, 'grid charging back off');
    await until(() => held(sims[0]) > 0 && held(sims[1]) === 0, 15000, 'one unit discharging again');
  });
});
