#!/usr/bin/env node
// Several batteries behind one meter (issue 25; part of `npm run bench`): two units in one simulated house
// (src/simulator/shared-house.ts), a 2400 class at 80 % SOC (dead time 1 s, lag 1.5 s) and a 1600 class at 40 %
// (charge 1200 W, discharge 800 W; dead time 1.5 s, lag 3 s), each drawing 30 W of self-use while active. One grid
// meter, MQTT style: a reading every second, delivered as msg.payload to every controller. The house (100 s unless
// --seconds): 300 W ± 10 W, a fridge, 900 W of PV; a 2 kW kettle 20-50 s, a cloud taking 85 % of the PV 62-88 s
// (5 s ramps): surplus, a large load, surplus, a small load, surplus, so the direction reverses four times.
//
// Controllers:
//   nodes   one localbattery-zero-feed-in node per unit on the same meter, in real Node-RED
//           (node-red-node-test-helper), each unit its own simulator port and device configuration with the class's
//           limits: what owners try first. Real time.
//   equal   the same-information oracle (below) with the total split equally (within each unit's limits).
//   group   the same-information oracle with the total split by splitGroup (src/control/group-split.ts).
//   regulator  the group regulator: one localbattery-zero-feed-in node on all units (devices 2 and 3), in real
//           Node-RED, real time.
// The Node-RED runs (per-unit nodes and the group regulator, with two units and with three, and the switched-off run)
// run side by side in one Node-RED, each its own house and simulators, so the whole takes about --seconds once.
// The switched-off runs: the group regulator on two units under a steady 700 W; half way the fuller unit is switched
// off (its simulator stops its battery and answers nothing): the big one (the small one takes over), and in a second
// run the small one, made the fuller (the big one takes over); each prints when the unit was left out, when the other
// unit was first commanded to carry power and when the grid was back within the node's dead band (±20 W), beside
// the group oracle with the same event (it knows the plant, so it leaves the unit out at once): what the other unit's
// dead time, lag and limit allow at best.
// The oracle runs in simulated time and knows the plant (each unit's dead time, lag and power at every moment, its
// self-use) but the house only from the meter's readings (the same ones, once a second): the need is the reading plus
// the units' power when it was taken. At each reading it splits the need (telling splitGroup each unit's power as it
// will be when the fastest unit could respond, so a reversal waits no longer than needed) and, per unit, writes the share overdriven
// so that the unit's lag reaches it one second later (deadbeat, kept on the share's side of zero and within the
// unit's limits), when it moves by more than 20 W.
//
// Figures: grid error ∫|grid − target| dt; energy moved from one unit into the other (min(charging, discharging) over
// time), as a share of the energy the group moved, and the part of it while the units were commanded opposite ways
// (the rest is a reversal's lag); self-use of active units and their mean number; units commanded to move power at
// low load (load − PV within ±800 W); the SOC spread at the start, half way and the end; writes per minute per unit;
// each unit's largest setpoints against its class's limits. Prints
// markdown; asserts nothing. Then, unless --long off, the long runs in simulated time (3 h of discharge, 3 h of charge,
// each from the starting SOCs): the two oracles and the group regulator itself (its controller, group plant and split,
// as the node wires them, on a virtual clock against simulated units: test/group-long-run.ts), each unit's SOC and
// the spread every half hour, grid error, self-use and writes. Needs `npm run build:test`.
// Options: --seconds <n> (30 to 300), --only nodes,equal,group,regulator, --long on|off, --off on|off (the
// switched-off run), --units 2|3|both (default both; a third unit: 2400 class at 60 %, dead time 2 s, lag 5 s),
// --trace <file.json> (after each table: the 2-second windows where the group regulator's grid error exceeds the group
// oracle's most; the file gets both runs' samples every 0.1 s and the regulator's output messages).
const path = require('node:path');
const { zeroFlow, drive } = require('./bench-zero-matrix.js');

const DIST = path.resolve(__dirname, '..', 'dist');
const { MODEL_CLASSES, REAL_TIME } = require(path.join(DIST, 'src', 'points', 'catalogue.js'));
const TARGET_W = 0;
const SAMPLE_MS = 100;
const FAST = [80, 120];
const LOW_LOAD_W = 800;
const MOVE_W = 20;
const MIN_W = 50;
const CONTROLLERS = ['nodes', 'equal', 'group', 'regulator'];
/** The node's default dead band (W): the switched-off run counts the grid back within it. */
const DEAD_BAND_W = 20;

