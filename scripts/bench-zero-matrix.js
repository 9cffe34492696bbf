#!/usr/bin/env node
// The robustness matrix of `npm run bench` (issue 24, item 9): the zero feed-in node in real Node-RED
// (node-red-node-test-helper) against the simulator's house, one variant of plant or meter at a time:
//   lag-0.5, lag-1.5, lag-5   battery dead time/lag 0.5/0.5, 1/1.5 (all others), 2/5 s; meter by message every second
//   meter-3s-late             a meter every 3 s, each reading 1 s late
//   gaps                      a meter at random gaps of 1 to 8 s (seeded)
//   bad-readings              two single bad readings, +4 kW at 25 s and -4 kW at 60 s
//   derated                   the battery delivers at most 600 W from 5 s to 65 s, though it accepts any setpoint
//   device-meter              meter source 'device': the device's own meter, refreshing every 3 s (BK1600 Ultra)
//   switch-off(-slow)         on stop 'keep': msg.enable=false 2 s after the kettle's 2 kW steps (12 s, 42 s), 1 s after
//                             the microwave's 900 W step (77 s); on again (25 s, 55 s, 82 s)
// The house (90 s unless --seconds): 300 W ± 10 W, 900 W of PV; a 2 kW kettle 10-40 s, a cloud taking 80 % of the PV
// 48-70 s (4 s ramps), a 900 W microwave 76-86 s. Device: answers in 80-120 ms, refuses a request under 1 s.
//
// Each variant runs (a) the node as built now (dist/), (b) the node as built from commit effbcd8 (the old behaviour;
// built once into os.tmpdir() with this checkout's node_modules; left out with a note without git history), each in
// its own child process with its own simulator, at most --jobs (3) at a time, and (c) the oracle with the same
// information, in simulated time. The oracle knows the plant exactly (dead time, lag, derating, the battery's power at
// every moment) but the load only as the variant's meter tells it: the same samples, as late, at the same gaps, with
// the same bad readings. Its load estimate is the last reading plus the battery's power when that reading was taken;
// a jump of over 2.5 kW is held until the next reading confirms it (within 1 kW), so a single bad reading moves
// nothing and a real step waits one reading. Once a second (the device's pace) it writes a model-based deadbeat
// setpoint: the battery's power one dead time ahead is predicted from the setpoints already sent, and the setpoint is
// the one whose lag brings the battery onto the need one second later, limited by the class's powers and by what the
// battery delivers (derating). Without grid charging it may go below min(0, load), the grid-charging floor, only as
// far as the battery, lagging, still lands on the need (it knows the plant, so it never charges from the grid); with
// `keepsFloor` it keeps the node's own rule (issue 24): no setpoint below that floor. It writes only when the setpoint
// moves by more than 20 W. With the device's own meter a read is a request too: it reads once
// after each refresh (it knows when) and writes in the other slots. At an exit ('keep') it writes the need as
// estimated, no pulse.
//
// Figures: grid error energy ∫|grid − target| dt and its ratio to the oracle, the most setpoint reversals (moves
// over 25 W changing direction) in one stretch of constant load (a ramp is none: see constantLoad), writes per
// minute, energy charged from the grid with grid charging off (battery charging beyond the PV surplus), requests
// under the device's interval / in parallel (the simulator's stats), and at each exit where the battery was left 4 s
// later: its setpoint and power against the need before and after the step; "PULSE" when the setpoint lies outside
// [need before, need after] by more than 150 W. Prints markdown tables; asserts nothing. Needs `npm run build:test`.
//
// Options: --only <variants,...>  --seconds <n> (default 90, 30 to 300)  --jobs <n> (default 3)  --trace (after the
// tables: for each run, the stretch with the most reversals and the setpoint's moves in it, time in s: value, W)
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
const { REAL_TIME } = require(path.join(DIST, 'src', 'points', 'catalogue.js'));
const { House } = require(path.join(DIST, 'src', 'simulator', 'house.js'));
const OLD_COMMIT = 'effbcd8';
const TARGET_W = 0;
const SAMPLE_MS = 100;
const REVERSAL_W = 25;
/** A stretch between two changes where the noise-free house moves more than this (W) is a ramp, not constant load. */
const RAMP_W = 50;
const PULSE_W = 150;
const FAST = [80, 120];
const LIMIT_W = 2400;
/** The oracle's load estimate: a jump beyond JUMP_W waits for confirmation; changes up to NOISE_W are noise. */
const JUMP_W = 2500;
const NOISE_W = 25;

