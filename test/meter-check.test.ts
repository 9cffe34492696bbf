/**
 * A meter that cannot be right is caught (issue 34; src/control/meter-check.ts), in simulated time: the controller and
 * its regulator as the node wires them (test/group-long-run.ts), a meter that gives export positive or kW. Stopped
 * within 10 s with at most 2 Wh charged from the grid or exported by the battery; the right settings for such a meter
 * regulate as a W meter does; a right meter never raises the alarm.
 */
import should from 'should';
import { groupLongRun, benchHouse, type LongRunOptions } from './group-long-run';
import { meterWatts } from '../src/control/meter-check';
import { generateCase } from '../src/simulator/house-generator';
import { MODEL_CLASSES } from '../src/points/catalogue';
import type { Decision } from '../src/control/regulator';
import type { HouseScenario } from '../src/simulator';

const ONE: LongRunOptions['units'] = [{ key: 'a', model: '2000', initialSoc: 50, deadTimeS: 1, lagS: 2 }];
const SLOW: LongRunOptions['units'] = [{ key: 'a', model: '2000', initialSoc: 50, deadTimeS: 2, lagS: 5 }];
const FAST: LongRunOptions['units'] = [{ key: 'a', model: '2000', initialSoc: 50, deadTimeS: 0.5, lagS: 0.5 }];
const LOAD: HouseScenario = { seed: 3, baseLoadW: 400, noiseW: 10 };
const SURPLUS: HouseScenario = { seed: 3, baseLoadW: 300, noiseW: 10, pvW: 1500 };

function run(house: HouseScenario, extra: Partial<LongRunOptions> = {}, units = ONE) {
  return groupLongRun({ units, house, seconds: 40, sampleS: 1, efficiency: 1, alone: true, ...extra });
}

/** A generated case of the tuning seeds (src/simulator/house-generator.ts) as the unseen-house benches run it. */
function generated(condition: string, seed: number, seconds: number, extra: Partial<LongRunOptions>) {
  const { house, plant } = generateCase(condition, seed, seconds, MODEL_CLASSES['2000'].maxDischargePower);
  const settings = { meterInterval: String(plant.meterIntervalS), meterTimeout: String(plant.meterTimeoutS) };
  const units: LongRunOptions['units'] = [{ key: 'a', model: '2000', initialSoc: 50, deadTimeS: plant.deadTimeS, lagS: plant.lagS }];
  return groupLongRun({
    units,
    house: house.scenario,
    seconds,
    sampleS: 0.1,
    efficiency: 1,
    alone: true,
    meterFeed: plant.feed,
    settings,
    ...extra,
  });
}