const HOUSE = require(path.join(DIST, 'test', 'group-long-run.js')).benchHouse();
const FEED = { everyS: 1, startS: 0.5 };
/** The switched-off run: 700 W ± 10 W and no PV, which the fuller unit carries alone and the other can take over. */
const OFF_HOUSE = { seed: 27, baseLoadW: 700, noiseW: 10 };
/**
 * The long runs (simulated time), each from the units' starting SOC: 3 h of 700 W ± 10 W with no PV (discharge), and
 * 3 h of 600 W of surplus (700 W ± 10 W, 1.3 kW of PV: charge). The units convert at 94 % each way there.
 */
const LONG_S = 3 * 3600;
const LONG_HOUSES = {
  discharge: { seed: 26, baseLoadW: 700, noiseW: 10 },
  charge: { seed: 28, baseLoadW: 700, noiseW: 10, pvW: 1300 },
};
const LONG_EFFICIENCY = 0.94;
/** The units of the run: the first two, or all three with --units 3 (the third slow: dead time 2 s, lag 5 s). */
const ALL_UNITS = [
  { key: 'big', model: '2000', initialSoc: 80, deadTimeS: 1, lagS: 1.5 },
  { key: 'small', model: '1600', initialSoc: 40, deadTimeS: 1.5, lagS: 3 },
  { key: 'third', model: '2000', initialSoc: 60, deadTimeS: 2, lagS: 5 },
].map((u) => ({ ...u, maxChargeW: MODEL_CLASSES[u.model].maxChargePower, maxDischargeW: MODEL_CLASSES[u.model].maxDischargePower }));
let UNITS = ALL_UNITS.slice(0, 2);
/**
 * The switched-off runs, the unit switched off first: the big unit (the small one, slower and with 800 W at most,
 * takes over), and the small one made the fuller (at 700 W both run; the big one takes over its share).
 */
const OFF_UNITS = [
  ALL_UNITS.slice(0, 2),
  [
    { ...ALL_UNITS[1], initialSoc: 80 },
    { ...ALL_UNITS[0], initialSoc: 40 },
  ],
];
/** The shortest dead time of the group: when the fastest unit could respond to a command sent now. */
const fastestS = () => Math.min(...UNITS.map((u) => u.deadTimeS));

function options(argv) {
  const chosen = { seconds: 100, only: CONTROLLERS, long: true, units: 'both', off: true, trace: undefined };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--seconds') chosen.seconds = Number(value);
    else if (flag === '--only') chosen.only = value.split(',');
    else if (flag === '--long') chosen.long = value !== 'off';
    else if (flag === '--units') chosen.units = value === 'both' ? value : Number(value);
    else if (flag === '--off') chosen.off = value !== 'off';
    else if (flag === '--trace') chosen.trace = value;
    else throw new Error(`unknown option ${flag}; --seconds, --only, --long on|off, --units 2|3|both, --off on|off, --trace <file>`);
  }
  for (const name of chosen.only)
    if (!CONTROLLERS.includes(name)) throw new Error(`unknown controller ${name}; one of ${CONTROLLERS.join(', ')}`);
  if (!(chosen.seconds >= 30 && chosen.seconds <= 300)) throw new Error('--seconds needs 30 to 300');
  if (![2, 3, 'both'].includes(chosen.units)) throw new Error('--units needs 2, 3 or both');
  return chosen;
}

/** The house with both units in it; `live` units listen on a port, as devices. */
function plant(live, scenario = HOUSE, units = UNITS, efficiency = 1) {
  const { DeviceSimulator, SharedHouse } = require(path.join(DIST, 'src'));
  const house = new SharedHouse({ house: scenario, timeScale: 0, meterFeed: FEED });
  const extra = live
    ? { port: 0, password: require(path.join(DIST, 'test', 'support.js')).PASSWORD, latencyMs: FAST, rejectEarly: true }
    : {};
  const sims = units.map(
    (u, i) =>
      new DeviceSimulator({
        sharedHouse: house,
        udpPort: null,
        workingMode: 4,
        model: u.model,
        initialSoc: u.initialSoc,
        deadTimeS: u.deadTimeS,
        lagS: u.lagS,
        efficiency,
        serialNumber: `SIMGROUP000000${i + 1}`,
        ...extra,
      }),
  );
  return { house, sims };
}

