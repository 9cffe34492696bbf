/**
 * The group regulator balances its units by SOC over hours (issue 25: the SOC spread narrows during a long discharge
 * and a long charge). The controller, the group plant and splitGroup run as the node wires them, in simulated time
 * (test/group-long-run.ts), against simulated units of the same capacity: an equal or unit-order split would keep
 * their spread or widen it, so only the balance by SOC passes. Each run is made with either unit listed first.
 */
import should from 'should';
import { groupLongRun, spread, type LongRecord, type LongUnit } from './group-long-run';
import type { HouseScenario } from '../src/simulator';

const HOURS = 2;
const UNITS: LongUnit[] = [
  { key: 'full', model: '2000', initialSoc: 80, deadTimeS: 1, lagS: 1.5, capacityKwh: 3 },
  { key: 'empty', model: '2000', initialSoc: 40, deadTimeS: 1.5, lagS: 3, capacityKwh: 3 },
];
/** 1 kW drawn from the batteries, or 1 kW of surplus for them, ± 10 W. */
const DISCHARGE: HouseScenario = { seed: 31, baseLoadW: 1000, noiseW: 10 };
const CHARGE: HouseScenario = { seed: 32, baseLoadW: 300, noiseW: 10, pvW: 1300 };

const run = (house: HouseScenario, units: LongUnit[]) =>
  groupLongRun({ units, house, seconds: HOURS * 3600, sampleS: 60, efficiency: 0.94 });

/** The spread at the start and the end, and the widest after it first came within the rotate margin (5 points). */
function spreads(record: LongRecord) {
  const all = record.samples.map(spread);
  const met = all.findIndex((s) => s <= 5);
  return { start: all[0], end: all.at(-1)!, met, after: met === -1 ? Infinity : Math.max(...all.slice(met)) };
}

describe('group regulator over hours (test/group-long-run.ts): the SOC spread of its units narrows and stays narrow', function () {
  this.timeout(60000);

  for (const [name, house, way] of [
    ['discharge', DISCHARGE, 1],
    ['charge', CHARGE, -1],
  ] as const)
    for (const units of [UNITS, [...UNITS].reverse()])
      it(`a ${HOURS} h ${name} of 1 kW, units at ${units.map((u) => u.initialSoc).join(' and ')} %: the spread halves and stays within the rotate margin`, async () => {
        const record = await run(house, units);
        record.failures.should.eql([]);
        const s = spreads(record);
        s.start.should.equal(40);
        s.end.should.be.below(s.start / 2);
        // Once balanced, the units take turns: the spread stays near the rotate margin (5 points, SOC read as whole %).
        s.met.should.be.aboveOrEqual(0);
        s.after.should.be.belowOrEqual(7);
        // The group carried the house: 1 kW each way, the grid held (under 2 % of the energy in error).
        const moved = record.samples.at(-1)!.units.reduce((sum, u, i) => sum + (u.soc - units[i].initialSoc), 0) * way;
        moved.should.be.below(0);
        record.errorWh.should.be.below(0.02 * HOURS * 1000);
        should(record.movedWh).be.below(1);
      });
});