const BASE = { deadTimeS: 1, lagS: 1.5, feed: { everyS: 1, startS: 0.5 }, node: {}, sim: {}, toggles: [] };
const SWITCH_OFF = {
  ...BASE,
  node: { onStop: 'keep' },
  toggles: [
    { atS: 12, on: false, stepS: 10 },
    { atS: 25, on: true },
    { atS: 42, on: false, stepS: 40 },
    { atS: 55, on: true },
    { atS: 77, on: false, stepS: 76 },
    { atS: 82, on: true },
  ],
  label: "off 2 s after each 2 kW step, 1 s after the 900 W one (on stop 'keep'), on again",
};
const VARIANTS = {
  'lag-0.5': { ...BASE, deadTimeS: 0.5, lagS: 0.5, label: 'battery dead time 0.5 s, lag 0.5 s' },
  'lag-1.5': { ...BASE, label: 'battery dead time 1 s, lag 1.5 s (reference)' },
  'lag-5': { ...BASE, deadTimeS: 2, lagS: 5, label: 'battery dead time 2 s, lag 5 s' },
  'meter-3s-late': {
    ...BASE,
    feed: { everyS: 3, lateS: 1, startS: 0.5 },
    node: { meterInterval: '3' },
    label: 'meter every 3 s, 1 s late',
  },
  gaps: {
    ...BASE,
    feed: { gapsS: [1, 8], seed: 24, startS: 0.5 },
    node: { meterInterval: '8', meterTimeout: '20' },
    label: 'meter at random gaps of 1-8 s',
  },
  'bad-readings': {
    ...BASE,
    feed: {
      everyS: 1,
      startS: 0.5,
      bad: [
        { atS: 25, offsetW: 4000 },
        { atS: 60, offsetW: -4000 },
      ],
    },
    label: 'two bad readings, +4 kW at 25 s, -4 kW at 60 s',
  },
  derated: { ...BASE, sim: { derating: [{ atS: 5, durationS: 60, maxW: 600 }] }, label: 'battery delivers at most 600 W, 5-65 s' },
  'device-meter': {
    ...BASE,
    feed: undefined,
    sim: { meterRefreshS: 3 },
    node: { meterSource: 'device', meterInterval: '1' },
    label: "device's own meter, refreshing every 3 s",
  },
  'switch-off': SWITCH_OFF,
  'switch-off-slow': { ...SWITCH_OFF, deadTimeS: 2, lagS: 5, label: 'the same with battery dead time 2 s, lag 5 s (longer pulses)' },
};

const HOUSE = {
  seed: 17,
  baseLoadW: 300,
  noiseW: 10,
  pvW: 900,
  events: [
    { name: 'kettle', atS: 10, durationS: 30, loadW: 2000 },
    { name: 'cloud', atS: 48, durationS: 22, cloud: 0.8, rampS: 4 },
    { name: 'microwave', atS: 76, durationS: 10, loadW: 900 },
  ],
};

function options(argv) {
  const chosen = { only: Object.keys(VARIANTS), seconds: 90, jobs: 3, child: undefined, build: undefined, out: undefined, trace: false };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--trace') {
      chosen.trace = true;
      i--;
    } else if (flag === '--only') chosen.only = value.split(',');
    else if (flag === '--seconds') chosen.seconds = Number(value);
    else if (flag === '--jobs') chosen.jobs = Number(value);
    else if (flag === '--child') chosen.child = value;
    else if (flag === '--build') chosen.build = value;
    else if (flag === '--out') chosen.out = value;
    else throw new Error(`unknown option ${flag}; --only, --seconds, --jobs, --trace`);
  }
  for (const name of chosen.only)
    if (!VARIANTS[name]) throw new Error(`unknown variant ${name}; one of ${Object.keys(VARIANTS).join(', ')}`);
  if (!(chosen.seconds >= 30 && chosen.seconds <= 300)) throw new Error('--seconds needs 30 to 300');
  if (!(Number.isInteger(chosen.jobs) && chosen.jobs >= 1 && chosen.jobs <= 8)) throw new Error('--jobs needs 1 to 8');
  return chosen;
}