const signedSetpoint = (sim) => {
  if (sim.workingMode !== 4) return 0;
  const { state, power } = sim.control;
  return state === 1 ? -power : state === 2 ? power : 0;
};

const sample = (house, sims) => ({
  t: house.simSeconds,
  grid: house.gridW,
  net: house.loadW - house.pvW,
  units: sims.map((sim) => ({ b: sim.batteryPower, soc: sim.exactSoc, s: signedSetpoint(sim), active: sim.active })),
});

// ---- zero feed-in nodes in Node-RED: one per unit, or one for the group ----

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const withTimeout = (promise, ms, what) =>
  Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms).unref())]);

/** A live run's flow: each unit its device configuration with its class's limits; one node per unit, or one on all. */
function flow(run, prefix) {
  const { deviceConfig } = require(path.join(DIST, 'test', 'support.js'));
  const configs = run.sims.map((sim, i) =>
    deviceConfig(sim, `${prefix}-dev-${run.units[i].key}`, {
      name: run.units[i].key,
      timeout: 10000,
      chargeLimit: run.units[i].maxChargeW,
      dischargeLimit: run.units[i].maxDischargeW,
    }),
  );
  const ids = configs.map((c) => c.node.id);
  // The node as the robustness matrix configures it (one place to adapt after the regulator's rewrite).
  const node = (id, devices) => ({ ...zeroFlow({ node: devices }, ids[0])[0], id, wires: [[`${prefix}-out`]] });
  const zeros = run.grouped
    ? [node(`${prefix}-zero`, { device: ids[0], device2: ids[1] ?? '', device3: ids[2] ?? '' })]
    : ids.map((id, i) => node(`${prefix}-zero-${run.units[i].key}`, { device: id }));
  const nodes = [...configs.map((c) => c.node), ...zeros, { id: `${prefix}-out`, type: 'helper' }];
  return { nodes, zeros: zeros.map((z) => z.id), credentials: Object.assign({}, ...configs.map((c) => c.credentials)) };
}

/**
 * Live runs side by side in one Node-RED, each its own house and simulators in real time: `runs` as
 * { units, grouped, scenario?, offAtS? } (offAtS: the first unit is switched off then). Each gets its samples, its
 * meter readings and the group node's messages.
 */
async function liveRuns(seconds, runs, notes) {
  const { helper } = require(path.join(DIST, 'test', 'support.js'));
  for (const run of runs) {
    Object.assign(run, plant(true, run.scenario ?? HOUSE, run.units), { samples: [], readings: [], messages: [] });
    for (const sim of run.sims) await sim.start();
  }
  await new Promise((resolve) => helper.startServer(resolve));
  try {
    const flows = runs.map((run, i) => flow(run, `r${i}`));
    const modules = ['device', 'zero-feed-in'].map((name) => require(path.join(DIST, 'nodes', `localbattery-${name}.js`)));
    const nodes = flows.flatMap((f) => f.nodes);
    await withTimeout(helper.load(modules, nodes, Object.assign({}, ...flows.map((f) => f.credentials))), 20000, 'loading the flow');
    runs.forEach((run, i) => {
      run.zeros = flows[i].zeros.map((id) => helper.getNode(id));
      helper.getNode(`r${i}-out`).on('input', (msg) => run.messages.push({ t: run.house.simSeconds, payload: msg.payload }));
    });
    await sleep(1500); // the nodes start; the houses' clocks have not
    for (const run of runs) {
      run.house.advance();
      run.house.timeScale = 1;
    }
    const feed = setInterval(() => {
      for (const run of runs)
        for (const r of run.sims[0].takeMeterReadings()) {
          run.readings.push({ t: r.sampledS, grid: r.grid });
          for (const zero of run.zeros) drive(zero, { kind: 'meter', grid: r.grid });
        }
    }, 20);
    const take = setInterval(() => {
      for (const run of runs) {
        run.house.advance();
        if (run.offAtS !== undefined && run.offAt === undefined && run.house.simSeconds >= run.offAtS) {
          run.sims[0].switchOff();
          run.offAt = run.house.simSeconds;
        }
        run.samples.push(sample(run.house, run.sims));
      }
    }, SAMPLE_MS);
    for (let done = 0; done < seconds; done += 10) {
      await sleep(10000);
      process.stderr.write(`… Node-RED: ${done + 10} s of ${seconds} s\n`);
    }
    clearInterval(feed);
    clearInterval(take);
    for (const run of runs) {
      run.house.advance();
      run.house.timeScale = 0;
      run.writes = run.sims.map((sim) => sim.stats.byOperation['Vendor.SetData'] ?? 0);
      run.house = totals(run.house);
    }
    await withTimeout(helper.unload(), 15000, 'unloading the flow').catch((error) => notes.push(error.message));
  } finally {
    await new Promise((resolve) => helper.stopServer(resolve));
    for (const run of runs) for (const sim of run.sims) await sim.stop();
  }
  return runs;
}

