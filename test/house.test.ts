/** The simulator's house and battery model, in simulated time (timeScale 0, moved by tick): deterministic. */
import should from 'should';
import { REAL_TIME } from '../src/points/catalogue';
import { setpoint } from './setpoint';
import { DeviceSimulator, House, seededRandom, type SimulatorOptions } from '../src/simulator';
import { parseSimulatorArgs } from '../src/cli/simulator';

const FLAT = { baseLoadW: 500, pvW: 200 };

function frozen(options: SimulatorOptions = {}): DeviceSimulator {
  return new DeviceSimulator({ timeScale: 0, udpPort: null, workingMode: REAL_TIME.mode, house: FLAT, ...options });
}

describe('simulator house and battery model', function () {
  it('meter = load - PV - battery, positive importing', () => {
    const sim = frozen();
    sim.tick(1);
    [sim.houseLoad, sim.pvPower, sim.batteryPower, sim.meterPower, sim.gridPower].should.eql([500, 200, 0, 300, 300]);
    setpoint(sim, 1000);
    sim.tick(1);
    sim.batteryPower.should.equal(1000);
    sim.meterPower.should.equal(-700); // exporting
    setpoint(sim, -400);
    sim.tick(1);
    sim.batteryPower.should.equal(-400);
    sim.meterPower.should.equal(700);
  });

  it('follows a setpoint with a first-order lag', () => {
    const sim = frozen({ lagS: 1.5 });
    setpoint(sim, 1000);
    sim.tick(1.5);
    sim.gridPower.should.be.approximately(300 - 1000 * (1 - Math.exp(-1)), 2);
    sim.tick(1.5);
    sim.batteryPower.should.be.approximately(1000 * (1 - Math.exp(-2)), 2);
    sim.tick(15);
    sim.batteryPower.should.equal(1000);
  });

  it('starts to follow only after the dead time, then lags', () => {
    const sim = frozen({ deadTimeS: 1, lagS: 1 });
    sim.tick(2);
    setpoint(sim, -1000);
    sim.tick(0.95);
    sim.batteryPower.should.equal(0);
    sim.meterPower.should.equal(300);
    sim.tick(1.05);
    sim.batteryPower.should.be.approximately(-1000 * (1 - Math.exp(-1)), 2);
  });

  it('delays the meter reading, not the grid power', () => {
    const sim = frozen({ meterDelayS: 2 });
    sim.tick(3);
    setpoint(sim, 300);
    sim.tick(1);
    sim.gridPower.should.be.approximately(0, 1e-9);
    sim.meterPower.should.equal(300);
    sim.tick(1.1);
    sim.meterPower.should.equal(0);
  });

  it('stops at the SOC target and integrates energy against the capacity', () => {
    const sim = frozen();
    const start = sim.exactSoc;
    sim.setData(REAL_TIME.stateAddress, [1, 2400, Math.round(start) + 1]).should.be.true();
    // 1 % of 5.12 kWh is 51.2 Wh: 76.8 s at 2400 W.
    const secondsToTarget = ((Math.round(start) + 1 - start) / 100) * 5120 * (3600 / 2400);
    sim.tick(secondsToTarget - 1);
    sim.batteryPower.should.equal(-2400);
    sim.exactSoc.should.be.approximately(start + ((secondsToTarget - 1) * 2400) / 3600 / 51.2, 1e-6);
    sim.tick(2);
    sim.exactSoc.should.equal(Math.round(start) + 1);
    sim.batteryPower.should.equal(0);
    sim.meterPower.should.equal(300);
  });

  it('covers the net load in self-consumption within its output limit, with the same lag', () => {
    const sim = frozen({ workingMode: 1, lagS: 2, house: { baseLoadW: 1500 } });
    sim.tick(2);
    sim.batteryPower.should.be.approximately(800 * (1 - Math.exp(-1)), 15);
    sim.tick(30);
    sim.batteryPower.should.equal(800); // maxAcOutputPower
    sim.meterPower.should.equal(700);
  });

  it('plays a scenario: a cycling fridge, a kettle, a cloud over the PV, the same noise for the same seed', () => {
    const house = new House({
      seed: 7,
      baseLoadW: 300,
      noiseW: 20,
      appliances: [{ powerW: 100, onS: 10, offS: 20 }],
      pvW: 1000,
      events: [
        { name: 'kettle', atS: 50, durationS: 30, loadW: 2000 },
        { name: 'cloud', atS: 100, durationS: 60, cloud: 0.5, rampS: 10 },
      ],
    });
    const again = new House({ seed: 7, baseLoadW: 300, noiseW: 20 });
    const other = new House({ seed: 8, baseLoadW: 300, noiseW: 20 });
    const noise = (h: House) => [15.2, 16.7, 17.1, 44.5].map((t) => Math.round(h.load(t)));
    noise(again).should.eql(noise(new House({ seed: 7, baseLoadW: 300, noiseW: 20 })));
    noise(again).should.not.eql(noise(other));
    for (const t of [15, 25, 45]) house.load(t).should.be.within(280, 320); // fridge off
    for (const t of [5, 35, 95]) house.load(t).should.be.within(380, 420); // fridge on
    house.load(55).should.be.within(2280, 2320); // kettle, fridge off
    house.load(81).should.be.within(280, 320);
    [house.pv(99), house.pv(105), house.pv(130), house.pv(155), house.pv(161)].should.eql([1000, 750, 500, 750, 1000]);
  });

  it('draws the same sequence from the same seed', () => {
    const [a, b] = [seededRandom(42), seededRandom(42)];
    const first = [a(), a(), a()];
    first.should.eql([b(), b(), b()]);
    first.every((x) => x >= 0 && x < 1).should.be.true();
  });

  it('refuses a negative lag or dead time; the command line takes them in seconds', () => {
    (() => new DeviceSimulator({ lagS: -1 })).should.throw(/lagS/);
    (() => new DeviceSimulator({ deadTimeS: Number.NaN })).should.throw(/deadTimeS/);
    const { options } = parseSimulatorArgs(['--dead-time', '1', '--lag', '1.5', '--meter-delay=2', '--house', 'demo']);
    options.should.containEql({ deadTimeS: 1, lagS: 1.5, meterDelayS: 2 });
    should(options.house?.events?.length).be.above(0);
    (() => parseSimulatorArgs(['--lag', '-1'])).should.throw(/--lag needs seconds/);
    (() => parseSimulatorArgs(['--house', 'constructor'])).should.throw(/--house needs demo/);
  });

  it('feeds a meter outside the device: every 3 s, 1 s late, the grid as it was when taken', () => {
    const sim = frozen({ meterFeed: { everyS: 3, lateS: 1, startS: 0.5 } });
    const taken: { sampledS: number; deliveredS: number; grid: number }[] = [];
    for (let i = 0; i < 100; i++) {
      if (i === 40) setpoint(sim, 500); // at 4 s: the grid falls from 300 to -200
      sim.tick(0.1);
      for (const r of sim.takeMeterReadings()) taken.push({ ...r, deliveredS: sim.simulatedSeconds });
    }
    taken.map((r) => Math.round(r.sampledS * 10) / 10).should.eql([0.5, 3.5, 6.5]);
    for (const r of taken) r.deliveredS.should.be.approximately(r.sampledS + 1, 0.11);
    taken.map((r) => r.grid).should.eql([300, 300, -200]);
  });

  it('feeds a meter at random gaps of 1 to 8 s, the same for the same seed', () => {
    const gaps = (seed: number) => {
      const sim = frozen({ meterFeed: { gapsS: [1, 8], seed } });
      sim.tick(120);
      const times = sim.takeMeterReadings().map((r) => r.sampledS);
      return times.slice(1).map((t, i) => Math.round((t - times[i]) * 100) / 100);
    };
    const first = gaps(5);
    first.length.should.be.within(120 / 8, 120);
    for (const gap of first) gap.should.be.within(1, 8.06);
    first.should.eql(gaps(5));
    first.should.not.eql(gaps(6));
    Math.max(...first).should.be.above(5); // really spread, not a fixed pace
  });

  it('injects single bad readings into the feed at given times', () => {
    const sim = frozen({
      meterFeed: {
        everyS: 1,
        bad: [
          { atS: 4.5, offsetW: 4000 },
          { atS: 7, offsetW: -4000 },
        ],
      },
    });
    sim.tick(10);
    const readings = sim.takeMeterReadings();
    readings.map((r) => r.grid).should.eql([300, 300, 300, 300, 300, 4300, 300, -3700, 300, 300, 300]);
    readings
      .filter((r) => r.bad)
      .map((r) => Math.round(r.sampledS))
      .should.eql([5, 7]);
  });

  it('derates: accepts any setpoint but delivers at most maxW during the window', () => {
    const sim = frozen({ derating: [{ atS: 5, durationS: 10, maxW: 600 }] });
    setpoint(sim, 1500);
    sim.tick(4);
    sim.batteryPower.should.equal(1500);
    sim.tick(2);
    [sim.batteryPower, sim.controlPower].should.eql([600, 1500]);
    setpoint(sim, -2000);
    sim.tick(1);
    sim.batteryPower.should.equal(-600);
    sim.tick(9);
    sim.batteryPower.should.equal(-2000);
  });

  it("refreshes the device's own meter only every 3 s when asked (BK1600 Ultra)", () => {
    const sim = frozen({ meterRefreshS: 3 });
    sim.tick(1);
    setpoint(sim, 500);
    sim.tick(1);
    [sim.gridPower, sim.meterPower, sim.value(11016), sim.meterSampledSeconds].should.eql([-200, 300, 300, 0]);
    sim.tick(1.05);
    [sim.meterPower, sim.value(11016)].should.eql([-200, -200]);
    sim.meterSampledSeconds.should.be.approximately(3, 0.06);
  });

  it('runs a day: PV as a bell from sunrise to sunset, a battery of the given capacity and SOC', () => {
    const house = new House({ pvW: 2000, pvDay: { sunriseS: 6 * 3600, sunsetS: 20 * 3600 } });
    [house.pv(3 * 3600), house.pv(13 * 3600), house.pv(22 * 3600), house.pv(37 * 3600)].should.eql([0, 2000, 0, 2000]);
    house.pv(9.5 * 3600).should.be.approximately(1000, 1);
    const sim = frozen({ capacityKwh: 2, initialSoc: 20 });
    setpoint(sim, -2000);
    sim.tick(360); // 200 Wh into 2 kWh: 10 %
    sim.exactSoc.should.be.approximately(30, 1e-6);
    (() => new House({ pvDay: { sunriseS: 10, sunsetS: 5 } })).should.throw(/pvDay/);
    (() => frozen({ derating: [{ atS: 0, durationS: 0, maxW: 1 }] })).should.throw(/derating/);
  });

  it('keeps time-scale: a running model can be frozen and resumed', () => {
    const sim = frozen();
    sim.timeScale = 0;
    const before = sim.simulatedSeconds;
    sim.simulatedSeconds.should.equal(before);
    sim.tick(2.5);
    sim.simulatedSeconds.should.be.approximately(before + 2.5, 1e-9);
  });
});
