/**
 * How the benches count reversals (figures() of scripts/bench-zero-matrix.js, which the held-out judge and the tuning
 * look share): issue 36's target is about stretches of constant load, so a ramp (a heat pump starting) counts for none.
 */
import path from 'node:path';
import should from 'should';

interface Sample {
  t: number;
  grid: number;
  battery: number;
  setpoint: number;
  load: number;
  pv: number;
}
type Figures = (
  record: { samples: Sample[]; toggles: unknown[]; writes: number },
  variant: unknown,
  seconds: number,
) => { reversals: number };
// The benches are plain scripts beside dist/, loaded as the judge loads them.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { figures } = require(path.join(__dirname, '..', '..', 'scripts', 'bench-zero-matrix.js')) as { figures: Figures };

/** A heat pump of 1500 W ramping up from 10 s to 30 s, nothing else changing. */
const VARIANT = {
  house: { seed: 1, baseLoadW: 300, noiseW: 0, events: [{ name: 'heat pump', atS: 10, durationS: 100, loadW: 1500, loadRampS: 20 }] },
  sim: {},
};

/** A setpoint at 0 W that zig-zags by 200 W at each of `at` (s). */
function zigzag(at: number[]): Sample[] {
  const samples: Sample[] = [];
  for (let t = 0; t < 60; t = Math.round((t + 0.1) * 10) / 10) {
    const done = at.filter((s) => s <= t).length;
    samples.push({ t, grid: 0, battery: 0, setpoint: done % 2 === 1 ? 200 : 0, load: 0, pv: 0 });
  }
  return samples;
}

describe('bench figures (scripts/bench-zero-matrix.js): reversals at constant load', () => {
  it('counts the reversals of a stretch of constant load', () => {
    const record = { samples: zigzag([35, 37, 39, 41]), toggles: [], writes: 0 };
    should(figures(record, VARIANT, 60).reversals).equal(3);
  });

  it('counts none on a ramp: the same moves while the heat pump ramps', () => {
    const record = { samples: zigzag([15, 17, 19, 21]), toggles: [], writes: 0 };
    should(figures(record, VARIANT, 60).reversals).equal(0);
  });
});
