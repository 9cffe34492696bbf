/**
 * A battery that falls short of its setpoint, in simulated time: the controller as the node wires it
 * (test/group-long-run.ts) over every timing of the device's answers and the meter's readings, where the real-time
 * controller test sees one timing a run. The matrix's house: 600 W of PV surplus, then a 2 kW kettle (a need of
 * 1400 W) against a battery capped at 600 W. And what a shortfall must not be taken for: a new load while a slow
 * battery still answers a pulse.
 */
import should from 'should';
import { generateCase } from '../src/simulator/house-generator';
import { MODEL_CLASSES } from '../src/points/catalogue';
import { groupLongRun } from './group-long-run';

const ANSWERS_MS = [100, 250, 400, 600, 800];
const METER_STARTS_S = [0.1, 0.35, 0.6, 0.85];
const METER_LATE_S = [0, 0.3, 0.7];
const BATTERIES = [
  { deadTimeS: 0.5, lagS: 1 },
  { deadTimeS: 1, lagS: 1.5 },
  { deadTimeS: 2, lagS: 3 },
];
const KETTLE_S = 10;

describe('a battery that falls short (simulated time)', function () {
  this.timeout(60000);

  it('capped at 600 W, it never winds up past 1600 W and is seen short within 10 s of the kettle, whatever the timing', async () => {
    const missed: string[] = [];
    for (const answerMs of ANSWERS_MS)
      for (const startS of METER_STARTS_S)
        for (const lateS of METER_LATE_S)
          for (const battery of BATTERIES) {
            let highest = 0;
            let seenShortAt: number | undefined;
            await groupLongRun({
              units: [{ key: 'a', model: '2000', initialSoc: 60, ...battery, derating: [{ atS: 5, durationS: 600, maxW: 600 }] }],
              house: {
                seed: 17,
                baseLoadW: 300,
                noiseW: 10,
                pvW: 900,
                events: [{ name: 'kettle', atS: KETTLE_S, durationS: 60, loadW: 2000 }],
              },
              seconds: 30,
              sampleS: 1,
              efficiency: 1,
              alone: true,
              answerMs,
              onStop: 'keep',
              meterFeed: { everyS: 1, startS, lateS },
              onDecision: (decision, t) => {
                // A pulse's own value is no wind-up: it is what the pulse is.
                if (decision.action === 'set' && decision.reason !== 'overdrive' && decision.grid !== undefined)
                  highest = Math.max(highest, decision.setpoint!);
                if (seenShortAt === undefined && decision.limitedBy === 'battery') seenShortAt = t;
              },
            });
            if (highest > 1600 || seenShortAt === undefined || seenShortAt > KETTLE_S + 10)
              missed.push(
                `answers ${answerMs} ms, meter from ${startS} s ${lateS} s late, ${JSON.stringify(battery)}: ${highest} W, short at ${seenShortAt} s`,
              );
          }
    should(missed).be.empty();
  });

  it('a new load while the slowest battery still answers a pulse is followed at once: past 1500 W within 5 s of it', async () => {
    // Charging 1500 W of PV surplus; the heating at 15 s brings a pulse, the hob at 17 s another 1.9 kW: a need of 2300 W.
    // Held for the battery check until the battery arrived, the setpoint stayed near 380 W for 8 s with 2 kW of import.
    for (const seed of [1, 2, 3]) {
      const sets: { t: number; setpoint: number }[] = [];
      await groupLongRun({
        units: [{ key: 'a', model: '2000', initialSoc: 50, deadTimeS: 2, lagS: 5 }],
        house: {
          seed,
          baseLoadW: 300,
          noiseW: 10,
          pvW: 1800,
          events: [
            { name: 'heating', atS: 15, durationS: 600, loadW: 1900 },
            { name: 'hob', atS: 17, durationS: 600, loadW: 1900 },
          ],
        },
        seconds: 25,
        sampleS: 1,
        efficiency: 1,
        alone: true,
        onDecision: (decision, t) => {
          if (decision.action === 'set' && decision.reason !== 'overdrive') sets.push({ t, setpoint: decision.setpoint! });
        },
      });
      const followed = sets.find((set) => set.t > 17.5 && set.setpoint >= 1500);
      should(followed?.t ?? Infinity).be.belowOrEqual(22, `seed ${seed}: ${JSON.stringify(sets)}`);
    }
  });

  // Tuning seed 34 of the derated condition: the heat pumps stop while the battery is derated to 760 W, the surplus
  // grows to 1660 W and the setpoint followed it to -2368 W; when the derating ended the battery went there, 600 W from
  // the grid (1.47 Wh in 45 s).
  it('charging while derated, it holds no setpoint beyond the surplus: nothing from the grid when the cap lifts, whatever the timing', async () => {
    const { house, plant } = generateCase('derated', 34, 45, MODEL_CLASSES['2000'].maxDischargePower);
    const charged: string[] = [];
    for (const answerMs of ANSWERS_MS)
      for (const startS of METER_STARTS_S) {
        const record = await groupLongRun({
          units: [{ key: 'a', model: '2000', initialSoc: 50, deadTimeS: plant.deadTimeS, lagS: plant.lagS, derating: plant.derating }],
          house: house.scenario,
          seconds: 45,
          sampleS: 0.1,
          efficiency: 1,
          alone: true,
          answerMs,
          meterFeed: { ...plant.feed, startS },
          settings: { meterInterval: '1', meterTimeout: '10' },
        });
        // Energy into the battery from the grid once the derating ended.
        const lifted = plant.derating![0].atS + plant.derating![0].durationS;
        const fromGridWh = record.samples
          .filter((sample) => sample.t >= lifted)
          .reduce((sum, sample) => sum + (Math.max(0, Math.min(-sample.units[0].b, sample.grid)) * 0.1) / 3600, 0);
        if (fromGridWh > 0.05) charged.push(`answers ${answerMs} ms, meter from ${startS} s: ${fromGridWh.toFixed(2)} Wh`);
      }
    should(charged).be.empty();
  });
});