const totals = (house) => ({
  movedWh: house.movedBetweenUnitsWh,
  selfUseWh: house.selfUseWh,
  groupWh: house.chargedWh + house.dischargedWh,
});

// ---- the oracle with the same meter readings (simulated time) ----

/** The share split equally over the units, each within its limits (what is left over goes unmet). */
function equalSplit(totalW, units) {
  return units.map((u) => Math.round(Math.max(-u.maxChargeW, Math.min(u.maxDischargeW, totalW / units.length))));
}

function groupSplit() {
  const { splitGroup } = require(path.join(DIST, 'src', 'control', 'group-split.js'));
  let memory;
  return (totalW, units, nowMs) => {
    const split = splitGroup(totalW, units, nowMs, memory);
    memory = split.memory;
    return split.setpoints;
  };
}

/** `offAtS`: the first unit is switched off then, and the oracle, knowing the plant, leaves it out at once. */
function oracleRun(seconds, split, scenario = HOUSE, sampleMs = SAMPLE_MS, offAtS = undefined, efficiency = 1) {
  const { house, sims } = plant(false, scenario, UNITS, efficiency);
  const dt = 0.05;
  const history = [];
  const writes = sims.map(() => []);
  const last = sims.map(() => 0);
  // errorWh: ∫|grid − target| dt at every step (the long runs' samples are too far apart for figures()).
  const record = { samples: [], writes: sims.map(() => 0), readings: [], errorWh: 0 };
  const off = (i) => i === 0 && record.offAt !== undefined;
  const powerAt = (t) => [...history].reverse().find((h) => h.t <= t + 1e-9)?.b ?? sims.map(() => 0);
  /** Unit i's power `horizonS` ahead (default its dead time), from the setpoints already sent (the plant's own model). */
  const ahead = (i, now, horizonS = UNITS[i].deadTimeS) => {
    const { deadTimeS, lagS } = UNITS[i];
    let b = sims[i].batteryPower;
    for (let tau = now; tau < now + horizonS - 1e-9; tau += dt) {
      const demand = writes[i].filter((w) => w.t <= tau - deadTimeS + 1e-9).at(-1)?.s ?? 0;
      b += (demand - b) * (1 - Math.exp(-dt / lagS));
    }
    return b;
  };
  const write = (i, value, now) => {
    const values = value > 0 ? [2, value, 10] : value < 0 ? [1, -value, 100] : [0, 0, 10];
    if (!sims[i].setData(REAL_TIME.stateAddress, values)) throw new Error(`unit ${UNITS[i].key} refused ${value} W`);
    writes[i].push({ t: now, s: value });
    if (writes[i].length > 20) writes[i].shift();
    last[i] = value;
    record.writes[i]++;
  };
  for (let k = 0; k * dt < seconds; k++) {
    house.run(dt);
    record.errorWh += (Math.abs(house.gridW - TARGET_W) * dt) / 3600;
    const now = house.simSeconds;
    if (offAtS !== undefined && record.offAt === undefined && now >= offAtS) {
      sims[0].switchOff();
      record.offAt = now;
    }
    history.push({ t: now, b: sims.map((sim) => sim.batteryPower) });
    if (history.length > 200) history.shift();
    for (const r of sims[0].takeMeterReadings()) {
      record.readings.push({ t: r.sampledS, grid: r.grid });
      const need = r.grid + powerAt(r.sampledS).reduce((sum, b) => sum + b, 0) - TARGET_W;
      const units = sims.map((sim, i) => ({
        id: UNITS[i].key,
        maxChargeW: UNITS[i].maxChargeW,
        maxDischargeW: UNITS[i].maxDischargeW,
        capacityWh: sim.ratedCapacityKwh * 1000,
        soc: sim.exactSoc,
        chargeSoc: 100,
        dischargeSoc: 10,
        leftOut: off(i),
        setpointW: off(i) ? 0 : last[i],
        // It knows the plant: each unit's power when the fastest unit could respond to a command sent now.
        deliveredW: off(i) ? 0 : ahead(i, now, fastestS()),
        responseMs: 0,
        settleMs: (UNITS[i].deadTimeS + 3 * UNITS[i].lagS) * 1000,
      }));
      split(Math.round(need), units, now * 1000).forEach((share, i) => {
        if (off(i)) return;
        const a = Math.exp(-1 / UNITS[i].lagS);
        const overdriven = (share - ahead(i, now) * a) / (1 - a);
        const value =
          share > 0
            ? Math.min(units[i].maxDischargeW, Math.max(0, overdriven))
            : share < 0
              ? Math.max(-units[i].maxChargeW, Math.min(0, overdriven))
              : 0;
        // The device's smallest power is 50 W: a share below it is standby, an overdrive's tail stays at it.
        const rounded = Math.abs(share) < MIN_W ? 0 : Math.sign(share) * Math.max(MIN_W, Math.round(Math.abs(value)));
        if (Math.abs(rounded - last[i]) > MOVE_W || (rounded === 0 && last[i] !== 0) || Math.sign(rounded) !== Math.sign(last[i]))
          write(i, rounded, now);
      });
    }
    if (k % Math.round(sampleMs / 1000 / dt) === 0) record.samples.push(sample(house, sims));
  }
  record.house = totals(house);
  return record;
}

