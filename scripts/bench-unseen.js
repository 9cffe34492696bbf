#!/usr/bin/env node
// Houses the regulator never saw (issue 36, item 1; part of `npm run bench`): per condition of
// src/simulator/house-generator.ts (reference, quick, slow, any-battery, meter-3s-late, gaps, bad-readings, derated,
// device-meter, noise-50W), the zero feed-in node in real Node-RED (the robustness matrix's runner,
// scripts/bench-zero-matrix.js, one child process per run) and the matrix's oracle with the same information, on
// generated houses of the tuning seeds and of the held-out seeds (TUNING_SEEDS, HELD_OUT_SEEDS: the first --houses
// of each). Each case draws its house from its seed, and its battery and meter from its seed and the condition.
//
// Prints per condition and set the distribution over the houses, beside issue 36's targets for the held-out set: the
// ratio of grid error energy to the oracle's (median ≤ 1.25, worst ≤ 1.5), the most setpoint reversals in one
// stretch of constant load (≤ 2; a ramp is none), energy from the grid with grid charging off against max(2 × the
// oracle's, 0.5 Wh) in each house, writes per minute, requests under the device's interval / in parallel (none),
// houses where the meter check raised an alarm (every meter here is right: none); beside them, the ratio to the
// oracle that keeps the node's grid-charging floor (issue 24: no setpoint below min(0, load)), which the matrix's
// oracle may cross: the difference is what that rule costs. The targets are judged against the matrix's oracle, as
// issue 36 set them. Asserts nothing. Needs `npm run build:test`.
//
// Options: --set tuning|held-out|both (default both)  --houses <n> per set (default 2)  --seconds <n> (default 45,
// 30 to 300)  --only <conditions,...>  --jobs <n> (default 2)  --each (after the table: every house's figures)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const DIST = path.join(__dirname, '..', 'dist');
const { CONDITIONS, HELD_OUT_SEEDS, TUNING_SEEDS, generateCase } = require(path.join(DIST, 'src', 'simulator', 'house-generator.js'));
const { child, figures, oracle, pool, runChild } = require('./bench-zero-matrix.js');

const SETS = { tuning: TUNING_SEEDS, 'held-out': HELD_OUT_SEEDS };
/** The houses stay within the 2000 class's 2400 W either way (the matrix's oracle's limit). */
const REACH_W = 2400;
/** Issue 36's targets on the held-out set. */
const TARGET = { median: 1.25, worst: 1.5, reversals: 2, gridFactor: 2, gridFloorWh: 0.5 };

function options(argv) {
  const chosen = { set: 'both', houses: 2, seconds: 45, only: Object.keys(CONDITIONS), jobs: 2, each: false };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--each') {
      chosen.each = true;
      i--;
    } else if (flag === '--set') chosen.set = value;
    else if (flag === '--houses') chosen.houses = Number(value);
    else if (flag === '--seconds') chosen.seconds = Number(value);
    else if (flag === '--only') chosen.only = value.split(',');
    else if (flag === '--jobs') chosen.jobs = Number(value);
    else if (['--child', '--build', '--out'].includes(flag)) chosen[flag.slice(2)] = value;
    else throw new Error(`unknown option ${flag}; --set, --houses, --seconds, --only, --jobs, --each`);
  }
  if (!['tuning', 'held-out', 'both'].includes(chosen.set)) throw new Error('--set needs tuning, held-out or both');
  if (!(Number.isInteger(chosen.houses) && chosen.houses >= 1 && chosen.houses <= 200)) throw new Error('--houses needs 1 to 200');
  if (!(chosen.seconds >= 30 && chosen.seconds <= 300)) throw new Error('--seconds needs 30 to 300');
  if (!(Number.isInteger(chosen.jobs) && chosen.jobs >= 1 && chosen.jobs <= 8)) throw new Error('--jobs needs 1 to 8');
  for (const name of chosen.only)
    if (!CONDITIONS[name]) throw new Error(`unknown condition ${name}; one of ${Object.keys(CONDITIONS).join(', ')}`);
  return chosen;
}