function simulatorOptions(variant) {
  return {
    udpPort: null,
    timeScale: 0,
    workingMode: 4,
    house: variant.house ?? HOUSE,
    deadTimeS: variant.deadTimeS,
    lagS: variant.lagS,
    meterFeed: variant.feed,
    ...variant.sim,
  };
}

const signedSetpoint = (sim) => {
  if (sim.workingMode !== 4) return null;
  const { state, power } = sim.control;
  return state === 1 ? -power : state === 2 ? power : 0;
};

/** One sample of the plant's truth. */
const sample = (sim) => ({
  t: sim.simulatedSeconds,
  grid: sim.gridPower,
  load: sim.houseLoad,
  pv: sim.pvPower,
  battery: sim.batteryPower,
  setpoint: signedSetpoint(sim),
});

// ---- the node in Node-RED (child process) ----

/**
 * The one place that drives the zero feed-in node: a meter reading, or the loop switched on or off. After the
 * regulator's rewrite, adapt here (and in zeroFlow's configuration).
 */
function drive(node, event) {
  if (event.kind === 'meter') node.receive({ payload: event.grid });
  else if (event.kind === 'enable') node.receive({ enable: event.on });
}

function zeroFlow(variant, device) {
  return [
    {
      id: 'zero',
      type: 'localbattery-zero-feed-in',
      device,
      meterSource: 'message',
      meterInterval: '1',
      target: String(TARGET_W),
      // The node's defaults (the device's limits, dead band 20 W, time-out 10 s), unless the variant says otherwise.
      ...Object.fromEntries(
        ['deadBand', 'maxCharge', 'maxDischarge', 'chargeSoc', 'dischargeSoc', 'meterTimeout', 'onTimeout'].map((k) => [k, '']),
      ),
      gridCharge: false,
      onStop: 'self-consumption',
      ...variant.node,
      wires: [['out']],
    },
    { id: 'out', type: 'helper' },
  ];
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const withTimeout = (promise, ms, what) =>
  Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms).unref())]);

async function child(settings) {
  const { helper, PASSWORD, deviceConfig } = require(path.join(DIST, 'test', 'support.js'));
  const { DeviceSimulator } = require(path.join(DIST, 'src'));
  const variant = settings.variant ?? VARIANTS[settings.child];
  const sim = new DeviceSimulator({ ...simulatorOptions(variant), port: 0, password: PASSWORD, latencyMs: FAST, rejectEarly: true });
  await sim.start();
  const device = deviceConfig(sim, 'dev', { timeout: 10000 });
  const nodes = path.join(settings.build, 'nodes');
  await new Promise((resolve) => helper.startServer(resolve));
  const record = { samples: [], reasons: [], toggles: [] };
  try {
    await withTimeout(
      helper.load(
        [require(path.join(nodes, 'localbattery-device.js')), require(path.join(nodes, 'localbattery-zero-feed-in.js'))],
        [device.node, ...zeroFlow(variant, 'dev')],
        device.credentials,
      ),
      20000,
      'loading the flow',
    );
    const zero = helper.getNode('zero');
    countMeterAlarms(zero, record);
    helper.getNode('out').on('input', (msg) => record.reasons.push({ t: sim.simulatedSeconds, reason: msg.payload?.reason }));
    await sleep(1500); // the node starts; the simulator's clock has not
    sim.timeScale = 1;
    const toggles = [...variant.toggles];
    const poll = setInterval(() => {
      const t = sim.simulatedSeconds;
      for (const r of sim.takeMeterReadings()) drive(zero, { kind: 'meter', grid: r.grid });
      while (toggles.length > 0 && toggles[0].atS <= t) {
        const toggle = toggles.shift();
        record.toggles.push({ ...toggle, t });
        drive(zero, { kind: 'enable', on: toggle.on });
      }
    }, 20);
    const take = setInterval(() => record.samples.push(sample(sim)), SAMPLE_MS);
    await sleep(settings.seconds * 1000);
    clearInterval(poll);
    clearInterval(take);
    sim.timeScale = 0;
    record.stats = sim.stats;
    await withTimeout(helper.unload(), 15000, 'unloading the flow').catch((error) => (record.note = error.message));
  } finally {
    await new Promise((resolve) => helper.stopServer(resolve));
    await sim.stop();
  }
  fs.writeFileSync(settings.out, JSON.stringify(record));
}

