/**
 * The group's end (issue 34): a close, a disable or a hand-back leaves every unit as On stop says, and the group plant
 * (src/control/group-plant.ts) splits nothing again after it, sends no hand-over pulse past it and polls no unit; a
 * hand-over pulse keeps the grid-charging floor. In simulated time (test/group-long-run.ts), the controller and the
 * group plant as the node wires them against simulated units behind their devices' pace.
 */
import should from 'should';
import { benchHouse, groupLongRun, type LongRecord, type LongUnit } from './group-long-run';

const BIG: LongUnit = { key: 'big', model: '2000', initialSoc: 80, deadTimeS: 1, lagS: 1.5 };
const SMALL: LongUnit = { key: 'small', model: '1600', initialSoc: 40, deadTimeS: 1.5, lagS: 3 };

/** Each unit's requests after its hand-back to self-consumption (all of them where it had none). */
function afterHandBack(record: LongRecord) {
  return record.requests.map((requests) => {
    const handBack = requests.findIndex((r) => r.kind === 'self-consumption');
    should(handBack).be.aboveOrEqual(0);
    return { at: requests[handBack].t, requests: requests.slice(handBack + 1) };
  });
}

/** "t:kind watts", for a failure's message. */
const shown = (requests: LongRecord['requests'][number]) => requests.map((r) => `${r.t.toFixed(1)}:${r.kind} ${r.watts ?? ''}`).join(', ');

describe('group end (test/group-long-run.ts): nothing split again or sent after a close, disable or hand-back', function () {
  this.timeout(30000);

  for (const how of ['close', 'disable'] as const)
    it(`a unit that answers again while the controller ${how === 'close' ? 'closes' : 'is disabled'} brings no unit a setpoint after its hand-back (a standby and 516 W went after the self-consumption)`, async () => {
      // Both units carry 2300 W; the big one answers nothing from 27 s (the small one carries the total) until just
      // after the hand-back began at 30 s.
      const record = await groupLongRun({
        units: [BIG, { ...SMALL, initialSoc: 70 }],
        house: { seed: 27, baseLoadW: 2300, noiseW: 10 },
        seconds: 40,
        sampleS: 0.1,
        efficiency: 1,
        offline: { unit: 0, fromS: 27, toS: 30.2 },
        end: { how, when: (t) => t >= 30 },
      });
      for (const unit of afterHandBack(record)) shown(unit.requests.filter((r) => r.kind === 'setpoint')).should.equal('');
    });

  for (const [how, atS] of [
    ['disable', 51.5],
    ['disable', 52],
    ['close', 52.5],
  ] as const)
    it(`a hand-back during a reversal (${how} at ${atS} s): no unit read every second once the loop rests, nor sent a setpoint after its hand-back`, async () => {
      // The kettle ends at 50 s: the group reverses from discharge to charge, the plant reading its units each second.
      const record = await groupLongRun({
        units: [BIG, SMALL],
        house: benchHouse(25),
        seconds: atS + 25,
        sampleS: 0.1,
        efficiency: 1,
        end: { how, when: (t) => t >= atS },
      });
      for (const unit of afterHandBack(record)) {
        shown(unit.requests.filter((r) => r.kind === 'setpoint')).should.equal('');
        // The controller reads every 30 s while it does not steer (none once closed): at most one read in 20 s.
        const reads = unit.requests.filter((r) => r.kind === 'read' && r.t <= unit.at + 20);
        reads.length.should.be.belowOrEqual(1, shown(reads));
      }
    });

  it('On stop keep leaves the unit that took over on the setpoint needed, not its hand-over pulse (1001 W where 725 W was needed)', async () => {
    // The 1600 class, the fuller, runs beside the 2400 class and is switched off at 30 s; the 2400 class takes over
    // with a pulse, and the controller closes during that pulse.
    const record = await groupLongRun({
      units: [
        { ...SMALL, initialSoc: 80 },
        { ...BIG, initialSoc: 40 },
      ],
      house: { seed: 27, baseLoadW: 700, noiseW: 10 },
      seconds: 40,
      sampleS: 0.1,
      efficiency: 1,
      onStop: 'keep',
      switchOff: { unit: 0, atS: 30 },
      end: { how: 'close', when: (t) => t >= 31 },
    });
    const pulsed = record.requests[1].filter((r) => r.kind === 'setpoint' && r.t >= 30 && r.t < 31);
    pulsed.length.should.be.above(0);
    should(record.steadyAfterEnd).be.a.Number();
    record.samples.at(-1)!.units[1].s.should.equal(record.steadyAfterEnd);
  });

  for (const seed of [25, 27])
    it(`without grid charging a hand-over pulse keeps the floor: no unit charges past the total asked and the house's surplus (house seed ${seed}; -910 and -1200 W where -455 and -663 W were asked)`, async () => {
      const record = await groupLongRun({ units: [BIG, SMALL], house: benchHouse(seed), seconds: 100, sampleS: 0.1, efficiency: 1 });
      // The most the plant was asked to charge lately: a total reaches a unit up to a slot and a half after it was sent.
      const asked = (t: number) => {
        const before = record.totals.filter((x) => x.t < t - 1.5).at(-1);
        const lately = record.totals.filter((x) => x.t <= t + 1e-6 && x.t >= t - 1.5);
        return Math.min(0, ...[...(before ? [before] : []), ...lately].map((x) => x.watts));
      };
      // Past the start (the regulator's own first setpoint): no unit charges beyond that and what the house exports
      // (its load less the PV, as the meter and the units show it), 50 W aside.
      const beyond = record.samples.filter((sample) => {
        const net = sample.grid + sample.units.reduce((sum, u) => sum + u.b, 0);
        return sample.t >= 15 && sample.units.some((u) => u.s < Math.min(asked(sample.t), net) - 50);
      });
      beyond.map((s) => `${s.t.toFixed(1)} s: ${s.units.map((u) => u.s).join(' ')} W on ${asked(s.t)} W`).should.eql([]);
      record.failures.should.eql([]);
    });
});