/** A generated case as the matrix's variant: its house, battery, meter and the node's meter settings. */
function variantOf(condition, seed, seconds) {
  const { house, plant } = generateCase(condition, seed, seconds, REACH_W);
  const meter = { meterInterval: String(plant.meterIntervalS), meterTimeout: String(plant.meterTimeoutS) };
  return {
    house: house.scenario,
    deadTimeS: plant.deadTimeS,
    lagS: plant.lagS,
    feed: plant.feed,
    sim: { ...(plant.derating && { derating: plant.derating }), ...(plant.meterRefreshS && { meterRefreshS: plant.meterRefreshS }) },
    node: plant.feed ? meter : { ...meter, meterSource: 'device' },
    toggles: [],
  };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[Math.floor(middle)];
};
const mark = (ok) => (ok ? '✓' : '✗');
/**
 * Houses a set needs before a distribution's pass is a verdict: two passed the held-out targets where twelve missed
 * them in five conditions (docs/benchmarks.md). Under it a pass shows '?'; one house over a limit fails at any count.
 */
const VERDICT_HOUSES = 8;
const verdict = (ok, houses, anyCountFails = true) => (houses >= VERDICT_HOUSES ? mark(ok) : !ok && anyCountFails ? '✗' : '?');

/** One row: the figures of the node and the oracle over a condition's houses of one set. */
function summary(cases) {
  const done = cases.filter((c) => c.node);
  if (done.length === 0) return undefined;
  const ratios = done.map((c) => c.node.errorWh / c.oracle.errorWh);
  const floorRatios = done.map((c) => c.node.errorWh / c.floorKept.errorWh);
  const gridLimit = (c) => Math.max(TARGET.gridFactor * c.oracle.fromGridWh, TARGET.gridFloorWh);
  // The house nearest its limit, or furthest over it.
  const worstGrid = done.reduce((worst, c) => (c.node.fromGridWh / gridLimit(c) > worst.node.fromGridWh / gridLimit(worst) ? c : worst));
  const requests = done.map((c) => c.node.requests.split(' / ').map(Number));
  return {
    houses: done.length,
    median: median(ratios),
    worst: Math.max(...ratios),
    floorKept: { median: median(floorRatios), worst: Math.max(...floorRatios) },
    reversals: Math.max(...done.map((c) => c.node.reversals)),
    oracleReversals: Math.max(...done.map((c) => c.oracle.reversals)),
    grid: {
      node: worstGrid.node.fromGridWh,
      oracle: worstGrid.oracle.fromGridWh,
      ok: done.every((c) => c.node.fromGridWh <= gridLimit(c)),
    },
    writes: median(done.map((c) => c.node.writesPerMinute)),
    oracleWrites: median(done.map((c) => c.oracle.writesPerMinute)),
    interval: requests.reduce((sum, [interval]) => sum + interval, 0),
    parallel: requests.reduce((sum, [, parallel]) => sum + parallel, 0),
    // Every meter is right: an alarm stopped the loop for nothing (its house's error counts it too).
    meterAlarms: done.filter((c) => c.node.meterAlarms > 0).length,
  };
}