// ---- figures ----

function figures(record, seconds) {
  const { samples } = record;
  let error = 0;
  let opposite = 0;
  let activeTime = 0;
  let lowTime = 0;
  let lowActive = 0;
  let lowAll = 0;
  for (let i = 1; i < samples.length; i++) {
    const s = samples[i];
    const h = (s.t - samples[i - 1].t) / 3600;
    error += Math.abs(s.grid - TARGET_W) * h;
    const charging = s.units.reduce((sum, u) => sum + Math.max(0, -u.b), 0);
    const discharging = s.units.reduce((sum, u) => sum + Math.max(0, u.b), 0);
    const signs = new Set(s.units.map((u) => Math.sign(u.s)).filter((x) => x !== 0));
    if (signs.size > 1) opposite += Math.min(charging, discharging) * h;
    activeTime += s.units.filter((u) => u.active).length * h;
    if (Math.abs(s.net) <= LOW_LOAD_W) {
      // Units the controller keeps running (a lag's tail after a standby is the plant's, not the controller's).
      const commanded = s.units.filter((u) => u.s !== 0).length;
      lowTime += h;
      lowActive += commanded * h;
      if (commanded === s.units.length) lowAll += h;
    }
  }
  const at = (t) => samples.find((s) => s.t >= t) ?? samples.at(-1);
  const spread = (s) => Math.max(...s.units.map((u) => u.soc)) - Math.min(...s.units.map((u) => u.soc));
  const hours = (samples.at(-1).t - samples[0].t) / 3600;
  return {
    errorWh: error.toFixed(1),
    moved: `${record.house.movedWh.toFixed(3)} (${((100 * record.house.movedWh) / record.house.groupWh).toFixed(1)} %; ${opposite.toFixed(2)} commanded opposite ways)`,
    selfUse: `${record.house.selfUseWh.toFixed(2)} (${(activeTime / hours).toFixed(2)})`,
    lowLoad: lowTime > 0 ? `${(lowActive / lowTime).toFixed(2)} (all ${((100 * lowAll) / lowTime).toFixed(0)} %)` : '–',
    spread: [0, seconds / 2, seconds].map((t) => spread(at(t)).toFixed(2)).join(' → '),
    writes: record.writes.map((w) => ((w * 60) / seconds).toFixed(1)).join(' · '),
    peaks: UNITS.map((u, i) => {
      const high = Math.max(0, ...samples.map((s) => s.units[i].s));
      const low = Math.max(0, ...samples.map((s) => -s.units[i].s));
      return `${high}${high > u.maxDischargeW ? '!' : ''} / ${low}${low > u.maxChargeW ? '!' : ''}`;
    }).join(' · '),
  };
}

