/**
 * Battery modes (src/control/modes.ts): the policy alone, and the zero feed-in node in real Node-RED against the
 * simulator: msg.mode normal, hold, charge and standby obeyed at the device within two of its intervals, shown in the
 * status and each output message, grid charging switched for the charge mode, a pulse ended cleanly.
 */
import should from 'should';
import { REAL_TIME, pointByName } from '../src/points/catalogue';
import { STATE_CODES } from '../src/control/control';
import { CHARGE_RESUME_PCT, entrySetpoint, fixedSetpoint, modeSetpoint, parseMode } from '../src/control/modes';
import type { DeviceSimulator } from '../src/simulator';
import { helper, startSimulator } from './support';
import { lastStatus, nextInput, until } from './node-support';
import { KETTLE_HOUSE, feedMeter, load } from './zero-feed-in-support';

const GRID_CHARGING = pointByName('gridCharging')!.address;
const GRID_CHARGING_SETTING = pointByName('gridChargingSetting')!.address;
/** The device's minimum interval between requests in these tests (the device configuration's default). */
const INTERVAL_MS = 1000;

/** The simulator's setpoint in W, signed like 6000 (positive discharges); undefined out of real-time control. */
function signed(simulator: DeviceSimulator): number | undefined {
  if (simulator.workingMode !== REAL_TIME.mode) return undefined;
  const { state, power } = simulator.control;
  return state === STATE_CODES.charge ? -power : state === STATE_CODES.discharge ? power : 0;
}

/** Resolves with the ms from now until `check` holds, polled every 10 ms. */
async function timeUntil(check: () => boolean, ms: number, what: string): Promise<number> {
  const start = performance.now();
  await until(check, ms, what);
  return performance.now() - start;
}

describe('battery modes: the policy (src/control/modes.ts)', function () {
  it('takes the four modes (any case, trimmed) and refuses anything else, naming the field and the allowed values', function () {
    should(parseMode(' Hold ', 'msg.mode')).equal('hold');
    for (const bad of ['boost', '', 1, null, { mode: 'hold' }]) {
      should(() => parseMode(bad, 'msg.mode')).throw(/msg\.mode.*one of "normal", "hold", "charge", "standby"/);
    }
  });

  it('hold never discharges: a discharge becomes 0, a charge stays; normal passes every setpoint', function () {
    should(modeSetpoint('hold', 500)).equal(0);
    should(modeSetpoint('hold', -300)).equal(-300);
    should(modeSetpoint('normal', 500)).equal(500);
    should(entrySetpoint('hold', 800)).equal(0);
    should(entrySetpoint('hold', undefined)).be.undefined();
    should(entrySetpoint('normal', 800)).be.undefined();
  });

  it('charge charges up to its SOC, then stands by until the SOC fell by the resume margin', function () {
    const charge = { power: 1000, soc: 80 };
    should(fixedSetpoint('charge', charge, undefined, false)).eql({ watts: -1000, soc: 80, reason: 'mode' });
    should(fixedSetpoint('charge', charge, 79, true)).eql({ watts: -1000, soc: 80, reason: 'mode' });
    should(fixedSetpoint('charge', charge, 80, true)).eql({ watts: 0, reason: 'soc' });
    should(fixedSetpoint('charge', charge, 80 - CHARGE_RESUME_PCT + 1, false)).eql({ watts: 0, reason: 'soc' });
    should(fixedSetpoint('charge', charge, 80 - CHARGE_RESUME_PCT - 1, false).watts).equal(-1000);
    should(fixedSetpoint('standby', charge, 10, false)).eql({ watts: 0, reason: 'mode' });
  });
});

