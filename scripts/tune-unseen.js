#!/usr/bin/env node
// A quick look while tuning (issue 36): the held-out bench's conditions with an outside meter, in simulated time, on
// the tuning seeds only. The product's controller as the node wires it (test/group-long-run.ts, one unit alone, its
// queue at 1 s with 0.4 s answers) against the robustness matrix's oracle with the same information, per house: the
// ratio of grid error energy, the most reversals in a stretch of constant load, energy from the grid, houses where the
// meter check raised an alarm (every meter here is right); and the ratio to the oracle that keeps the node's
// grid-charging floor (issue 24: no setpoint below min(0, load)), which the default oracle may cross. Seconds per
// house instead of minutes; what it shows must then hold in the judge, scripts/bench-unseen.js (real Node-RED, both
// sets). Needs `npm run build:test`.
//
// Two looks at where the rest lies: --known-plant tells the regulator the battery's true dead time and lag (the
// family holds that one plant), so what remains is the law's; --where splits the grid error over the oracle's by what
// the house's net load did: within 8 s after a step (over 150 W in 0.2 s), on a ramp (over 100 W in 2 s), steady.
//
// Options: --houses <n> (default 8)  --seconds <n> (default 30)  --only <conditions,...>  --each  --known-plant
// --where
const path = require('node:path');

const DIST = path.join(__dirname, '..', 'dist');
const { CONDITIONS, TUNING_SEEDS } = require(path.join(DIST, 'src', 'simulator', 'house-generator.js'));
const { DeviceSimulator } = require(path.join(DIST, 'src', 'simulator', 'index.js'));
const { groupLongRun } = require(path.join(DIST, 'test', 'group-long-run.js'));
const { figures, oracle } = require('./bench-zero-matrix.js');
const { variantOf } = require('./bench-unseen.js');
const family = require(path.join(DIST, 'src', 'control', 'plant-family.js'));

const FLAGS = { '--each': 'each', '--known-plant': 'knownPlant', '--where': 'where' };

function options(argv) {
  const chosen = { houses: 8, seconds: 30, only: Object.keys(CONDITIONS).filter((name) => name !== 'device-meter') };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (FLAGS[flag]) {
      chosen[FLAGS[flag]] = true;
      i--;
    } else if (flag === '--houses') chosen.houses = Number(value);
    else if (flag === '--seconds') chosen.seconds = Number(value);
    else if (flag === '--only') chosen.only = value.split(',');
    else throw new Error(`unknown option ${flag}; --houses, --seconds, --only, ${Object.keys(FLAGS).join(', ')}`);
  }
  if (!(Number.isInteger(chosen.houses) && chosen.houses >= 1 && chosen.houses <= TUNING_SEEDS.length))
    throw new Error(`--houses needs 1 to ${TUNING_SEEDS.length}`);
  for (const name of chosen.only)
    if (!CONDITIONS[name] || name === 'device-meter') throw new Error(`--only: conditions with an outside meter, not ${name}`);
  return chosen;
}

/** With --known-plant: the family the regulator builds holds only the case's true plant (from request and answer). */
function knowPlant(variant) {
  const delayMs = Math.round((variant.deadTimeS + (variant.feed.lateS ?? 0)) * 1000);
  const models = ['startAt', 'ackAt'].map((from) => ({ delayMs, lagMs: variant.lagS * 1000, from }));
  family.plantFamily = () => models.map((model) => ({ ...model }));
}

/** The controller on one generated case (bench-unseen's variant of it), with the matrix's figures and its samples. */
async function node(variant, seconds) {
  const record = await groupLongRun({
    units: [{ key: 'a', model: '2000', initialSoc: 50, deadTimeS: variant.deadTimeS, lagS: variant.lagS, derating: variant.sim.derating }],
    house: variant.house,
    seconds,
    sampleS: 0.1,
    efficiency: 1,
    alone: true,
    meterFeed: variant.feed,
    settings: variant.node,
  });
  const samples = record.samples.map((s) => ({ t: s.t, grid: s.grid, battery: s.units[0].b, setpoint: s.units[0].s, load: 0, pv: 0 }));
  const shown = figures({ samples, toggles: [], writes: record.writes[0] }, variant, seconds);
  return {
    errorWh: record.errorWh,
    reversals: shown.reversals,
    fromGridWh: record.chargedFromGridWh,
    writes: record.writes[0],
    meterAlarms: record.meterFaults.length,
    samples,
  };
}