async function main() {
  const settings = options(process.argv.slice(2));
  const notes = [];
  const traces = {};
  const sets = settings.units === 'both' ? [2, 3] : [settings.units];
  const live = [];
  for (const n of sets) {
    const units = ALL_UNITS.slice(0, n);
    if (settings.only.includes('nodes')) live.push({ table: n, row: 'nodes', units, grouped: false });
    if (settings.only.includes('regulator')) live.push({ table: n, row: 'regulator', units, grouped: true });
  }
  if (settings.off)
    for (const units of OFF_UNITS) live.push({ row: 'off', units, grouped: true, scenario: OFF_HOUSE, offAtS: settings.seconds / 2 });
  if (live.length > 0) await liveRuns(settings.seconds, live, notes);
  for (const n of sets) {
    UNITS = ALL_UNITS.slice(0, n);
    const rows = [];
    const liveRow = (row) => live.find((run) => run.table === n && run.row === row);
    if (liveRow('nodes')) rows.push({ label: 'one zero feed-in node per unit (Node-RED)', record: liveRow('nodes') });
    if (settings.only.includes('equal'))
      rows.push({ label: 'oracle, equal split', record: oracleRun(settings.seconds, (total, units) => equalSplit(total, units)) });
    if (settings.only.includes('group'))
      rows.push({ label: 'oracle, group split (splitGroup)', record: oracleRun(settings.seconds, groupSplit()), oracle: true });
    if (liveRow('regulator'))
      rows.push({ label: 'group regulator: one zero feed-in node on all units (Node-RED)', record: liveRow('regulator'), group: true });
    table(rows, settings.seconds);
    if (settings.trace) traces[n] = trace(rows);
  }
  if (settings.trace) require('node:fs').writeFileSync(settings.trace, JSON.stringify(traces));
  for (const off of live.filter((run) => run.row === 'off')) {
    UNITS = off.units;
    offReport(off, settings.seconds);
  }
  if (settings.long) for (const n of sets) await longRun(ALL_UNITS.slice(0, n));
  for (const note of notes) console.log(`\nNote: ${note}`);
}

/** One run's table (the units of UNITS), and the group regulator's grid error against the group oracle's. */
function table(rows, seconds) {
  console.log(
    `\nSeveral batteries behind one meter: ${seconds} s; ${UNITS.map((u) => `${u.key} (${u.model} class, ${u.initialSoc} %, dead time ${u.deadTimeS} s, lag ${u.lagS} s)`).join(', ')}; ` +
      `a meter reading every second to every controller; a kettle 20-50 s, a cloud 62-88 s.\n`,
  );
  const columns = [
    ['grid error, ∫ abs(grid) dt (Wh)', 'errorWh'],
    ['moved from one unit into another (Wh; share of the group’s energy)', 'moved'],
    ['self-use of active units (Wh; mean active units)', 'selfUse'],
    [`units commanded to move power at low load, load − PV within ±${LOW_LOAD_W} W (mean)`, 'lowLoad'],
    ['SOC spread, points (start → half way → end)', 'spread'],
    [`writes per minute (${UNITS.map((u) => u.key).join(' · ')})`, 'writes'],
    ['largest setpoints, W (discharge / charge per unit; over a class limit: !)', 'peaks'],
  ];
  console.log(`| controller | ${columns.map(([label]) => label).join(' | ')} |`);
  console.log(`|---|${columns.map(() => '---').join('|')}|`);
  const errors = {};
  for (const row of rows) {
    const f = figures(row.record, seconds);
    if (row.oracle) errors.oracle = Number(f.errorWh);
    if (row.group) errors.group = Number(f.errorWh);
    console.log(`| ${row.label} | ${columns.map(([, key]) => f[key]).join(' | ')} |`);
  }
  if (errors.oracle !== undefined && errors.group !== undefined)
    console.log(`\nGroup regulator's grid error: ${(errors.group / errors.oracle).toFixed(2)} × the group oracle's (wanted ≤ 1.5).`);
}

