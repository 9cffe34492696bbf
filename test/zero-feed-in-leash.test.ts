/**
 * The zero feed-in controller's safety against the simulator (issue 34): the leash on each real-time command's SOC
 * field and its renewal as the SOC moves, a device that drops its command (a restart) steered again, the charge mode's
 * SOC from Charge to, and the discharge floor above the device's backup SOC.
 */
import should from 'should';
import { DeviceClient, type ClientSession } from '../src/device/client';
import { ZeroFeedInController, type ZeroFeedInHost } from '../src/control/zero-feed-in';
import { MODEL_CLASSES, REAL_TIME, pointByName } from '../src/points/catalogue';
import { deviceLimits, zeroFeedInSettings } from '../src/editor/inputs';
import type { DeviceSimulator, SimulatorOptions } from '../src/simulator';
import { PASSWORD, startSimulator } from './support';
import { until } from './node-support';

const BATTERY = pointByName('batteryPower')!.address;
const BACKUP_SETTING = pointByName('backupSocSetting')!.address;
/** A house that takes 1500 W from the battery; the battery small, so that its SOC moves a point every 7 s or so. */
const dropped = (warnings: { kind: string }[]) => warnings.filter((w) => w.kind === 'commandDropped');
const DISCHARGING: SimulatorOptions = { workingMode: 5, house: { baseLoadW: 1500, noiseW: 0, pvW: 0 }, capacityKwh: 0.3 };