// ---- the oracle with the same information (simulated time) ----

/** The battery's power at `t` from the oracle's own record of it (it knows the plant). */
function batteryAt(history, t) {
  for (let i = history.length - 1; i >= 0; i--) if (history[i].t <= t + 1e-9) return history[i].b;
  return 0;
}

/**
 * The load (W, net of PV) the oracle believes, from readings: a jump of over 2.5 kW waits for a second reading; a
 * change within the noise (25 W) is not followed.
 */
function loadEstimator() {
  let estimate;
  let candidate;
  const accept = (implied) => {
    if (estimate === undefined || Math.abs(implied - estimate) > NOISE_W) estimate = implied;
    candidate = undefined;
  };
  return {
    get value() {
      return estimate;
    },
    reading(implied) {
      if (estimate === undefined || Math.abs(implied - estimate) <= JUMP_W) accept(implied);
      else if (candidate !== undefined && Math.abs(implied - candidate) <= 1000) accept(implied);
      else candidate = implied;
    },
  };
}

function oracle(DeviceSimulator, variant, seconds, { keepsFloor = false } = {}) {
  const sim = new DeviceSimulator(simulatorOptions(variant));
  const dt = 0.05;
  const a = Math.exp(-1 / variant.lagS);
  const history = [];
  const writes = [];
  const estimator = loadEstimator();
  const toggles = [...variant.toggles];
  const record = { samples: [], toggles: [], writes: 0 };
  let enabled = true;
  let lastSet;
  const cap = (t) =>
    Math.min(LIMIT_W, ...(variant.sim.derating ?? []).filter((d) => t >= d.atS && t < d.atS + d.durationS).map((d) => d.maxW));
  const write = (power) => {
    const values = power > 0 ? [2, power, 10] : power < 0 ? [1, -power, 100] : [0, 0, 10];
    sim.setData(REAL_TIME.stateAddress, values);
    writes.push({ t: sim.simulatedSeconds, s: power });
    lastSet = power;
    record.writes++;
  };
  /** The battery's power one dead time ahead, from the setpoints already sent (the plant's own model). */
  const predict = (now) => {
    let b = sim.batteryPower;
    const demand = (tau) => {
      let s = 0;
      for (const w of writes) if (w.t <= tau - variant.deadTimeS + 1e-9) s = w.s;
      return Math.max(-cap(tau), Math.min(cap(tau), s));
    };
    for (let tau = now; tau < now + variant.deadTimeS - 1e-9; tau += dt) b += (demand(tau) - b) * (1 - Math.exp(-dt / variant.lagS));
    return b;
  };
  let fresh = false;
  let pulsing = false;
  let nextSlot = 0;
  let lastMeterS;
  const decide = (now) => {
    const need = Math.max(estimator.value - TARGET_W, Math.min(0, estimator.value));
    const ahead = predict(now);
    const limit = cap(now + variant.deadTimeS);
    // Below the floor only as far as the battery, lagging, still lands on the need: it never charges from the grid.
    const floor = keepsFloor ? Math.min(0, estimator.value) : -limit;
    const s = Math.round(Math.max(-limit, floor, Math.min(limit, (need - ahead * a) / (1 - a))));
    pulsing = Math.abs(s - need) > 20;
    fresh = false;
    if (lastSet === undefined || Math.abs(s - lastSet) > 20) write(s);
  };
  for (let i = 0; i * dt < seconds; i++) {
    sim.tick(dt);
    const now = sim.simulatedSeconds;
    history.push({ t: now, b: sim.batteryPower });
    const readings = variant.feed ? sim.takeMeterReadings().map((r) => ({ grid: r.grid, at: r.sampledS })) : [];
    // The device's own meter: a read is a request, taken in the first free slot after the meter refreshed (a pulse's
    // second half goes first).
    if (!variant.feed && sim.meterSampledSeconds !== lastMeterS && now + 1e-9 >= nextSlot && !pulsing) {
      lastMeterS = sim.meterSampledSeconds;
      nextSlot = now + 1;
      readings.push({ grid: sim.meterPower, at: lastMeterS });
    }
    for (const r of readings) estimator.reading(r.grid + batteryAt(history, r.at));
    fresh ||= readings.length > 0;
    while (toggles.length > 0 && toggles[0].atS <= now) {
      const toggle = toggles.shift();
      record.toggles.push({ ...toggle, t: now });
      if (!toggle.on && estimator.value !== undefined)
        write(Math.round(Math.max(Math.min(0, estimator.value), estimator.value - TARGET_W)));
      enabled = toggle.on;
    }
    // At the device's pace: one write a second at most, when a reading came or a pulse must end.
    if (enabled && estimator.value !== undefined && (fresh || pulsing) && now + 1e-9 >= nextSlot) {
      decide(now);
      if (writes.at(-1)?.t === now) nextSlot = now + 1;
    }
    if (i % Math.round(SAMPLE_MS / 1000 / dt) === 0) record.samples.push(sample(sim));
  }
  return record;
}

