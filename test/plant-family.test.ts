/**
 * The plant identification (src/control/plant-family.ts) on its own: what a read of the battery's power (6000) rules
 * out, and what it must leave alone.
 */
import should from 'should';
import { PlantIdentifier, plantFamily, response, type PlantModel, type Step } from '../src/control/plant-family';
import { PLANT_BOUNDS } from '../src/control/regulator';

const MARGIN_W = 100;
/** The meter may show the battery 0 to 2 s late (the message meter's bounds). */
const METER_LATE: [number, number] = [PLANT_BOUNDS.fast.meterDelayS * 1000, PLANT_BOUNDS.slow.meterDelayS * 1000];
/** One move, from standstill to 1000 W of discharge, acknowledged at 0.4 s. */
const HISTORY: Step[] = [{ value: 1000, startAt: 0, ackAt: 400 }];
/** The battery behind it: dead time 1 s, lag 1.5 s. */
const TRUE: PlantModel = { delayMs: 1000, lagMs: 1500, from: 'startAt' };

const identifier = () => new PlantIdentifier(plantFamily(PLANT_BOUNDS.fast, PLANT_BOUNDS.slow));
const read = (plants: PlantIdentifier, power: number, at: number) =>
  plants.readBack(power, at - 1100, at, METER_LATE, MARGIN_W, HISTORY, 0);

describe('plant identification by read-backs of 6000', () => {
  it('a battery further along than a plant allows rules that plant out, however slow the meter made it look', () => {
    const plants = identifier();
    const all = plants.consistent().length;
    const at = 4000;
    read(plants, response(TRUE, HISTORY, 0, at), at);
    const left = plants.consistent();
    should(left.length).be.below(all);
    // The slowest plants had barely begun at 4 s, even shown 2 s late: out. The battery's own plant stays.
    should(left.some((m) => m.delayMs >= 3500 && m.lagMs >= 4000)).be.false();
    should(left).containEql(TRUE);
    // None left under which the battery could not have got that far by then.
    for (const model of left)
      should(response(model, HISTORY, 0, at + METER_LATE[1])).be.aboveOrEqual(response(TRUE, HISTORY, 0, at) - MARGIN_W - 60);
  });

  it('a battery behind every plant rules none out: a slow one and one that falls short look alike', () => {
    const plants = identifier();
    const all = plants.consistent().length;
    read(plants, 300, 6000);
    read(plants, 300, 9000);
    should(plants.consistent()).have.length(all);
  });
});