function print(settings, rows, notes) {
  const sets = settings.set === 'both' ? Object.keys(SETS) : [settings.set];
  console.log(
    `\nHouses the regulator never saw: ${settings.houses} house(s) per set and condition, ${settings.seconds} s each; ` +
      `the zero feed-in node in real Node-RED against the oracle with the same information. Targets (issue 36, held-out set): ` +
      `median ≤ ${TARGET.median}, worst ≤ ${TARGET.worst} × the oracle; ≤ ${TARGET.reversals} reversals; from the grid ≤ max(2 × oracle, 0.5 Wh); no request under interval or in parallel.` +
      (settings.houses < VERDICT_HOUSES
        ? ` With fewer than ${VERDICT_HOUSES} houses a set a pass is no verdict ('?'): \`--set held-out --houses 12\` gives one.\n`
        : '\n'),
  );
  console.log(
    '| condition | set | houses | × oracle, median (≤ 1.25) | × oracle, worst (≤ 1.5) | most reversals in a constant stretch (≤ 2) · oracle | ' +
      'from the grid, grid charging off: worst house, node / oracle (Wh) | writes/min, median: node · oracle | requests under interval / parallel | ' +
      'houses with a meter alarm (must be 0) | × the oracle keeping the floor: median / worst |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const row of rows)
    for (const set of sets) {
      const s = summary(row.cases.filter((c) => c.set === set));
      if (!s) {
        console.log(`| ${row.condition} | ${set} | 0 | failed | | | | | | | |`);
        continue;
      }
      console.log(
        `| ${row.condition} | ${set} | ${s.houses} | ${s.median.toFixed(2)} ${verdict(s.median <= TARGET.median, s.houses, false)} | ` +
          `${s.worst.toFixed(2)} ${verdict(s.worst <= TARGET.worst, s.houses)} | ` +
          `${s.reversals} ${verdict(s.reversals <= TARGET.reversals, s.houses)} · ${s.oracleReversals} | ` +
          `${s.grid.node.toFixed(2)} / ${s.grid.oracle.toFixed(2)} ${verdict(s.grid.ok, s.houses)} | ` +
          `${s.writes.toFixed(1)} · ${s.oracleWrites.toFixed(1)} | ${s.interval} / ${s.parallel} ${mark(s.interval + s.parallel === 0)} | ` +
          `${s.meterAlarms} ${mark(s.meterAlarms === 0)} | ${s.floorKept.median.toFixed(2)} / ${s.floorKept.worst.toFixed(2)} |`,
      );
    }
  console.log('\nConditions:');
  for (const row of rows) console.log(`- ${row.condition}: ${CONDITIONS[row.condition].label}`);
  if (settings.each) {
    console.log(
      '\n| condition | set | seed | grid error node / oracle (Wh) | × oracle | reversals node · oracle | from the grid node / oracle (Wh) | meter alarms | × the oracle keeping the floor |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const row of rows)
      for (const c of row.cases.filter((one) => one.node))
        console.log(
          `| ${row.condition} | ${c.set} | ${c.seed} | ${c.node.errorWh.toFixed(2)} / ${c.oracle.errorWh.toFixed(2)} | ${(c.node.errorWh / c.oracle.errorWh).toFixed(2)} | ` +
            `${c.node.reversals} · ${c.oracle.reversals} | ${c.node.fromGridWh.toFixed(2)} / ${c.oracle.fromGridWh.toFixed(2)} | ${c.node.meterAlarms} | ` +
            `${(c.node.errorWh / c.floorKept.errorWh).toFixed(2)} |`,
        );
  }
  for (const note of notes) console.log(`\nNote: ${note}`);
}

async function parent(settings) {
  const { DeviceSimulator } = require(path.join(DIST, 'src'));
  const sets = settings.set === 'both' ? Object.keys(SETS) : [settings.set];
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-unseen-'));
  const notes = [];
  const tasks = [];
  const rows = settings.only.map((condition) => ({ condition, cases: [] }));
  for (const row of rows)
    for (const set of sets)
      for (const seed of SETS[set].slice(0, settings.houses)) {
        const variant = variantOf(row.condition, seed, settings.seconds);
        const oracleFigures = (keepsFloor) =>
          figures(oracle(DeviceSimulator, variant, settings.seconds, { keepsFloor }), variant, settings.seconds);
        const run = { set, seed, oracle: oracleFigures(false), floorKept: oracleFigures(true) };
        row.cases.push(run);
        tasks.push(async () => {
          const started = Date.now();
          const name = `${row.condition}:${seed}`;
          const record = await runChild(name, DIST, settings.seconds, path.join(scratch, `${row.condition}-${seed}.json`), __filename);
          process.stderr.write(`… ${name} (${set}): ${Math.round((Date.now() - started) / 1000)} s\n`);
          if (record.failed) notes.push(`${name}: failed (${record.failed})`);
          else run.node = figures(record, variant, settings.seconds);
        });
      }
  await pool(tasks, settings.jobs);
  fs.rmSync(scratch, { recursive: true, force: true });
  print(settings, rows, notes);
}

if (require.main === module) {
  const settings = options(process.argv.slice(2));
  const [condition, seed] = (settings.child ?? '').split(':');
  const running = settings.child ? child({ ...settings, variant: variantOf(condition, Number(seed), settings.seconds) }) : parent(settings);
  running.then(
    () => process.exit(0),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
} else module.exports = { variantOf };
