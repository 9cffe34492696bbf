#!/usr/bin/env node
// A quick look while tuning (issue 36): the held-out bench's conditions with an outside meter, in simulated time, on
// the tuning seeds only. The product's controller as the node wires it (test/group-long-run.ts, one unit alone, its
// queue at 1 s with 0.4 s answers) against the robustness matrix's oracle with the same information, per house: the
// ratio of grid error energy, the most reversals in a stretch of constant load, energy from the grid. Seconds per
// house instead of minutes; what it shows must then hold in the judge, scripts/bench-unseen.js (real Node-RED, both
// sets). Needs `npm run build:test`.
//
// Options: --houses <n> (default 8)  --seconds <n> (default 30)  --only <conditions,...>  --each
const path = require('node:path');

const DIST = path.join(__dirname, '..', 'dist');
const { CONDITIONS, TUNING_SEEDS } = require(path.join(DIST, 'src', 'simulator', 'house-generator.js'));
const { DeviceSimulator } = require(path.join(DIST, 'src', 'simulator', 'index.js'));
const { groupLongRun } = require(path.join(DIST, 'test', 'group-long-run.js'));
const { figures, oracle } = require('./bench-zero-matrix.js');
const { variantOf } = require('./bench-unseen.js');

function options(argv) {
  const chosen = { houses: 8, seconds: 30, only: Object.keys(CONDITIONS).filter((name) => name !== 'device-meter'), each: false };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--each') {
      chosen.each = true;
      i--;
    } else if (flag === '--houses') chosen.houses = Number(value);
    else if (flag === '--seconds') chosen.seconds = Number(value);
    else if (flag === '--only') chosen.only = value.split(',');
    else throw new Error(`unknown option ${flag}; --houses, --seconds, --only, --each`);
  }
  if (!(Number.isInteger(chosen.houses) && chosen.houses >= 1 && chosen.houses <= TUNING_SEEDS.length))
    throw new Error(`--houses needs 1 to ${TUNING_SEEDS.length}`);
  for (const name of chosen.only)
    if (!CONDITIONS[name] || name === 'device-meter') throw new Error(`--only: conditions with an outside meter, not ${name}`);
  return chosen;
}

/** The controller on one generated case (bench-unseen's variant of it), with the matrix's figures. */
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
  return { errorWh: record.errorWh, reversals: shown.reversals, fromGridWh: record.chargedFromGridWh, writes: record.writes[0] };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[Math.floor(middle)];
};

async function main() {
  const chosen = options(process.argv.slice(2));
  console.log(`Tuning seeds 1-${chosen.houses}, ${chosen.seconds} s each, simulated time (not the judge: scripts/bench-unseen.js).\n`);
  console.log('| condition | × oracle, median | worst | most reversals | from the grid, worst: node / oracle (Wh) |');
  console.log('|---|---|---|---|---|');
  const each = [];
  for (const condition of chosen.only) {
    const rows = [];
    for (const seed of TUNING_SEEDS.slice(0, chosen.houses)) {
      const variant = variantOf(condition, seed, chosen.seconds);
      const ours = await node(variant, chosen.seconds);
      const best = figures(oracle(DeviceSimulator, variant, chosen.seconds), variant, chosen.seconds);
      rows.push({ seed, ratio: ours.errorWh / best.errorWh, ours, best });
      each.push(
        `${condition}:${seed} ${(ours.errorWh / best.errorWh).toFixed(2)} (${ours.errorWh.toFixed(2)} / ${best.errorWh.toFixed(2)} Wh), ` +
          `reversals ${ours.reversals}, from the grid ${ours.fromGridWh.toFixed(2)} / ${best.fromGridWh.toFixed(2)} Wh, writes ${ours.writes}`,
      );
    }
    const worstGrid = rows.reduce((a, b) => (b.ours.fromGridWh > a.ours.fromGridWh ? b : a));
    console.log(
      `| ${condition} | ${median(rows.map((r) => r.ratio)).toFixed(2)} | ${Math.max(...rows.map((r) => r.ratio)).toFixed(2)} | ` +
        `${Math.max(...rows.map((r) => r.ours.reversals))} | ${worstGrid.ours.fromGridWh.toFixed(2)} / ${worstGrid.best.fromGridWh.toFixed(2)} |`,
    );
  }
  if (chosen.each) console.log(`\n${each.join('\n')}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