// ---- figures ----

/** Moments the load or the plant changes (not the noise): the bounds of the stretches of constant load and of ramps. */
function changes(variant, seconds) {
  const times = new House(variant.house ?? HOUSE).changes(seconds);
  for (const d of variant.sim.derating ?? []) times.push(d.atS, d.atS + d.durationS);
  return [...new Set(times)].filter((t) => t > 0 && t < seconds).sort((x, y) => x - y);
}

/** Whether the house's net load (noise aside) stays within RAMP_W from `from` to `to`: not a ramp (a cloud's edge, a heat pump starting). */
function constantLoad(variant, from, to) {
  const still = new House({ ...(variant.house ?? HOUSE), noiseW: 0 });
  const net = Array.from({ length: 9 }, (_, k) => from + ((to - from) * (k + 0.5)) / 9).map((t) => still.load(t) - still.pv(t));
  return Math.max(...net) - Math.min(...net) <= RAMP_W;
}

function figures(record, variant, seconds) {
  const { samples } = record;
  let error = 0;
  let fromGrid = 0;
  for (let i = 1; i < samples.length; i++) {
    const s = samples[i];
    const h = (s.t - samples[i - 1].t) / 3600;
    error += Math.abs(s.grid - TARGET_W) * h;
    fromGrid += Math.max(0, -s.battery - Math.max(0, s.pv - s.load)) * h;
  }
  const bounds = [0, ...changes(variant, seconds), seconds];
  let most = 0;
  let worst;
  for (let i = 0; i + 1 < bounds.length; i++) {
    if (!constantLoad(variant, bounds[i], bounds[i + 1])) continue;
    const inside = samples.filter((s) => s.t >= bounds[i] && s.t < bounds[i + 1] && s.setpoint !== null);
    let direction = 0;
    let count = 0;
    let last = inside[0]?.setpoint;
    const moves = inside.length > 0 ? [`${inside[0].t.toFixed(1)}: ${last}`] : [];
    for (const s of inside.slice(1)) {
      const move = s.setpoint - last;
      if (Math.abs(move) <= REVERSAL_W) continue;
      last = s.setpoint;
      const reversal = direction !== 0 && Math.sign(move) !== direction;
      if (reversal) count++;
      direction = Math.sign(move);
      moves.push(`${s.t.toFixed(1)}: ${s.setpoint}${reversal ? ' (reversal)' : ''}`);
    }
    if (count > most || worst === undefined) worst = { from: bounds[i], to: bounds[i + 1], moves };
    most = Math.max(most, count);
  }
  const writes = record.stats ? (record.stats.byOperation['Vendor.SetData'] ?? 0) : record.writes;
  const kinds = (kind) => record.stats?.violations.filter((v) => v.kind === kind).length;
  return {
    errorWh: error,
    reversals: most,
    worst,
    writesPerMinute: writes / (seconds / 60),
    fromGridWh: fromGrid,
    requests: record.stats ? `${kinds('interval')} / ${kinds('parallel')}` : '–',
    exits: exits(record),
    timeouts: (record.reasons ?? []).filter((r) => r.reason === 'meter timeout').length,
    meterAlarms: record.meterAlarms ?? '–',
  };
}

