/** Leaving a unit of a group out (src/control/unit-health.ts), alone and with splitGroup in a shared house. */
import should from 'should';
import { HEALTH_DEFAULTS, isLeftOut, unitHealth, type HealthReading, type UnitHealth } from '../src/control/unit-health';
import { splitGroup, type GroupUnit, type SplitMemory } from '../src/control/group-split';
import { DeviceSimulator, SharedHouse, type SimulatorOptions } from '../src/simulator';
import { REAL_TIME } from '../src/points/catalogue';
import { setpoint } from './setpoint';

const reading = (nowMs: number, extra: Partial<HealthReading> = {}): HealthReading => ({
  nowMs,
  reachable: true,
  commandedW: 1000,
  commandedSinceMs: 0,
  deliveredW: 1000,
  settleMs: 5000,
  ...extra,
});

/** Feeds readings one after the other; the health after each. */
function feed(readings: HealthReading[]): UnitHealth[] {
  let health: UnitHealth | undefined;
  return readings.map((r) => (health = unitHealth(health, r)));
}

describe('unit health', function () {
  it('leaves a unit out after three unreachable readings in a row, not after two', () => {
    const down = (t: number) => reading(t, { reachable: false });
    feed([down(1000), down(2000), reading(3000), down(4000), down(5000)])
      .every((h) => !isLeftOut(h, 5000))
      .should.be.true();
    const out = feed([down(1000), down(2000), down(3000)]).at(-1)!;
    [isLeftOut(out, 3000), out.reason, out.outUntilMs].should.eql([true, 'unreachable', 3000 + HEALTH_DEFAULTS.leaveOutMs]);
  });

  it('counts a shortfall only after the settle time and only when large in watts and as a share', () => {
    const short = (t: number, deliveredW: number, extra: Partial<HealthReading> = {}) => reading(t, { deliveredW, ...extra });
    // Within the settle time a lagging unit is no shortfall.
    isLeftOut(feed([short(1000, 0), short(2000, 0), short(3000, 0), short(4000, 0)]).at(-1), 4000).should.be.false();
    // After it: 400 W of 1000 is short; 600 W of 1000 is not (under half missing); 60 W of 150 W is not (under 100 W).
    feed([short(6000, 400), short(7000, 400), short(8000, 400)])
      .at(-1)!
      .reason!.should.equal('shortfall');
    isLeftOut(feed([short(6000, 600), short(7000, 600), short(8000, 600)]).at(-1), 8000).should.be.false();
    const small = { commandedW: 150 };
    isLeftOut(feed([short(6000, 60, small), short(7000, 60, small), short(8000, 60, small)]).at(-1), 8000).should.be.false();
    // The wrong way is short too; charging commands count by their size.
    feed([short(6000, -200), short(7000, -200), short(8000, -200)])
      .at(-1)!
      .reason!.should.equal('shortfall');
    const charge = { commandedW: -1000 };
    feed([short(6000, -300, charge), short(7000, -300, charge), short(8000, -300, charge)])
      .at(-1)!
      .reason!.should.equal('shortfall');
    isLeftOut(feed([short(6000, -900, charge), short(7000, -900, charge), short(8000, -900, charge)]).at(-1), 8000).should.be.false();
  });

  it('stays out for leaveOutMs, then is tried again with a clean count', () => {
    const down = (t: number) => reading(t, { reachable: false });
    const out = feed([down(0), down(1000), down(2000)]).at(-1)!;
    const later = HEALTH_DEFAULTS.leaveOutMs + 2000;
    unitHealth(out, reading(later - 1)).should.equal(out); // a good reading while out changes nothing
    const back = unitHealth(out, down(later));
    [isLeftOut(back, later), back.bad].should.eql([false, 1]);
    (() => unitHealth(undefined, reading(0), { readings: 0 })).should.throw(/readings must be an integer >= 1/);
    (() => unitHealth(undefined, reading(0), { shortfallShare: 2 })).should.throw(/shortfallShare/);
  });

  it('in a shared house: a unit that stops delivering is left out and the other takes its share within three readings', () => {
    const house = new SharedHouse({ timeScale: 0, house: { baseLoadW: 1600 }, selfUseW: 0 });
    const make = (serialNumber: string, extra: Partial<SimulatorOptions> = {}) =>
      new DeviceSimulator({
        udpPort: null,
        workingMode: REAL_TIME.mode,
        sharedHouse: house,
        serialNumber,
        lagS: 0.5,
        initialSoc: 80,
        ...extra,
      });
    // Unit b delivers nothing from 20 s on, though it takes every command (switched off at its breaker, say).
    const a = make('A');
    const b = make('B', { derating: [{ atS: 20, durationS: 1000, maxW: 0 }] });
    const sims = [a, b];
    const health: (UnitHealth | undefined)[] = [undefined, undefined];
    const since = [0, 0];
    let memory: SplitMemory | undefined;
    const grid: number[] = [];
    for (let t = 1; t <= 40; t++) {
      house.run(1);
      const nowMs = t * 1000;
      const units: GroupUnit[] = sims.map((sim, i) => {
        const commandedW = sim.control.state === 2 ? sim.control.power : 0;
        health[i] = unitHealth(health[i], {
          nowMs,
          reachable: true,
          commandedW,
          commandedSinceMs: since[i],
          deliveredW: sim.batteryPower,
          settleMs: 2000,
        });
        return {
          id: `u${i}`,
          maxChargeW: 2400,
          maxDischargeW: 2400,
          capacityWh: 5120,
          soc: sim.exactSoc,
          chargeSoc: 100,
          dischargeSoc: 10,
          setpointW: commandedW,
          deliveredW: sim.batteryPower,
          leftOut: isLeftOut(health[i], nowMs),
        };
      });
      // The need the meter shows: house load 1600 W less what the units deliver (the meter, read now).
      const need = Math.round(house.gridW + a.batteryPower + b.batteryPower);
      const split = splitGroup(need, units, nowMs, memory, { joinShare: 0.5, leaveShare: 0.3 });
      memory = split.memory;
      split.setpoints.forEach((s, i) => {
        if (s !== units[i].setpointW) since[i] = nowMs;
        setpoint(sims[i], s);
      });
      grid.push(Math.round(house.gridW));
    }
    // Both ran before (1600 W > 0.5 × 2400); b stops at 20 s, is left out after three readings, a carries it all.
    should(grid[15]).be.within(-50, 50);
    should(grid[21]).be.above(500);
    const backAt = grid.findIndex((g, i) => i > 20 && Math.abs(g) <= 50);
    // Three bad readings, then one second for unit a to take the rest up.
    backAt.should.be.above(20).and.belowOrEqual(20 + HEALTH_DEFAULTS.readings + 1);
    isLeftOut(health[1], 40000).should.be.true();
    health[1]!.reason!.should.equal('shortfall');
    [a.control.power, b.control.state].should.eql([1600, 0]);
  });
});