describe('battery modes: the zero feed-in node against the simulator', function () {
  this.timeout(60000);
  let simulator: DeviceSimulator;
  /** What each test started and the next must not inherit: feeds, then the flow, then the simulator. */
  const running: { stopFeed?: () => void } = {};

  afterEach(async function () {
    running.stopFeed?.();
    delete running.stopFeed;
    await helper.unload();
    await simulator?.stop();
  });

  /** Readings of `grid` W every 500 ms (a meter the test plays). */
  function feedFixed(node: any, grid: number): () => void {
    const timer = setInterval(() => node.receive({ payload: grid }), 500);
    return () => clearInterval(timer);
  }

  /**
   * The node on an idle simulator (its meter shows the house's import) with the meter fed, once it discharges;
   * `gridChargingOff`: the device's grid charging off first, as most owners leave it (the simulator starts with it on).
   */
  async function discharging(
    simulatorOptions: Parameters<typeof startSimulator>[0] = {},
    settings: Record<string, unknown> = {},
    gridChargingOff = false,
  ) {
    simulator = await startSimulator({ workingMode: 5, ...simulatorOptions });
    if (gridChargingOff) simulator.setData(GRID_CHARGING_SETTING, [0]);
    const loaded = await load(simulator, settings);
    running.stopFeed = feedMeter(simulator, loaded.node);
    await until(() => (signed(simulator) ?? 0) > 0, 15000, 'discharging against the import');
    return loaded;
  }

  /** Sends msg.mode and resolves with the ms until the simulator holds `setpoint`. */
  function obeyed(node: any, mode: string, setpoint: number): Promise<number> {
    node.receive({ mode });
    return timeUntil(() => signed(simulator) === setpoint, 4000, `${mode}: ${setpoint} W at the device`);
  }

  it('hold: a discharging battery stands by within two intervals and stays so; a surplus still charges; normal discharges again', async function () {
    const { node, outputs } = await discharging();
    should(await obeyed(node, 'hold', 0)).be.belowOrEqual(2 * INTERVAL_MS);
    await until(() => /^hold · standby/.test(lastStatus(node)?.text ?? ''), 3000, 'the status to show hold');
    // Six more readings with the house importing: never a discharge, and every message says hold.
    const seen = outputs.length;
    const setpoints: number[] = [];
    const sampler = setInterval(() => setpoints.push(signed(simulator) ?? 0), 50);
    await until(() => outputs.length >= seen + 6, 10000, 'six more decisions');
    clearInterval(sampler);
    should(Math.max(...setpoints)).equal(0);
    for (const msg of outputs.slice(seen)) {
      should(msg.payload.mode).equal('hold');
      should(msg.payload.setpoint ?? 0).be.belowOrEqual(0);
    }

    // A surplus (the meter exporting 400 W) still charges the battery.
    running.stopFeed!();
    running.stopFeed = feedFixed(node, -400);
    await until(() => (signed(simulator) ?? 0) < 0, 8000, 'charging from the surplus in hold');

    // Normal again: the import is met by a discharge.
    running.stopFeed();
    running.stopFeed = feedMeter(simulator, node);
    node.receive({ mode: 'normal' });
    await until(() => (signed(simulator) ?? 0) > 0, 8000, 'discharging again in normal');
    await until(() => /^↓ \d+ W/.test(lastStatus(node)?.text ?? ''), 3000, 'the status without a mode');
    should(outputs.at(-1).payload.mode).equal('normal');
    should(simulator.stats.violations).be.empty();
  });

  it('charge: from the grid at its power and SOC within two intervals, grid charging on for it and off after; normal steers again', async function () {
    const { node, outputs } = await discharging({ initialSoc: 50 }, { chargeModePower: 1000, chargeModeSoc: 80 }, true);
    should(simulator.value(GRID_CHARGING)).equal(1000);
    should(await obeyed(node, 'charge', -1000)).be.belowOrEqual(2 * INTERVAL_MS);
    should(simulator.control).containEql({ state: STATE_CODES.charge, power: 1000, soc: 80 });
    await until(() => simulator.value(GRID_CHARGING) === 1001, 5000, 'grid charging on');
    await until(() => lastStatus(node)?.text?.startsWith('charge mode · ↑ 1000 W') === true, 3000, 'the status');
    await until(() => outputs.at(-1)?.payload.mode === 'charge', 3000, 'a message in charge');
    // The import of the charge does not make the node discharge.
    const seen = outputs.length;
    await until(() => outputs.length >= seen + 4, 8000, 'four more decisions');
    should(signed(simulator)).equal(-1000);

    node.receive({ mode: 'normal' });
    await until(() => (signed(simulator) ?? 0) > 0, 2 * INTERVAL_MS + 2000, 'discharging again in normal');
    await until(() => simulator.value(GRID_CHARGING) === 1000, 5000, 'grid charging back off');
    should(simulator.stats.violations).be.empty();
  });

  it('charge leaves grid charging on where it was on; at its SOC the battery stands by (the mode set at start)', async function () {
    simulator = await startSimulator({ workingMode: 5, initialSoc: 85 });
    should(simulator.value(GRID_CHARGING)).equal(1001);
    const { node, outputs } = await load(simulator, { mode: 'charge', chargeModeSoc: 80 });
    // No meter needed: the start's read of the SOC decides.
    await until(() => signed(simulator) === 0, 8000, 'standby at the SOC');
    await until(() => outputs.some((m) => m.payload.reason === 'soc' && m.payload.mode === 'charge'), 3000, 'the decision at the SOC');
    should(simulator.value(GRID_CHARGING)).equal(1001);
    await until(() => lastStatus(node)?.text?.startsWith('charge mode · standby') === true, 3000, 'the status');
    node.receive({ mode: 'normal' });
    // Normal steers from the next reading.
    node.receive({ payload: simulator.meterPower });
    await until(() => outputs.at(-1)?.payload.mode === 'normal', 3000, 'normal');
    await helper.unload();
    // Never switched by the node, never switched back.
    should(simulator.value(GRID_CHARGING)).equal(1001);
  });

  it('standby: setpoint 0 within two intervals whatever the meter says; refuses a msg.mode it does not know, naming the allowed ones', async function () {
    const { node, outputs } = await discharging();
    should(await obeyed(node, 'standby', 0)).be.belowOrEqual(2 * INTERVAL_MS);
    const seen = outputs.length;
    await until(() => outputs.length >= seen + 4, 8000, 'four more decisions');
    should(signed(simulator)).equal(0);
    should(outputs.at(-1).payload).containEql({ mode: 'standby', setpoint: 0 });
    should(lastStatus(node)?.text).startWith('standby mode · standby');

    const caught = nextInput(helper.getNode('caught'));
    node.receive({ mode: 'boost' });
    const error = (await caught).error.message as string;
    should(error)
      .match(/msg\.mode/)
      .and.match(/"normal", "hold", "charge", "standby"/);
    should(outputs.at(-1).payload.mode).equal('standby');
  });

  it('hold in the middle of a pulse: the pulse ends at once, the battery goes to no discharge and stays there', async function () {
    simulator = await startSimulator(KETTLE_HOUSE);
    const { node } = await load(simulator);
    // At the pulse's message, as a tariff flow might: the mode changes with the pulse on its way.
    let pulse: any;
    helper.getNode('out').on('input', (msg: any) => {
      if (pulse || msg.payload.reason !== 'overdrive' || msg.payload.setpoint <= 0) return;
      pulse = msg.payload;
      node.receive({ mode: 'hold' });
    });
    running.stopFeed = feedMeter(simulator, node);
    await until(() => pulse !== undefined, 45000, 'a discharge overdrive');
    await until(() => signed(simulator) === 0, 2 * INTERVAL_MS + 1000, 'no discharge in hold');
    const setpoints: number[] = [];
    const sampler = setInterval(() => setpoints.push(signed(simulator) ?? 0), 50);
    const seen = simulator.stats.byOperation['Vendor.GetData'] ?? 0;
    // Three more reads of the device (3 s each while steering) with the kettle coming and going.
    await until(() => (simulator.stats.byOperation['Vendor.GetData'] ?? 0) >= seen + 3, 15000, 'three more reads');
    clearInterval(sampler);
    should(Math.max(...setpoints)).equal(0);
    should(simulator.stats.violations).be.empty();
  });
});