/** Where the battery was left at each switch-off: setpoint and power 4 s later against the needs around the step. */
function exits(record) {
  const { samples } = record;
  const at = (t) => samples.find((s) => s.t >= t) ?? samples.at(-1);
  const need = (from, to) => {
    const inside = samples.filter((s) => s.t >= from && s.t < to);
    return inside.reduce((sum, s) => sum + s.load - s.pv - TARGET_W, 0) / Math.max(1, inside.length);
  };
  return record.toggles
    .filter((toggle) => !toggle.on && toggle.stepS !== undefined)
    .map((toggle) => {
      const before = need(toggle.stepS - 2, toggle.stepS);
      const after = need(toggle.stepS + 0.5, toggle.t);
      const left = at(toggle.t + 4);
      const [low, high] = [Math.min(before, after), Math.max(before, after)];
      const pulse = left.setpoint !== null && (left.setpoint < low - PULSE_W || left.setpoint > high + PULSE_W);
      return { t: toggle.t, before, after, setpoint: left.setpoint, battery: left.battery, pulse };
    });
}

// ---- the parent: builds the old node, runs the children, prints ----

/** Builds commit effbcd8 once into a cache dir; its dist, or undefined with the reason in `notes`. */
function oldBuild(notes) {
  const dir = path.join(os.tmpdir(), `localbattery-bench-${OLD_COMMIT}`);
  const done = path.join(dir, 'built');
  const modules = path.join(dir, 'node_modules');
  // The cache outlives the checkout that built it: its modules are always this checkout's.
  const linkModules = () => {
    fs.rmSync(modules, { force: true });
    fs.symlinkSync(path.join(ROOT, 'node_modules'), modules);
  };
  if (fs.existsSync(done)) {
    linkModules();
    return path.join(dir, 'dist');
  }
  try {
    execFileSync('git', ['-C', ROOT, 'cat-file', '-e', `${OLD_COMMIT}^{commit}`], { stdio: 'ignore' });
  } catch {
    notes.push(`no git history with commit ${OLD_COMMIT}: the old node's columns are left out`);
    return undefined;
  }
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  execFileSync('sh', [
    '-c',
    `git -C "${ROOT}" archive ${OLD_COMMIT} src nodes icons scripts/copy-assets.js tsconfig.json | tar -x -C "${dir}"`,
  ]);
  linkModules();
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(dir, 'tsconfig.json')]);
  execFileSync(process.execPath, [path.join(dir, 'scripts', 'copy-assets.js')]);
  fs.writeFileSync(done, `${OLD_COMMIT}\n`);
  return path.join(dir, 'dist');
}

function runChild(variant, build, seconds, out, script = __filename) {
  return new Promise((resolve) => {
    const args = [script, '--child', variant, '--build', build, '--seconds', String(seconds), '--out', out];
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (chunk) => (stderr += chunk));
    proc.on('exit', (code) =>
      resolve(
        code === 0 && fs.existsSync(out)
          ? JSON.parse(fs.readFileSync(out, 'utf8'))
          : { failed: stderr.trim().split('\n').slice(-3).join(' ') },
      ),
    );
  });
}

async function pool(tasks, size) {
  const results = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]();
    }
  };
  await Promise.all(Array.from({ length: size }, worker));
  return results;
}

const fixed = (value, digits = 1) => (value === undefined ? '–' : value.toFixed(digits));