describe('zero feed-in controller: what the battery does by itself (issue 34)', function () {
  this.timeout(90000);
  let simulator: DeviceSimulator;
  let client: DeviceClient;
  let controller: ZeroFeedInController | undefined;
  let feeding: NodeJS.Timeout | undefined;
  let watching: NodeJS.Timeout | undefined;

  afterEach(async () => {
    clearInterval(feeding);
    clearInterval(watching);
    await controller?.close();
    controller = undefined;
    client?.close();
    await simulator?.stop();
  });

  /** The controller on the simulator, fed the simulator's meter every 500 ms; its warnings and its session. */
  function start(settings: Record<string, unknown> = {}, failures: unknown[] = []) {
    client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, timeoutMs: 3000 });
    const warnings: { kind: string; values: Record<string, number> }[] = [];
    const session: ClientSession = client.session();
    const host: ZeroFeedInHost = {
      decision: () => undefined,
      changed: () => undefined,
      failure: (error) => failures.push(error),
      implausibleBattery: () => undefined,
      meterFault: () => undefined,
      warning: (kind, values) => warnings.push({ kind, values }),
    };
    const zero = new ZeroFeedInController(session, zeroFeedInSettings({ onStop: 'keep', ...settings }, deviceLimits({})), host);
    controller = zero;
    zero.start();
    feeding = setInterval(() => zero.reading(simulator.meterPower), 500);
    return { zero, warnings, session };
  }

  const discharging = () => simulator.workingMode === REAL_TIME.mode && simulator.control.state === 2 && simulator.batteryPower > 1400;

  it('renews the leash as the SOC falls: each command stops the battery within 2 SOC points, one write per point', async () => {
    simulator = await startSimulator({ ...DISCHARGING, initialSoc: 60 });
    start();
    await until(discharging, 20000, 'discharging 1500 W');
    const setData = () => simulator.stats.byOperation['Vendor.SetData'] ?? 0;
    const from = { soc: simulator.exactSoc, field: simulator.control.soc, writes: setData() };
    let widest = 0;
    watching = setInterval(() => (widest = Math.max(widest, simulator.exactSoc - simulator.control.soc)), 50);
    await until(() => simulator.exactSoc <= from.soc - 5, 60000, 'five SOC points down');
    // The battery never stopped at a field the SOC had caught up with: each was renewed ahead of it.
    simulator.batteryPower.should.be.above(1400);
    should(widest).be.belowOrEqual(3, 'the battery may discharge that far by itself');
    (from.field - simulator.control.soc).should.be.aboveOrEqual(4);
    (setData() - from.writes).should.be.belowOrEqual(7);
  });

  for (const to of ['self-consumption', 'standby'] as const)
    it(`steers a device that falls back to ${to} mid-run again within two reads of 6000`, async () => {
      // The load asks for more than the maximum discharge: at its limit the regulator has no move of its own to make,
      // which would carry the mode switch or a new setpoint anyway.
      simulator = await startSimulator({ ...DISCHARGING, house: { baseLoadW: 2200, noiseW: 0, pvW: 0 }, capacityKwh: 5, initialSoc: 60 });
      const { warnings, session } = start({ maxDischarge: 1500 });
      // The reads of 6000 that came back: before the fall-back all of them, after it those asked after it.
      let restarted = false;
      let reads = 0;
      const read = session.read.bind(session);
      session.read = (addresses, options) => {
        const asked = read(addresses, options);
        const counted = restarted;
        if (addresses.includes(BATTERY))
          void asked.then(
            () => (counted === restarted ? reads++ : undefined),
            () => undefined,
          );
        return asked;
      };
      await until(discharging, 20000, 'discharging 1500 W');
      // Steady: the ramp is over (the slowest battery it is built for would have settled), as a battery far short shows.
      await until(() => reads >= 4, 20000, 'four reads of 6000 while it discharges');
      simulator.restart(to);
      restarted = true;
      reads = 0;
      const commanded = () => simulator.workingMode === REAL_TIME.mode && simulator.control.state === 2 && simulator.control.power >= 1400;
      await until(commanded, 20000, 'the command sent again');
      reads.should.be.belowOrEqual(2);
      await until(discharging, 10000, 'discharging again');
      // Working mode 1 tells the drop; a standby in mode 4 only the read-back would (the 2000 class has none).
      if (to === 'self-consumption') dropped(warnings).should.have.length(1);
    });

  it('a derated battery that holds its command falls short on: never sent again as dropped (1600 class, read-back)', async () => {
    simulator = await startSimulator({
      ...DISCHARGING,
      model: '1600',
      capacityKwh: 5,
      initialSoc: 60,
      derating: [{ atS: 0, durationS: 600, maxW: 300 }],
    });
    const { zero, warnings } = start({ maxDischarge: 800 });
    await until(() => zero.regulator.shortfall !== undefined, 30000, 'the shortfall seen');
    const writes = simulator.stats.byOperation['Vendor.SetData'] ?? 0;
    const reads = simulator.stats.byOperation['Vendor.GetData'] ?? 0;
    await until(() => (simulator.stats.byOperation['Vendor.GetData'] ?? 0) >= reads + 4, 30000, 'four more reads');
    dropped(warnings).should.be.empty();
    ((simulator.stats.byOperation['Vendor.SetData'] ?? 0) - writes).should.be.belowOrEqual(1);
  });

  it('the charge mode charges up to Charge to where its own SOC is left empty', async () => {
    simulator = await startSimulator({ workingMode: 5, initialSoc: 40 });
    start({ mode: 'charge', chargeSoc: 80, chargeModePower: 1000 });
    await until(() => simulator.control.state === 1, 20000, 'charging');
    simulator.control.soc.should.equal(80);
  });

  it("keeps within a 1600-class battery's own limits where its configuration says 2400 W, and says so once", async () => {
    // 1500 W of load: the device refuses a discharge over 800 W, which the configuration's 2400 W would let through.
    simulator = await startSimulator({ ...DISCHARGING, model: '1600', capacityKwh: 2, initialSoc: 60 });
    const failures: unknown[] = [];
    const { warnings } = start({}, failures);
    await until(
      () => simulator.control.state === 2 && simulator.control.power === MODEL_CLASSES['1600'].maxDischargePower,
      20000,
      'discharging at its limit',
    );
    await until(() => warnings.length > 0, 10000, 'the warning');
    const seen = simulator.stats.requests;
    await until(() => simulator.stats.requests >= seen + 6, 20000, 'six more requests');
    const { maxChargePower, maxDischargePower } = MODEL_CLASSES['1600'];
    warnings.should.eql([{ kind: 'deviceLimits', values: { charge: maxChargePower, discharge: maxDischargePower } }]);
    failures.should.eql([]);
    simulator.control.power.should.equal(MODEL_CLASSES['1600'].maxDischargePower);
  });

  it('by default discharges down to the factory backup SOC + 2 % without a warning', async () => {
    simulator = await startSimulator({ ...DISCHARGING, capacityKwh: 0.3, initialSoc: 16 });
    const { warnings } = start();
    await until(discharging, 20000, 'discharging 1500 W');
    let lowest = 100;
    watching = setInterval(() => (lowest = Math.min(lowest, simulator.control.state === 2 ? simulator.control.soc : 100)), 50);
    await until(() => simulator.control.state === 0 && simulator.batteryPower === 0, 60000, 'standby at the floor');
    lowest.should.equal(simulator.settings.backupSoc + 2);
    warnings.should.eql([]);
  });

  it("discharges only down to the device's backup SOC + 2 %, and says so once", async () => {
    simulator = await startSimulator({ ...DISCHARGING, capacityKwh: 0.3, initialSoc: 25 });
    simulator.setData(BACKUP_SETTING, [20]).should.be.true();
    const { warnings } = start({ dischargeSoc: 10 });
    await until(discharging, 20000, 'discharging 1500 W');
    let lowest = 100;
    watching = setInterval(() => (lowest = Math.min(lowest, simulator.control.state === 2 ? simulator.control.soc : 100)), 50);
    await until(() => simulator.control.state === 0 && simulator.batteryPower === 0, 60000, 'standby at the floor');
    lowest.should.equal(22);
    simulator.exactSoc.should.be.aboveOrEqual(21.5);
    warnings.should.eql([{ kind: 'backupFloor', values: { floor: 22, dischargeSoc: 10 } }]);
  });
});
