/** The zero feed-in controller (src/control/zero-feed-in.ts) without Node-RED, against the simulator. */
import should from 'should';
import { DeviceClient, type ClientSession } from '../src/device/client';
import { ZeroFeedInController } from '../src/control/zero-feed-in';
import type { MeterFault } from '../src/control/meter-check';
import type { Decision } from '../src/control/regulator';
import { REAL_TIME, pointByName } from '../src/points/catalogue';
import { deviceLimits, zeroFeedInSettings } from '../src/editor/inputs';
import type { DeviceSimulator } from '../src/simulator';
import { PASSWORD, startSimulator } from './support';
import { until } from './node-support';

describe('zero feed-in controller (src/control/zero-feed-in.ts) against the simulator', function () {
  this.timeout(45000);
  let simulator: DeviceSimulator;
  let client: DeviceClient;
  let controller: ZeroFeedInController | undefined;
  let feeding: NodeJS.Timeout | undefined;
  let meterFaults: MeterFault[] = [];

  afterEach(async () => {
    // A right meter never raises the meter check's alarm (the tests of a wrong one empty this).
    should(meterFaults).be.empty();
    clearInterval(feeding);
    await controller?.close();
    controller = undefined;
    client?.close();
    await simulator?.stop();
  });

  function start(settings: Record<string, unknown> = {}, onSession?: (session: ClientSession) => void) {
    client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, timeoutMs: 3000 });
    const decisions: Decision[] = [];
    meterFaults = [];
    const config = zeroFeedInSettings(settings, deviceLimits({}));
    const session = client.session();
    onSession?.(session);
    controller = new ZeroFeedInController(session, config, {
      decision: (decision) => decisions.push(decision),
      changed: () => undefined,
      failure: () => undefined,
      implausibleBattery: () => undefined,
      meterFault: (fault) => meterFaults.push(fault),
    });
    controller.start();
    return { controller, decisions };
  }

  it('while it steers, reads battery power (6000) every 3 s through the queue, never under the interval', async () => {
    simulator = await startSimulator({ workingMode: 5 });
    const { controller } = start({ onStop: 'keep' });
    feeding = setInterval(() => controller.reading(simulator.meterPower), 500);
    await until(() => simulator.workingMode === REAL_TIME.mode && controller.regulator.steering, 10000, 'steering');
    const reads = simulator.stats.byOperation['Vendor.GetData'] ?? 0;
    await until(() => (simulator.stats.byOperation['Vendor.GetData'] ?? 0) >= reads + 2, 25000, 'two reads of 6000');
    should(simulator.stats.violations).be.empty();
  });

  it('a load step that arrives just as a read of 6000 is asked is written in the next free slot, ahead of the read', async () => {
    simulator = await startSimulator({ workingMode: 5, latencyMs: [80, 120] });
    const battery = pointByName('batteryPower')!.address;
    const gets = () => simulator.stats.byOperation['Vendor.GetData'] ?? 0;
    let extra = 0;
    let stateReads = 0;
    let step: { at: number; gets: number } | undefined;
    let answered: { at: number; gets: number } | undefined;
    const { controller } = start({ onStop: 'keep' }, (session) => {
      const read = session.read.bind(session);
      session.read = (addresses, options) => {
        // The third read (steering by then): another writer's setting (a dashboard) takes the next slot, the read is
        // asked, and a 1500 W load step arrives with it. The slot after the other write is the step's.
        if (addresses.includes(battery) && ++stateReads === 3) {
          void client.session().write('feedInPowerLimitSetting', 750);
          const asked = read(addresses, options);
          extra = 1500;
          step = { at: performance.now(), gets: gets() };
          controller.reading(simulator.meterPower + extra);
          return asked;
        }
        return read(addresses, options);
      };
    });
    const started = controller.regulator.started.bind(controller.regulator);
    controller.regulator.started = (now) => {
      if (step && !answered) answered = { at: performance.now(), gets: gets() };
      started(now);
    };
    feeding = setInterval(() => controller.reading(simulator.meterPower + extra), 1000);
    await until(() => answered !== undefined, 30000, 'the load step answered by a write');
    // No read went out before it, and it left one interval after the other write (the device's interval is 1 s).
    should(answered!.gets).equal(step!.gets);
    should(answered!.at - step!.at).be.below(1500);
    should(simulator.stats.violations).be.empty();
  });

  it('a battery that delivers 600 W of a larger setpoint is seen from the reads of 6000 within seconds, and steered from there', async () => {
    // A 1500 W house; the battery accepts any setpoint but gives at most 600 W (cold, derated).
    simulator = await startSimulator({
      workingMode: 5,
      latencyMs: [80, 120],
      house: { baseLoadW: 1500 },
      derating: [{ atS: 0, durationS: 600, maxW: 600 }],
    });
    const { controller, decisions } = start({ onStop: 'keep' });
    feeding = setInterval(() => controller.reading(simulator.meterPower), 1000);
    await until(() => (controller.regulator.setpoint ?? 0) > 700, 15000, 'a setpoint beyond what the battery gives');
    const beyond = performance.now();
    await until(() => controller.regulator.shortfall !== undefined, 15000, 'the shortfall seen');
    // Two reads apart at most (each at the latest 6 s after the one before), with the answer and the models' settling.
    should(performance.now() - beyond).be.below(10000);
    const seen = decisions.length;
    await until(() => decisions.slice(seen).some((d) => d.limitedBy === 'battery'), 5000, 'a decision limited by the battery');
    should(simulator.stats.violations).be.empty();
  });

  it("more of a pulse's way while the battery answers waits for a read of 6000, asked at once: a battery capped at 600 W never winds up", async () => {
    // The matrix's house (600 W of PV surplus, then a 2 kW kettle): the pulse goes out, the battery stops at 600 W, and the readings ask for more
    // the same way. That is what a shortfall looks like until 6000 shows it; moved on, the setpoint wound up to 2100-2400 W.
    simulator = await startSimulator({
      workingMode: 5,
      latencyMs: [80, 120],
      house: { seed: 17, baseLoadW: 300, noiseW: 10, pvW: 900, events: [{ name: 'kettle', atS: 10, durationS: 60, loadW: 2000 }] },
      derating: [{ atS: 5, durationS: 600, maxW: 600 }],
    });
    const gets = () => simulator.stats.byOperation['Vendor.GetData'] ?? 0;
    // Reads of 6000 asked at each battery check, and by the next reading.
    const checks: { gets: number; next?: number }[] = [];
    const { controller, decisions } = start({ onStop: 'keep' });
    feeding = setInterval(() => {
      const open = checks.at(-1);
      if (open && open.next === undefined) open.next = gets();
      controller.reading(simulator.meterPower);
      if (decisions.at(-1)?.reason === 'battery check') checks.push({ gets: gets() });
    }, 1000);
    await until(() => controller.regulator.shortfall !== undefined, 25000, 'the shortfall seen');
    const seen = decisions.length;
    await until(() => decisions.length >= seen + 10, 15000, 'ten readings more');
    // The kettle's need is 1400 W.
    const sent = decisions.filter((d) => d.action === 'set' && d.reason !== 'overdrive' && d.grid !== undefined);
    should(Math.max(...sent.map((d) => d.setpoint!))).be.belowOrEqual(1600);
    // Each check's read went before the next reading: the slot is free, the next reading a second away.
    should(checks).not.be.empty();
    for (const check of checks.filter((c) => c.next !== undefined)) should(check.next).be.above(check.gets);
    should(simulator.stats.violations).be.empty();
  });

  it('reads battery power (6000) in the slot after an overdrive ends, though every reading moves', async () => {
    // Kettle-sized steps every 9 s teach the battery and bring pulses; a ramp of 40 W a second between them makes every
    // reading a move, so no reading that moved nothing leaves a slot for the read.
    simulator = await startSimulator({ workingMode: 5, latencyMs: [80, 120], deadTimeS: 0.5, lagS: 1 });
    const battery = pointByName('batteryPower')!.address;
    // Each request as it went out to the device: reads of 6000 and writes.
    const requests: { at: number; read: boolean }[] = [];
    const { controller, decisions } = start({ onStop: 'keep' }, (session) => {
      const read = session.read.bind(session);
      session.read = (addresses, options) => {
        if (!addresses.includes(battery)) return read(addresses, options);
        const onStart = options?.onStart;
        return read(addresses, {
          ...options,
          onStart: () => {
            requests.push({ at: performance.now(), read: true });
            onStart?.();
          },
        });
      };
    });
    const started = controller.regulator.started.bind(controller.regulator);
    controller.regulator.started = (now) => {
      requests.push({ at: performance.now(), read: false });
      started(now);
    };
    const ends: number[] = [];
    const acknowledge = controller.regulator.acknowledge.bind(controller.regulator);
    let pulsing = false;
    controller.regulator.acknowledge = (value, now) => {
      acknowledge(value, now);
      // The setpoint a pulse headed to has been acknowledged: the pulse ended.
      if (pulsing && value === controller.regulator.steady) {
        pulsing = false;
        ends.push(performance.now());
      }
    };
    const seen = { decisions: 0 };
    const begun = performance.now();
    feeding = setInterval(() => {
      const s = (performance.now() - begun) / 1000;
      const kettle = Math.floor(s / 9) % 2 === 1 ? 2000 : 0;
      controller.reading(simulator.meterPower + kettle + 40 * (s % 9));
      if (decisions.slice(seen.decisions).some((d) => d.reason === 'overdrive')) pulsing = true;
      seen.decisions = decisions.length;
    }, 1000);
    await until(() => ends.length >= 2, 40000, 'two pulses ended');
    await until(() => requests.some((r) => r.at >= ends[1]), 1500, 'a request after the second pulse');
    // The slot after each pulse's last write is a read's, not another write's.
    for (const end of ends) {
      const next = requests.find((r) => r.at >= end);
      should(next?.read).be.true(`the request after the pulse that ended at ${Math.round(end - begun)} ms is a read of 6000`);
      should(next!.at - end).be.below(1500);
    }
    should(simulator.stats.violations).be.empty();
  });

  it('closing with keep while nothing was steered writes nothing; after steering it leaves a steady setpoint', async () => {
    simulator = await startSimulator({ workingMode: 5 });
    const first = start({ onStop: 'keep' });
    await first.controller.close();
    controller = undefined;
    client.close();
    should(simulator.stats.byOperation['Vendor.SetData'] ?? 0).equal(0);
    const second = start({ onStop: 'keep' });
    second.controller.reading(600);
    await until(() => second.controller.regulator.setpoint !== undefined, 10000, 'a setpoint');
    await second.controller.close();
    controller = undefined;
    should(second.controller.regulator.setpoint).equal(second.controller.regulator.steady);
  });
  it("the device's own meter not connected (7120 reads 1001): it says so once and writes nothing", async () => {
    simulator = await startSimulator({ workingMode: 5, meterConnected: false });
    const { controller } = start({ meterSource: 'device' });
    await until(() => controller.meterFault !== undefined, 10000, 'the meter fault');
    should(controller.meterFault).equal('not connected');
    // Several meter intervals later: still nothing steered, nothing written.
    const reads = simulator.stats.byOperation['Vendor.GetData'] ?? 0;
    await until(() => (simulator.stats.byOperation['Vendor.GetData'] ?? 0) >= reads + 3, 10000, 'three more reads');
    should(controller.regulator.steering).be.false();
    should(simulator.stats.byOperation['Vendor.SetData'] ?? 0).equal(0);
    should(meterFaults).eql(['not connected']);
    meterFaults = [];
  });

  it('a frozen device meter (one value while the battery moves) trips the meter time-out; a connected one is steered', async () => {
    simulator = await startSimulator({ workingMode: 5 });
    const meter = pointByName('meterPower')!.address;
    const { controller, decisions } = start({ meterSource: 'device', meterTimeout: 5, onTimeout: 'standby' }, (session) => {
      const read = session.read.bind(session);
      // The meter hangs at 600 W import: the loop discharges, and the meter never shows it.
      session.read = async (addresses, options) => {
        const result = await read(addresses, options);
        if (result.values.has(meter)) result.values.set(meter, 600);
        return result;
      };
    });
    await until(() => decisions.some((d) => d.action === 'set' && d.setpoint! > 0), 10000, 'a discharge');
    await until(() => decisions.some((d) => d.reason === 'meter timeout'), 25000, 'the meter time-out');
    should(controller.regulator.meterTimedOut).be.true();
  });
});