function print(settings, rows, notes) {
  const controllers = rows[0]?.runs.map((r) => r.name) ?? [];
  const each = (row, key, format) => row.runs.map((r) => (r.figures ? format(r.figures[key], r) : 'failed')).join(' · ');
  console.log(`\nZero feed-in robustness matrix: ${settings.seconds} s per variant; figures as ${controllers.join(' · ')}.\n`);
  console.log(
    '| variant | grid error (Wh) | × oracle | most reversals in a constant stretch | writes/min | from the grid, grid charging off (Wh) | requests under interval / parallel | meter time-outs | meter alarms (must be 0) |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) {
    const oracleError = row.runs.find((r) => r.name === 'oracle')?.figures?.errorWh;
    const ratio = row.runs
      .filter((r) => r.name !== 'oracle')
      .map((r) => (r.figures && oracleError ? (r.figures.errorWh / oracleError).toFixed(2) : '–'));
    console.log(
      `| ${row.variant} | ${each(row, 'errorWh', (v) => fixed(v))} | ${ratio.join(' · ')} | ${each(row, 'reversals', String)} | ` +
        `${each(row, 'writesPerMinute', (v) => fixed(v))} | ${each(row, 'fromGridWh', (v) => fixed(v))} | ${each(row, 'requests', String)} | ${each(row, 'timeouts', String)} | ${each(row, 'meterAlarms', String)} |`,
    );
  }
  const exitRows = rows.filter((row) => row.runs.some((r) => r.figures?.exits.length));
  if (exitRows.length > 0) {
    console.log('\nWhere the battery was left 4 s after each switch-off (setpoint / power, W; need before → after the step):\n');
    console.log(`| variant | off at | need before → after | ${controllers.join(' | ')} |`);
    console.log(`|---|---|---|${controllers.map(() => '---').join('|')}|`);
    for (const row of exitRows) {
      const reference = row.runs.find((r) => r.figures?.exits.length).figures.exits;
      reference.forEach((exit, i) => {
        const cells = row.runs.map((r) => {
          const e = r.figures?.exits[i];
          if (!e) return '–';
          return e.setpoint === null ? 'handed back' : `${Math.round(e.setpoint)} / ${Math.round(e.battery)}${e.pulse ? ' **PULSE**' : ''}`;
        });
        console.log(
          `| ${row.variant} | ${exit.t.toFixed(1)} s | ${Math.round(exit.before)} → ${Math.round(exit.after)} | ${cells.join(' | ')} |`,
        );
      });
    }
  }
  if (settings.trace) {
    console.log('\nThe stretch with the most reversals, and the setpoint in it (s: W):\n');
    for (const row of rows)
      for (const r of row.runs.filter((run) => run.figures?.worst))
        console.log(`- ${row.variant}, ${r.name}, ${r.figures.worst.from}-${r.figures.worst.to} s: ${r.figures.worst.moves.join(', ')}`);
  }
  for (const row of rows) for (const r of row.runs) if (r.failed) notes.push(`${row.variant}, ${r.name}: failed (${r.failed})`);
  for (const note of notes) console.log(`\nNote: ${note}`);
}

async function parent(settings) {
  const notes = [];
  const { DeviceSimulator } = require(path.join(DIST, 'src'));
  const builds = [{ name: 'new', dir: DIST }];
  const old = oldBuild(notes);
  if (old) builds.push({ name: `old (${OLD_COMMIT})`, dir: old });
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'zero-matrix-'));
  const tasks = [];
  const rows = settings.only.map((variant) => ({ variant, runs: [] }));
  rows.forEach((row) =>
    builds.forEach((build, b) => {
      const run = { name: build.name };
      row.runs.push(run);
      tasks.push(async () => {
        const started = Date.now();
        const record = await runChild(row.variant, build.dir, settings.seconds, path.join(scratch, `${row.variant}-${b}.json`));
        process.stderr.write(`… ${row.variant}, ${build.name}: ${Math.round((Date.now() - started) / 1000)} s\n`);
        if (record.failed) run.failed = record.failed;
        else run.figures = figures(record, VARIANTS[row.variant], settings.seconds);
      });
    }),
  );
  for (const row of rows) {
    const variant = VARIANTS[row.variant];
    row.runs.push({ name: 'oracle', figures: figures(oracle(DeviceSimulator, variant, settings.seconds), variant, settings.seconds) });
  }
  await pool(tasks, settings.jobs);
  fs.rmSync(scratch, { recursive: true, force: true });
  for (const row of rows) row.variant = `${row.variant}: ${VARIANTS[row.variant].label}`;
  print(settings, rows, notes);
}

/** Counts the meter check's alarms of a zero feed-in node in `record.meterAlarms`, by their texts (or keys): a right meter raises none. */
function countMeterAlarms(zero, record) {
  const { errors } = require(path.join(ROOT, 'nodes', 'locales', 'en-US', 'localbattery-zero-feed-in.json'))['localbattery-zero-feed-in'];
  const meterFault = (text) => String(text).includes('errors.meterFault.') || Object.values(errors.meterFault).includes(text);
  const warn = zero.warn.bind(zero);
  record.meterAlarms = 0;
  zero.warn = (text) => {
    if (meterFault(text)) record.meterAlarms++;
    warn(text);
  };
}

if (require.main !== module) module.exports = { VARIANTS, oracle, figures, zeroFlow, drive, child, runChild, pool, countMeterAlarms };
else {
  const settings = options(process.argv.slice(2));
  (settings.child ? child(settings) : parent(settings)).then(
    () => process.exit(0),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