const CLASSES = ['after a step', 'on a ramp', 'steady'];
/** What the house's net load did at each oracle sample's time: its class (see --where). */
function classify(oracleSamples) {
  const net = oracleSamples.map((s) => s.load - s.pv);
  const dt = oracleSamples[1].t - oracleSamples[0].t;
  const at = (i) => net[Math.max(0, Math.min(net.length - 1, i))];
  const [stepGap, stepAfter, rampSpan] = [0.2, 8, 2].map((s) => Math.round(s / dt));
  let lastStep = -Infinity;
  return net.map((_, i) => {
    if (i >= stepGap && Math.abs(at(i) - at(i - stepGap)) > 150) lastStep = i;
    if (i - lastStep <= stepAfter) return 0;
    return Math.abs(at(i) - at(i - rampSpan)) > 100 ? 1 : 2;
  });
}

/** Grid error (Wh) of `samples` in each class of classify(). */
function errorByClass(samples, oracleSamples, classes) {
  const dt = oracleSamples[1].t - oracleSamples[0].t;
  const sums = CLASSES.map(() => 0);
  for (let i = 1; i < samples.length; i++) {
    const index = Math.min(classes.length - 1, Math.round((samples[i].t - oracleSamples[0].t) / dt));
    sums[classes[index]] += (Math.abs(samples[i].grid) * (samples[i].t - samples[i - 1].t)) / 3600;
  }
  return sums;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[Math.floor(middle)];
};

async function main() {
  const chosen = options(process.argv.slice(2));
  const original = family.plantFamily;
  console.log(
    `Tuning seeds 1-${chosen.houses}, ${chosen.seconds} s each, simulated time (not the judge: scripts/bench-unseen.js)` +
      `${chosen.knownPlant ? '; the regulator told the true plant' : ''}.\n`,
  );
  const where = chosen.where ? ` ${CLASSES.map((c) => `excess ${c}, Wh (oracle's)`).join(' | ')} |` : '';
  console.log(
    `| condition | × oracle, median | worst | most reversals | from the grid, worst: node / oracle (Wh) | houses with a meter alarm | ` +
      `× the oracle keeping the floor, median | worst |${where}`,
  );
  console.log(`|---|---|---|---|---|---|---|---|${chosen.where ? '---|---|---|' : ''}`);
  const each = [];
  for (const condition of chosen.only) {
    const rows = [];
    const excess = CLASSES.map(() => [0, 0]);
    for (const seed of TUNING_SEEDS.slice(0, chosen.houses)) {
      const variant = variantOf(condition, seed, chosen.seconds);
      if (chosen.knownPlant) knowPlant(variant);
      const ours = await node(variant, chosen.seconds);
      family.plantFamily = original;
      const run = oracle(DeviceSimulator, variant, chosen.seconds);
      const best = figures(run, variant, chosen.seconds);
      const floorKept = figures(oracle(DeviceSimulator, variant, chosen.seconds, { keepsFloor: true }), variant, chosen.seconds);
      if (chosen.where) {
        const classes = classify(run.samples);
        const [mine, theirs] = [errorByClass(ours.samples, run.samples, classes), errorByClass(run.samples, run.samples, classes)];
        CLASSES.forEach((_, k) => {
          excess[k][0] += mine[k] - theirs[k];
          excess[k][1] += theirs[k];
        });
      }
      rows.push({ seed, ratio: ours.errorWh / best.errorWh, floorRatio: ours.errorWh / floorKept.errorWh, ours, best });
      each.push(
        `${condition}:${seed} ${(ours.errorWh / best.errorWh).toFixed(2)} (${ours.errorWh.toFixed(2)} / ${best.errorWh.toFixed(2)} Wh), ` +
          `reversals ${ours.reversals}, from the grid ${ours.fromGridWh.toFixed(2)} / ${best.fromGridWh.toFixed(2)} Wh, writes ${ours.writes}, ` +
          `${(ours.errorWh / floorKept.errorWh).toFixed(2)} × the oracle keeping the floor` +
          `${ours.meterAlarms > 0 ? ', meter alarm' : ''}`,
      );
    }
    const worstGrid = rows.reduce((a, b) => (b.ours.fromGridWh > a.ours.fromGridWh ? b : a));
    const split = chosen.where
      ? ` ${excess.map(([more, base]) => `${more >= 0 ? '+' : ''}${more.toFixed(1)} (${base.toFixed(1)})`).join(' | ')} |`
      : '';
    console.log(
      `| ${condition} | ${median(rows.map((r) => r.ratio)).toFixed(2)} | ${Math.max(...rows.map((r) => r.ratio)).toFixed(2)} | ` +
        `${Math.max(...rows.map((r) => r.ours.reversals))} | ${worstGrid.ours.fromGridWh.toFixed(2)} / ${worstGrid.best.fromGridWh.toFixed(2)} | ` +
        `${rows.filter((r) => r.ours.meterAlarms > 0).length} | ` +
        `${median(rows.map((r) => r.floorRatio)).toFixed(2)} | ${Math.max(...rows.map((r) => r.floorRatio)).toFixed(2)} |${split}`,
    );
  }
  if (chosen.each) console.log(`\n${each.join('\n')}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