/** A window's grid error (Wh) from 0.1 s samples. */
const windowWh = (samples, from, to) =>
  samples.filter((s) => s.t > from && s.t <= to).reduce((sum, s) => sum + (Math.abs(s.grid - TARGET_W) * SAMPLE_MS) / 1000 / 3600, 0);

/**
 * --trace: the 2-second windows where the group regulator's grid error exceeds the group oracle's most (the house's
 * net load, and each run's setpoints and powers per unit at the window's start); returns both runs for the file.
 */
function trace(rows) {
  const oracle = rows.find((r) => r.oracle)?.record;
  const group = rows.find((r) => r.group)?.record;
  if (!oracle || !group) return undefined;
  const end = Math.min(oracle.samples.at(-1).t, group.samples.at(-1).t);
  const windows = [];
  for (let from = 0; from < end; from += 2)
    windows.push({ from, oracle: windowWh(oracle.samples, from, from + 2), group: windowWh(group.samples, from, from + 2) });
  const at = (samples, t) => samples.find((s) => s.t >= t) ?? samples.at(-1);
  const units = (s) => s.units.map((u) => `${u.s}/${Math.round(u.b)}`).join(' · ');
  console.log('\nWhere the group regulator loses (2 s windows, largest excess first; setpoint/power per unit at the start):\n');
  console.log('| window (s) | net load (W) | oracle (Wh) | regulator (Wh) | excess (Wh) | oracle units | regulator units |');
  console.log('|---|---|---|---|---|---|---|');
  for (const w of [...windows].sort((a, b) => b.group - b.oracle - (a.group - a.oracle)).slice(0, 12)) {
    const [o, g] = [at(oracle.samples, w.from), at(group.samples, w.from)];
    console.log(
      `| ${w.from}-${w.from + 2} | ${Math.round(g.net)} | ${w.oracle.toFixed(2)} | ${w.group.toFixed(2)} | ${(w.group - w.oracle).toFixed(2)} | ${units(o)} | ${units(g)} |`,
    );
  }
  return { oracle: oracle.samples, group: group.samples, messages: group.messages };
}

/** When the grid came back within the dead band after the jump that followed `offAt` (s), from the meter's readings. */
function backAt(readings, offAt) {
  const after = readings.filter((r) => r.t >= offAt);
  const jump = after.findIndex((r) => Math.abs(r.grid - TARGET_W) > DEAD_BAND_W);
  return jump === -1 ? undefined : after.slice(jump).find((r) => Math.abs(r.grid - TARGET_W) <= DEAD_BAND_W)?.t;
}

/**
 * The run with a unit switched off: when it was left out, and when the grid came back within the dead band, for the
 * group regulator node and for the group oracle with the same event (it leaves the unit out at once).
 */
