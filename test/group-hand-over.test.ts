/**
 * The group regulator through hand-overs (issue 25: grid error within 1.5 × the group oracle's), in simulated time
 * (test/group-long-run.ts): the house of `npm run bench`'s group run (benchHouse(): a kettle and a cloud; its group
 * oracle leaves 5.3 Wh of grid error there). The direction reverses four times, and each reversal hands the power from
 * one unit to another (discharge takes the fuller 2400 class, charge the emptier 1600 class). The controller, the group plant and splitGroup run as
 * the node wires them against simulated units behind their devices' pace.
 */
import should from 'should';
import { benchHouse, groupLongRun, type LongRecord, type LongUnit } from './group-long-run';

const UNITS: LongUnit[] = [
  { key: 'big', model: '2000', initialSoc: 80, deadTimeS: 1, lagS: 1.5 },
  { key: 'small', model: '1600', initialSoc: 40, deadTimeS: 1.5, lagS: 3 },
  { key: 'third', model: '2000', initialSoc: 60, deadTimeS: 2, lagS: 5 },
];
/** The readings from a switch-off on, and the first back within ±20 W once the grid has left that band. */
function gridBack(record: LongRecord) {
  const after = record.readings.filter((r) => r.t >= record.offAt!);
  const jump = after.findIndex((r) => Math.abs(r.grid) > 20);
  jump.should.be.aboveOrEqual(0);
  const back = after.slice(jump).find((r) => Math.abs(r.grid) <= 20);
  should(back).be.ok();
  return { after, back: back! };
}

describe('group regulator through hand-overs (test/group-long-run.ts): the house of the group bench, in simulated time', function () {
  this.timeout(30000);

  for (const seed of [25, 27])
    for (const count of [2, 3])
      it(`${count} units, house seed ${seed}: grid error under 7.9 Wh (7.4 to 7.6 while hand-over pulses charged from the grid past the floor; 8.7 and 8.8 when the regulator's one model of the sum stood for the units'), nothing moved between units, no third unit for a pulse`, async () => {
        const units = UNITS.slice(0, count);
        const record = await groupLongRun({ units, house: benchHouse(seed), seconds: 100, sampleS: 0.1, efficiency: 1 });
        record.failures.should.eql([]);
        record.errorWh.should.be.below(7.9);
        should(record.movedWh).be.below(0.005);
        // The third unit is never needed: 1.5 kW at most, which the 2400 class carries alone.
        if (count === 3) record.samples.every((s) => s.units[2].s === 0).should.be.true();
      });

  // The group bench's second switched-off run: the 1600 class, made the fuller, carries 320 W of 700 W beside the 2400
  // class and is switched off (its battery stops, its requests are refused) at every phase of the meter's second.
  const fuller = [
    { ...UNITS[1], initialSoc: 80 },
    { ...UNITS[0], initialSoc: 40 },
  ];
  for (const seed of [27, 28])
    for (const phase of [0, 0.3, 0.6, 0.9])
      it(`a unit switched off beside another (700 W, house seed ${seed}, ${phase} s into the meter's second): left out, and the grid back within ±20 W 4 readings after (8 to 10 when its lost power counted as load once more and the unit left took the regulator's pulse), nothing moved between units`, async () => {
        const atS = 30 + phase;
        const house = { seed, baseLoadW: 700, noiseW: 10 };
        const record = await groupLongRun({ units: fuller, house, seconds: 40, sampleS: 0.1, efficiency: 1, switchOff: { unit: 0, atS } });
        const { after, back } = gridBack(record);
        (back.t - record.offAt!).should.be.belowOrEqual(4);
        // Within the band from there on, and the unit left takes no more than the house needs.
        for (const r of after.filter((r) => r.t >= back.t)) Math.abs(r.grid).should.be.belowOrEqual(30);
        record.report[0].leftOut.should.equal('unreachable');
        should(record.movedWh).be.below(0.005);
      });

  // The group bench's first switched-off run: the 2400 class at 80 % carries the 700 W alone and is switched off; the
  // 1600 class, at rest, takes over. Its dead time (1.5 s) and lag (3 s) bound it: an oracle that knows the plant has
  // the grid back 10 readings after.
  const alone = [
    { ...UNITS[0], initialSoc: 80 },
    { ...UNITS[1], initialSoc: 40 },
  ];
  for (const seed of [9, 27])
    for (const atS of [30, 30.6, 47])
      it(`the only running unit switched off (700 W, house seed ${seed}, at ${atS} s): the resting unit takes over and keeps its share, the grid back within 11 readings (12.4 s when the off unit's replaced writes brought it back)`, async () => {
        const house = { seed, baseLoadW: 700, noiseW: 10 };
        const record = await groupLongRun({
          units: alone,
          house,
          seconds: atS + 15,
          sampleS: 0.1,
          efficiency: 1,
          switchOff: { unit: 0, atS },
        });
        (gridBack(record).back.t - record.offAt!).should.be.belowOrEqual(11);
        // Once commanded, the unit left is never sent a standby (the off unit taken back into the split).
        const samples = record.samples.filter((x) => x.t >= record.offAt!);
        const taken = samples.findIndex((x) => x.units[1].s > 0);
        taken.should.be.aboveOrEqual(0);
        samples
          .slice(taken)
          .every((x) => x.units[1].s > 0)
          .should.be.true();
        record.report[0].leftOut.should.equal('unreachable');
        should(record.movedWh).be.below(0.005);
      });

  for (const seed of [25, 27])
    for (const count of [2, 3])
      it(`${count} units, house seed ${seed}, the meter 1 s late: grid error under 10 Wh (10.2 to 10.4 with the regulator's one model of the sum; up to 26.5 with the units' estimate taken as the meter's present)`, async () => {
        const units = UNITS.slice(0, count);
        const record = await groupLongRun({ units, house: benchHouse(seed), seconds: 100, sampleS: 1, efficiency: 1, meterLateS: 1 });
        record.failures.should.eql([]);
        record.errorWh.should.be.below(10);
      });
});