describe('meter check (src/control/meter-check.ts): a meter that cannot be right', function () {
  this.timeout(60000);

  it('converts a reading in one place: export positive and kW to W importing', () => {
    should(meterWatts(-0.35, 'export-positive', 'kW')).equal(350);
    should(meterWatts(120, 'import-positive', 'W')).equal(120);
  });

  for (const [name, units] of [
    ['a battery that follows in 1 s and 2 s', ONE],
    ['the slowest battery (2 s dead time, 5 s lag)', SLOW],
  ] as const) {
    describe(name, () => {
      it('a meter with the wrong sign and 400 W of load: stopped within 10 s, at most 2 Wh charged from the grid', async () => {
        const record = await run(LOAD, { meterGives: { sign: 'export-positive', unit: 'W' } }, units);
        should(record.meterFaults.map((f) => f.fault)).eql(['inverted']);
        should(record.meterFaults[0].t).be.belowOrEqual(10.5);
        should(record.chargedFromGridWh + record.exportedByBatteryWh).be.belowOrEqual(2);
      });

      it('a meter in kW given as W: stopped within 10 s, at most 2 Wh', async () => {
        const record = await run(LOAD, { meterGives: { sign: 'import-positive', unit: 'kW' } }, units);
        should(record.meterFaults.map((f) => f.fault)).eql(['kilowatts']);
        should(record.meterFaults[0].t).be.belowOrEqual(10.5);
        should(record.chargedFromGridWh + record.exportedByBatteryWh).be.belowOrEqual(2);
      });
    });
  }

  for (const [name, units] of [
    ['the fastest battery (0.5 s dead time, 0.5 s lag)', FAST],
    ['a battery that follows in 1 s and 1 s', [{ ...ONE[0], lagS: 1 }]],
    ['the slowest battery (2 s dead time, 5 s lag)', SLOW],
  ] as const) {
    it(`a meter with the wrong sign and 1200 W of PV surplus, ${name}: stopped within 10 s, at most 2 Wh exported`, async () => {
      const record = await run(SURPLUS, { meterGives: { sign: 'export-positive', unit: 'W' } }, units);
      should(record.meterFaults.map((f) => f.fault)).eql(['inverted']);
      should(record.meterFaults[0].t).be.belowOrEqual(10.5);
      should(record.chargedFromGridWh + record.exportedByBatteryWh).be.belowOrEqual(2);
    });
  }

  it('with Meter sign export positive, an export-positive meter regulates as a W meter does', async () => {
    const right = await run(LOAD);
    const record = await run(LOAD, { meterGives: { sign: 'export-positive', unit: 'W' }, settings: { meterSign: 'export-positive' } });
    should(record.meterFaults).be.empty();
    should(record.errorWh).be.belowOrEqual(right.errorWh * 1.2 + 0.1);
    should(record.samples.at(-1)!.units[0].b).be.approximately(400, 60);
  });

  it('with Meter unit kW, a kW meter regulates as a W meter does', async () => {
    const right = await run(SURPLUS);
    const record = await run(SURPLUS, { meterGives: { sign: 'import-positive', unit: 'kW' }, settings: { meterUnit: 'kW' } });
    should(record.meterFaults).be.empty();
    should(record.errorWh).be.belowOrEqual(right.errorWh * 1.2 + 0.1);
    should(record.samples.at(-1)!.units[0].b).be.approximately(-1200, 60);
  });

  it('a probe answered the right way ends the hold with the reading that answers it: its decision goes out', async () => {
    // Tuning house gaps:31: a heat pump ramps up after the first move, so the readings rise with it and the check
    // probes; the meter's next reading comes 5 s later, the load falling, and answers the probe. Held until the
    // reading after it, the battery went on exporting 400-500 W for 5 s more.
    const decisions: { t: number; decision: Decision }[] = [];
    const record = await generated('gaps', 31, 20, { onDecision: (decision, t) => decisions.push({ t, decision }) });
    const probe = decisions.find((d) => d.decision.reason === 'meter check');
    should(probe).be.ok();
    const answer = record.readings.find((r) => r.t > probe!.t + 1e-6)!;
    // The answer: the grid fell by far more than 30 % of the probe's 400 W.
    should(answer.grid).be.below(probe!.decision.grid! - 400);
    const next = decisions.find((d) => d.t > probe!.t + 1e-6);
    should(next?.t).be.approximately(answer.t, 1e-6);
    should(next!.decision).containEql({ action: 'set' });
    should(next!.decision.setpoint).be.below(probe!.decision.setpoint!);
    should(record.meterFaults).be.empty();
  });

  it('a right meter that tripped the check (a slow battery on a ramp): msg.enable = true steers again, the check starts over', async () => {
    // Tuning house slow:31 (docs/benchmarks.md, "A meter that cannot be right"): a heat pump ramps 130 W/s while a
    // battery with 1.8 s of dead time has not moved yet; the readings rise after the first move and after the probe.
    const record = await generated('slow', 31, 45, { enableAtS: 15 });
    // The README's remedy where the meter is right: enabled again, it steers, and no second alarm comes.
    should(record.meterFaults.map((f) => f.fault)).eql(['inverted']);
    should(record.meterFaults[0].t).be.below(15);
    const late = record.samples.filter((s) => s.t >= 35);
    // Left in self-consumption (this battery gives 800 W there) the grid would reach 640 W by then.
    should(Math.max(...late.map((s) => Math.abs(s.grid)))).be.below(300);
    should(Math.min(...late.map((s) => s.units[0].s))).be.above(1000);
  });

  it('a right meter never raises the alarm: loads, a kettle, a cloud, a late meter, one device or a group', async () => {
    for (const seed of [1, 2, 3]) {
      const alone = await groupLongRun({ units: ONE, house: benchHouse(seed), seconds: 100, sampleS: 1, efficiency: 1, alone: true });
      const slow = await groupLongRun({
        units: SLOW,
        house: benchHouse(seed),
        seconds: 100,
        sampleS: 1,
        efficiency: 1,
        alone: true,
        meterLateS: 1,
      });
      const group = await groupLongRun({
        units: [...ONE, { key: 'b', model: '1600', initialSoc: 60, deadTimeS: 1.5, lagS: 2 }],
        house: benchHouse(seed),
        seconds: 100,
        sampleS: 1,
        efficiency: 1,
      });
      for (const record of [alone, slow, group]) should(record.meterFaults).be.empty();
    }
  });
});
