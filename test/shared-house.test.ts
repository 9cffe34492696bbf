/** Several simulated batteries behind one meter (issue 25): one house, one clock, the meter shows every unit. */
import should from 'should';
import { REAL_TIME } from '../src/points/catalogue';
import { setpoint } from './setpoint';
import { DeviceSimulator, SharedHouse, type SharedHouseOptions, type SimulatorOptions } from '../src/simulator';

const FLAT = { baseLoadW: 500, pvW: 200 };

function house(options: SharedHouseOptions = {}): SharedHouse {
  return new SharedHouse({ timeScale: 0, house: FLAT, ...options });
}

function unit(shared: SharedHouse, options: SimulatorOptions = {}): DeviceSimulator {
  return new DeviceSimulator({ udpPort: null, workingMode: REAL_TIME.mode, sharedHouse: shared, ...options });
}

describe('simulator: several batteries behind one meter', function () {
  it('two units of different classes on one house: the meter shows load − PV − both batteries + their self-use', () => {
    const shared = house();
    const big = unit(shared, { model: '2000', initialSoc: 80 });
    const small = unit(shared, { model: '1600', initialSoc: 40, serialNumber: 'SIM0000000000002' });
    big.tick(1);
    [big.meterPower, small.meterPower, big.gridPower].should.eql([300, 300, 300]);
    setpoint(big, 1000);
    setpoint(small, 400);
    big.tick(1);
    [big.batteryPower, small.batteryPower].should.eql([1000, 400]);
    // 500 − 200 − 1400 + 2 × 30 W of self-use
    [big.meterPower, small.meterPower, small.value(21028), big.value(11016)].should.eql([-1040, -1040, -1040, -1040]);
    [big.soc, small.soc].should.eql([80, 40]);
    // Each keeps its own class limits: the 1600 class refuses 1000 W of discharge, the 2000 class takes it.
    small.setData(REAL_TIME.stateAddress, [2, 1000, 5]).should.be.false();
    big.setData(REAL_TIME.stateAddress, [2, 2400, 5]).should.be.true();
  });

  it('draws a unit’s self-use only while it is active, not in standby; a battery alone draws none', () => {
    const shared = house();
    const a = unit(shared);
    const b = unit(shared, { serialNumber: 'SIM0000000000002', selfUseW: 25 });
    a.tick(1);
    [a.active, b.active, a.gridPower].should.eql([false, false, 300]);
    setpoint(a, 300);
    a.tick(1);
    [a.active, b.active].should.eql([true, false]);
    a.gridPower.should.be.approximately(30, 1e-9);
    setpoint(b, -100);
    a.tick(1);
    b.active.should.be.true();
    a.gridPower.should.be.approximately(300 - 300 + 100 + 30 + 25, 1e-9);
    const drawn = shared.selfUseWh;
    setpoint(a, 0);
    setpoint(b, 0);
    a.tick(36);
    [a.active, b.active, a.gridPower].should.eql([false, false, 300]);
    shared.selfUseWh.should.be.approximately(drawn, 1e-9);
    // A lag's tail after standby counts only while it moves 20 W or more.
    const lagging = unit(house(), { lagS: 2 });
    setpoint(lagging, 1000);
    lagging.tick(20);
    setpoint(lagging, 0);
    lagging.tick(2 * Math.log(1000 / 25));
    [lagging.active, lagging.batteryPower].should.eql([true, 25]);
    lagging.tick(2 * Math.log(25 / 15));
    [lagging.active, lagging.batteryPower].should.eql([false, 15]);
    // One battery in its own house: the figures it always had.
    const alone = new DeviceSimulator({ timeScale: 0, udpPort: null, workingMode: REAL_TIME.mode, house: FLAT });
    setpoint(alone, 300);
    alone.tick(1);
    [alone.active, alone.gridPower].should.eql([true, 0]);
    alone.sharedHouse.selfUseWh.should.equal(0);
  });

  it('measures the energy that goes from one unit into the other: min(charging, discharging) over time', () => {
    const shared = house({ selfUseW: 0 });
    const a = unit(shared);
    const b = unit(shared, { serialNumber: 'SIM0000000000002' });
    setpoint(a, 1000);
    setpoint(b, 400);
    a.tick(36);
    shared.movedBetweenUnitsWh.should.equal(0);
    setpoint(b, -600);
    a.tick(36); // 600 W for 36 s: 6 Wh from a into b
    shared.movedBetweenUnitsWh.should.be.approximately(6, 1e-6);
    shared.dischargedWh.should.be.approximately(2 * 10 + 4, 1e-6); // a: 1000 W for 72 s, b: 400 W for 36 s
    shared.chargedWh.should.be.approximately(6, 1e-6);
    a.gridPower.should.be.approximately(300 - 400, 1e-9);
    setpoint(a, 0);
    b.tick(36);
    shared.movedBetweenUnitsWh.should.be.approximately(6, 1e-6);
  });

  it('a unit switched off stops at once, draws no self-use, keeps its SOC and answers nothing', async () => {
    const shared = house({ selfUseW: 30 });
    const a = unit(shared, { port: 0, initialSoc: 70 });
    const b = unit(shared, { serialNumber: 'SIM0000000000002' });
    await a.start();
    try {
      setpoint(a, 600);
      setpoint(b, 200);
      a.tick(10);
      a.gridPower.should.be.approximately(500 - 200 - 800 + 60, 1e-6);
      const soc = a.exactSoc;
      a.switchOff();
      a.tick(10);
      a.batteryPower.should.equal(0);
      a.active.should.be.false();
      a.exactSoc.should.equal(soc);
      a.gridPower.should.be.approximately(500 - 200 - 200 + 30, 1e-6);
      await a.ready();
      const refused = await fetch(`${a.url}/rpc/Vendor.GetData?config={"t":[6000]}`).then(
        () => false,
        () => true,
      );
      refused.should.be.true();
    } finally {
      await a.stop();
    }
  });

  it('steps every unit on one clock, each with its own dead time and lag', () => {
    const shared = house({ selfUseW: 0 });
    const slow = unit(shared, { deadTimeS: 1, lagS: 2 });
    const fast = unit(shared, { serialNumber: 'SIM0000000000002' });
    slow.tick(1);
    setpoint(slow, -1000);
    setpoint(fast, 500);
    fast.tick(0.5);
    slow.simulatedSeconds.should.be.approximately(1.5, 1e-9);
    fast.simulatedSeconds.should.equal(slow.simulatedSeconds);
    [slow.batteryPower, fast.batteryPower].should.eql([0, 500]);
    fast.tick(1.5); // the slow unit acts from 2 s on, and lags
    slow.batteryPower.should.be.approximately(-1000 * (1 - Math.exp(-0.5)), 2);
    // The passing of energy while the slow one comes up: charging ≤ the fast unit's 500 W.
    shared.movedBetweenUnitsWh.should.be.above(0).and.below((500 * 1) / 3600);
    slow.timeScale = 0.5;
    fast.timeScale.should.equal(0.5);
  });

  it('refuses house options on a device that joins a shared house, and bad house options', () => {
    const shared = house();
    (() => unit(shared, { meterDelayS: 1, timeScale: 0 })).should.throw(/timeScale, meterDelayS: set on the shared house/);
    (() => unit(shared, { selfUseW: -1 })).should.throw(/selfUseW/);
    (() => new SharedHouse({ meterRefreshS: Number.NaN })).should.throw(/meterRefreshS must be a number >= 0/);
    should(new SharedHouse().selfUseW).equal(30);
  });

  it('feeds an outside meter with the sum of the batteries', () => {
    const shared = house({ selfUseW: 0, meterFeed: { everyS: 1 } });
    const a = unit(shared);
    const b = unit(shared, { serialNumber: 'SIM0000000000002' });
    setpoint(a, 200);
    setpoint(b, 50);
    a.tick(2.01);
    const readings = b.takeMeterReadings();
    readings
      .map((r) => [r.grid, r.battery])
      .should.eql([
        [300, 0], // taken at 0 s, before the setpoints
        [50, 250],
        [50, 250],
      ]);
    a.takeMeterReadings().should.eql([]);
  });

  it('a unit with an efficiency stores less than it takes when charging and gives less than it draws when discharging', () => {
    const shared = house({ selfUseW: 0 });
    const lossy = unit(shared, { capacityKwh: 1, initialSoc: 50, efficiency: 0.9 });
    const lossless = unit(shared, { capacityKwh: 1, initialSoc: 50, serialNumber: 'SIM0000000000002' });
    setpoint(lossy, -1000);
    setpoint(lossless, -1000);
    lossy.tick(36);
    // 10 Wh into 1 kWh: 1 point lossless, 0.9 point at 90 %.
    (lossless.exactSoc - 50).should.be.approximately(1, 1e-6);
    (lossy.exactSoc - 50).should.be.approximately(0.9, 1e-6);
    setpoint(lossy, 1000);
    const before = lossy.exactSoc;
    lossy.tick(36);
    (before - lossy.exactSoc).should.be.approximately(1 / 0.9, 1e-6);
    (() => unit(house(), { efficiency: 0 })).should.throw(/efficiency must be in \(0, 1\]/);
  });
});