function offReport(run, seconds) {
  const oracle = oracleRun(seconds, groupSplit(), OFF_HOUSE, SAMPLE_MS, run.offAtS);
  const leftOut = run.messages.find((m) => m.t >= run.offAt && m.payload.units?.[0]?.leftOut);
  const figure = (t, from) => (t === undefined ? 'never' : `${(t - from).toFixed(1)} s`);
  const intervals = (t, from) => (t === undefined ? '–' : `${Math.ceil(Math.max(0, t - from) / FEED.everyS)}`);
  // When the other unit was first commanded to carry power after the switch-off.
  const handedAt = (record) => record.samples.find((s) => s.t >= record.offAt && s.units[1].s !== 0)?.t;
  console.log(
    `\nA unit switched off (${OFF_HOUSE.baseLoadW} W ± ${OFF_HOUSE.noiseW} W, no PV; SOC ${run.units.map((u) => `${u.key} ${u.initialSoc} %`).join(', ')}; ` +
      `${run.units[0].key} switched off half way, the ${run.units[1].key} unit takes over):\n`,
  );
  console.log(
    `| controller | left out after the switch-off | ${run.units[1].key} commanded after | grid back within ±${DEAD_BAND_W} W after (meter intervals) | grid error over the run (Wh) |`,
  );
  console.log('|---|---|---|---|---|');
  const row = (label, record, out) => {
    const back = backAt(record.readings, record.offAt);
    console.log(
      `| ${label} | ${out} | ${figure(handedAt(record), record.offAt)} | ${figure(back, record.offAt)} (${intervals(back, record.offAt)}) | ` +
        `${figures(record, record.samples.at(-1).t).errorWh} |`,
    );
  };
  row('group regulator (Node-RED)', run, `${figure(leftOut?.t, run.offAt)} (${leftOut?.payload.units[0].leftOut ?? '–'})`);
  row('oracle, group split (knows the plant)', oracle, '0.0 s (at once)');
}

/**
 * SOC of each unit and their spread every half hour through a long discharge and a long charge: the oracles, and the
 * group regulator (controller, group plant and split as the node wires them) in simulated time (test/group-long-run.ts).
 */
async function longRun(units) {
  const { groupLongRun } = require(path.join(DIST, 'test', 'group-long-run.js'));
  UNITS = units;
  const times = Array.from({ length: LONG_S / 1800 + 1 }, (_, i) => i * 1800);
  for (const [name, scenario] of Object.entries(LONG_HOUSES)) {
    const net = scenario.baseLoadW - (scenario.pvW ?? 0);
    console.log(
      `\nLong ${name} in simulated time: ${LONG_S / 3600} h of ${Math.abs(net)} W ${net > 0 ? 'load, no PV' : 'of PV surplus'}, ` +
        `units converting at ${LONG_EFFICIENCY * 100} % each way; SOC ${UNITS.map((u) => u.key).join(' / ')} and spread (points), every 30 min:\n`,
    );
    console.log(
      `| controller | ${times.map((t) => `${t / 3600} h`).join(' | ')} | grid error (Wh) | moved between units (Wh; share) | self-use (Wh) | writes per hour |`,
    );
    console.log(`|---|${times.map(() => '---').join('|')}|---|---|---|---|`);
    const regulator = await groupLongRun({ units, house: scenario, seconds: LONG_S, sampleS: 60, efficiency: LONG_EFFICIENCY });
    const rows = [
      ['oracle, equal split', oracleRun(LONG_S, (total, us) => equalSplit(total, us), scenario, 60000, undefined, LONG_EFFICIENCY)],
      ['oracle, group split', oracleRun(LONG_S, groupSplit(), scenario, 60000, undefined, LONG_EFFICIENCY)],
      ['group regulator (simulated time)', { ...regulator, house: regulator }],
    ];
    for (const [label, record] of rows) {
      const cells = times.map((t) => {
        const s = record.samples.find((x) => x.t >= t - 30) ?? record.samples.at(-1);
        const socs = s.units.map((u) => u.soc);
        return `${socs.map((x) => x.toFixed(0)).join(' / ')} (${(Math.max(...socs) - Math.min(...socs)).toFixed(0)})`;
      });
      const { movedWh, groupWh, selfUseWh } = record.house;
      const writes = record.writes.map((w) => (w / (LONG_S / 3600)).toFixed(0)).join(' · ');
      console.log(
        `| ${label} | ${cells.join(' | ')} | ${record.errorWh.toFixed(1)} | ${movedWh.toFixed(2)} (${((100 * movedWh) / groupWh).toFixed(2)} %) | ` +
          `${selfUseWh.toFixed(0)} | ${writes} |`,
      );
    }
    console.log(`\nMeter alarms of the group regulator's long run: ${regulator.meterFaults.length} (must be 0).`);
    if (regulator.failures.length > 0) console.log(`\nGroup regulator's failures: ${regulator.failures.map(String).join('; ')}`);
  }
}

main()
  .catch((error) => {
    console.error(error);
    process.exitCode = 1;
  })
  // Node-RED's server and timers keep the process alive.
  .finally(() => process.exit());
