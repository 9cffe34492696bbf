#!/usr/bin/env node
// The zero feed-in part of `npm run bench`: closed-loop controllers against the simulator's house (load steps with a
// 2 kW kettle, a PV cloud, a cycling fridge) and a battery with a dead time of 1 s and a first-order lag. Each
// controller has its own simulator on its own port, so the scenario runs once, all of them in parallel, in real
// Node-RED (node-red-node-test-helper): (a) the node localbattery-zero-feed-in, the meter by message every second,
// (b) the old example flow (read node, function node, delay node, control node), (c) no control, (d) an oracle that
// knows the load and writes once a second, computed in simulated time without Node-RED (the physical limit). Prints
// figures (markdown tables); asserts nothing. Needs `npm run build:test`.
//
// Options (all optional):
//   --seconds <n>        how long to run (default: the whole scenario, 360 s times --scale)
//   --scale <f>          squeeze the scenario's timeline by f (0.25: every event 4 times sooner), not the battery
//   --only <names>       comma-separated: zero, example, none, oracle (default all)
//   --meter-delay <s>    the meter reads the grid this late (default 0)
//
// Figures per controller: grid error energy ∫|grid − target| dt, exported and imported energy, settling time after
// each 2 kW step (back within ±50 W for 3 s in a row) and its overshoot, the slowest settling after every other
// change (the fridge, the microwave, the end of each of the cloud's ramps), setpoint reversals while the load is constant
// (moves over 25 W; total and the most in one stretch), writes per minute, requests under the minimum interval / in parallel / 503s
// (the simulator's stats), and for the other lags whether a sustained oscillation occurs.
const fs = require('node:fs');
const path = require('node:path');

const dist = path.resolve(__dirname, '..', 'dist');
const { helper, PASSWORD } = require(path.join(dist, 'test', 'support.js'));
const { DeviceSimulator, REAL_TIME } = require(path.join(dist, 'src'));
const { countMeterAlarms } = require('./bench-zero-matrix.js');

const TARGET_W = 0;
const DEAD_TIME_S = 1;
const LAG_S = 1.5;
const FAST = [80, 120];
const SLOW = [900, 1100];
const BAND_W = 50;
const SETTLED_S = 3;
const SAMPLE_MS = 100;
/** Setpoint moves up to this size do not count for reversals: the load's noise is ±10 W. */
const REVERSAL_W = 25;
const SCENARIO_S = 360;
const CONTROLLERS = ['zero', 'example', 'none', 'oracle'];
const ZERO_FILE = path.join(dist, 'nodes', 'localbattery-zero-feed-in.js');

const core = (file) => require(require.resolve(`@node-red/nodes/core/${file}`));
const ourNode = (name) => require(path.join(dist, 'nodes', `localbattery-${name}.js`));

function options(argv) {
  const chosen = { seconds: undefined, scale: 1, only: CONTROLLERS, meterDelay: 0 };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--seconds') chosen.seconds = Number(value);
    else if (flag === '--scale') chosen.scale = Number(value);
    else if (flag === '--only') chosen.only = value.split(',');
    else if (flag === '--meter-delay') chosen.meterDelay = Number(value);
    else throw new Error(`unknown option ${flag}`);
  }
  for (const name of chosen.only)
    if (!CONTROLLERS.includes(name)) throw new Error(`unknown controller ${name}; one of ${CONTROLLERS.join(', ')}`);
  if (!(chosen.scale > 0 && chosen.scale <= 10)) throw new Error('--scale needs a number in (0, 10]');
  chosen.seconds ??= Math.round(SCENARIO_S * chosen.scale);
  if (!(chosen.seconds >= 10)) throw new Error('--seconds needs 10 or more');
  if (!(chosen.meterDelay >= 0 && chosen.meterDelay <= 10)) throw new Error('--meter-delay needs 0 to 10 s');
  return chosen;
}

/** The house: 300 W with noise, a fridge, 900 W of PV; a kettle twice, a microwave, a cloud. Times squeezed by `scale`. */
function scenario(scale) {
  const s = (seconds) => seconds * scale;
  return {
    seed: 17,
    baseLoadW: 300,
    noiseW: 10,
    appliances: [{ name: 'fridge', powerW: 110, onS: s(50), offS: s(70), startS: s(20) }],
    pvW: 900,
    events: [
      { name: 'kettle', atS: s(40), durationS: s(60), loadW: 2000 },
      { name: 'microwave', atS: s(130), durationS: s(40), loadW: 900 },
      { name: 'cloud', atS: s(190), durationS: s(80), cloud: 0.8, rampS: 8 },
      { name: 'kettle', atS: s(290), durationS: s(40), loadW: 2000 },
    ],
  };
}

/** Moments the load or PV changes (not the noise), sorted; and the 2 kW steps among them. */
function changes(house, seconds) {
  const times = [];
  for (const a of house.appliances) for (let on = a.startS; on < seconds; on += a.onS + a.offS) times.push(on, on + a.onS);
  for (const e of house.events) times.push(e.atS, e.atS + e.durationS);
  const steps = house.events
    .filter((e) => Math.abs(e.loadW ?? 0) >= 1500)
    .flatMap((e) => [
      { at: e.atS, label: `${e.name} on` },
      { at: e.atS + e.durationS, label: `${e.name} off` },
    ])
    .filter((step) => step.at < seconds);
  // Every other change, a ramp from where it ends: the fridge, smaller loads, each end of a cloud's ramps.
  const others = [
    ...house.appliances.flatMap((a) => {
      const moments = [];
      for (let on = a.startS; on < seconds; on += a.onS + a.offS)
        moments.push({ at: on, label: `${a.name} on` }, { at: on + a.onS, label: `${a.name} off` });
      return moments;
    }),
    ...house.events
      .filter((e) => e.loadW !== undefined && Math.abs(e.loadW) < 1500)
      .flatMap((e) => [
        { at: e.atS, label: `${e.name} on` },
        { at: e.atS + e.durationS, label: `${e.name} off` },
      ]),
    ...house.events
      .filter((e) => e.cloud)
      .flatMap((e) => [
        { at: e.atS + (e.rampS ?? 10), label: `${e.name} in` },
        { at: e.atS + e.durationS, label: `${e.name} out` },
      ]),
  ].filter((change) => change.at < seconds);
  // A change while a ramp is under way settles with the ramp's end, counted there.
  const ramps = house.events
    .filter((e) => e.cloud)
    .flatMap((e) => [
      [e.atS, e.atS + (e.rampS ?? 10)],
      [e.atS + e.durationS - (e.rampS ?? 10), e.atS + e.durationS],
    ]);
  const duringRamp = (change) => ramps.some(([from, to]) => change.at < to && change.at + 6 > from && change.at !== to);
  return {
    times: [...new Set(times)].filter((t) => t < seconds).sort((a, b) => a - b),
    steps,
    others: others.filter((change) => !duringRamp(change)),
  };
}

/** When the grid came back within ±BAND_W of the target for SETTLED_S after `from` (undefined: not before `end`). */
function settledAfter(samples, from, end) {
  let runStart;
  for (const s of samples) {
    if (s.t < from || s.t >= end) continue;
    if (Math.abs(s.grid - TARGET_W) > BAND_W) runStart = undefined;
    else if (s.t - (runStart ??= s.t) >= SETTLED_S) return runStart - from;
  }
  return undefined;
}

/** The setpoint a simulator holds, signed like battery power (positive discharging); undefined outside real-time control. */
function signedSetpoint(sim) {
  if (sim.workingMode !== REAL_TIME.mode) return undefined;
  const { state, power } = sim.control;
  return state === 1 ? -power : state === 2 ? power : 0;
}

/** Samples grid power and setpoint changes of one simulator; `t` is its simulated time. */
function recorder() {
  const samples = [];
  const setpoints = [];
  return {
    samples,
    setpoints,
    take(sim) {
      const t = sim.simulatedSeconds;
      samples.push({ t, grid: sim.gridPower });
      const setpoint = signedSetpoint(sim);
      if (setpoint !== undefined && setpoint !== setpoints.at(-1)?.power) setpoints.push({ t, power: setpoint });
    },
  };
}

function figures(record, stats, scenarioChanges, seconds) {
  const { samples, setpoints } = record;
  let error = 0;
  let exported = 0;
  let imported = 0;
  for (let i = 1; i < samples.length; i++) {
    const dt = (samples[i].t - samples[i - 1].t) / 3600;
    const grid = samples[i].grid;
    error += Math.abs(grid - TARGET_W) * dt;
    exported += Math.max(0, -grid) * dt;
    imported += Math.max(0, grid) * dt;
  }
  const { times, steps, others } = scenarioChanges;
  const next = (t) => times.find((c) => c > t + 1e-6) ?? seconds;
  const settling = steps.map((step) => {
    const end = Math.min(next(step.at), step.at + 30);
    const window = samples.filter((s) => s.t >= step.at && s.t < end);
    const first = window.find((s) => Math.abs(s.grid - TARGET_W) > BAND_W);
    const sign = first ? Math.sign(first.grid - TARGET_W) : 1;
    const settled = settledAfter(window, step.at, end);
    const overshoot = Math.max(0, ...window.map((s) => -sign * (s.grid - TARGET_W)));
    const text = settled === undefined ? `>${Math.round(end - step.at)} s` : `${settled.toFixed(1)} s`;
    return `${text} (${Math.round(overshoot)} W)`;
  });
  // The slowest of the other changes, and how many of them settled within 6 s.
  const otherSettling = others.map((change) => {
    const end = Math.min(next(change.at), change.at + 30);
    return { ...change, after: settledAfter(samples, change.at, end) ?? Infinity, end };
  });
  const slowest = otherSettling.reduce((a, b) => (b.after > a.after ? b : a), { after: -Infinity });
  const within6 = otherSettling.filter((c) => c.after <= 6).length;
  const slowestText = (c) => (c.after === Infinity ? `>${Math.round(c.end - c.at)} s` : `${c.after.toFixed(1)} s`);
  // Reversals: the setpoint's direction of change flips within one stretch of constant load.
  const bounds = [0, ...times, seconds];
  let reversals = 0;
  let most = 0;
  let tailReversals = 0;
  for (let i = 0; i + 1 < bounds.length; i++) {
    const [from, to] = [bounds[i], bounds[i + 1]];
    const inside = setpoints.filter((p) => p.t >= from && p.t < to);
    let direction = 0;
    let count = 0;
    let tail = 0;
    for (let j = 1; j < inside.length; j++) {
      const move = inside[j].power - inside[j - 1].power;
      const d = Math.abs(move) > REVERSAL_W ? Math.sign(move) : 0;
      if (d !== 0 && direction !== 0 && d !== direction) {
        count++;
        // In the second half of a stretch of 30 s or more, a flip means the loop has not come to rest.
        if (to - from >= 30 && inside[j].t >= (from + to) / 2) tail++;
      }
      if (d !== 0) direction = d;
    }
    reversals += count;
    most = Math.max(most, count);
    tailReversals = Math.max(tailReversals, tail);
  }
  const minutes = seconds / 60;
  const writes = stats ? (stats.byOperation['Vendor.SetData'] ?? 0) : record.writes;
  return {
    errorWh: error.toFixed(1),
    exportedWh: exported.toFixed(1),
    importedWh: imported.toFixed(1),
    settling: settling.join(' · ') || '–',
    otherSettling: otherSettling.length
      ? `${slowestText(slowest)} (${slowest.label}); ${within6} of ${otherSettling.length} within 6 s`
      : '–',
    reversals: `${reversals} (most ${most})`,
    oscillation: tailReversals >= 2 ? `yes (${tailReversals} flips late in a stretch)` : 'no',
    writesPerMinute: (writes / minutes).toFixed(1),
    requests: stats
      ? `${stats.violations.filter((v) => v.kind === 'interval').length} / ${stats.violations.filter((v) => v.kind === 'parallel').length} / ${stats.rejectedEarly}`
      : '–',
    meterAlarms: record.meterAlarms ?? '–',
  };
}

/** Runs a controller in simulated time, without Node-RED: `decide(sim)` once a second gives a setpoint, or none. */
function offline(house, lagS, seconds, meterDelay, decide) {
  const sim = new DeviceSimulator({
    udpPort: null,
    timeScale: 0,
    workingMode: REAL_TIME.mode,
    house,
    deadTimeS: DEAD_TIME_S,
    lagS,
    meterDelayS: meterDelay,
  });
  const record = recorder();
  const step = SAMPLE_MS / 1000;
  let writes = 0;
  for (let i = 0; i * step < seconds; i++) {
    if (i % Math.round(1 / step) === 0 && decide) {
      const power = decide(sim);
      if (power !== undefined) {
        const values = power > 0 ? [2, power, 5] : power < 0 ? [1, -power, 100] : [0, 0, 5];
        sim.setData(REAL_TIME.stateAddress, values);
        writes++;
      }
    }
    sim.tick(step);
    record.take(sim);
  }
  record.writes = writes;
  return { record, stats: undefined };
}

const clamp = (power) => Math.round(Math.max(-2400, Math.min(2400, power)));

/** The oracle: the battery power that zeroes the grid now, from the true load and PV, within the class's limits. */
const oracle = (sim) => clamp(sim.houseLoad - sim.pvPower - TARGET_W);

/**
 * An oracle that also knows the plant: it predicts the battery's power when its write takes effect (one dead time, 1 s,
 * later) and overdrives so the lag reaches the need within the next second (deadbeat), within the limits. `floored`:
 * like the node with grid charging off, it never commands more charge than the house's surplus (no pulse below it).
 */
function deadbeat(lagS, floored = false) {
  const a = Math.exp(-1 / lagS);
  let previous = 0;
  return (sim) => {
    const atEffect = previous + (sim.batteryPower - previous) * a;
    const need = sim.houseLoad - sim.pvPower - TARGET_W;
    previous = clamp((need - atEffect * a) / (1 - a));
    if (floored) previous = Math.max(previous, clamp(Math.min(0, sim.houseLoad - sim.pvPower)));
    return previous;
  };
}

/** The example flow "Zero feed-in" as it shipped before the node (b053eaa), armed, for device `device`. */
function oldExample(key, device) {
  const id = (name) => `${name}-${key}`;
  return [
    {
      id: id('read'),
      type: 'localbattery-read',
      device,
      points: ['meterPower', 'batteryPower'],
      interval: 2,
      output: 'object',
      topicPrefix: '',
      decode: false,
      onlyChange: false,
      wires: [[id('function')]],
    },
    {
      id: id('function'),
      type: 'function',
      name: 'zero feed-in setpoint',
      func:
        'const DEAD_BAND_W = 40;\nconst meter = msg.payload.meterPower;\nconst battery = msg.payload.batteryPower;\n' +
        "if (typeof meter !== 'number' || typeof battery !== 'number') {\n    return null;\n}\n" +
        'if (Math.abs(meter) <= DEAD_BAND_W) {\n    return null;\n}\nmsg.payload = Math.round(battery + meter);\nreturn msg;\n',
      outputs: 1,
      wires: [[id('delay')]],
    },
    {
      id: id('delay'),
      type: 'delay',
      pauseType: 'rate',
      timeout: '5',
      timeoutUnits: 'seconds',
      rate: '1',
      nbRateUnits: '5',
      rateUnits: 'second',
      randomFirst: '1',
      randomLast: '5',
      randomUnits: 'seconds',
      drop: true,
      allowrate: false,
      outputs: 1,
      wires: [[id('control')]],
    },
    {
      id: id('control'),
      type: 'localbattery-control',
      device,
      power: 800,
      chargeSoc: 100,
      dischargeSoc: 10,
      clamp: true,
      switchMode: true,
      modeCheck: 600,
      repeat: 30,
      skipped: 'pass',
      wires: [[]],
    },
  ];
}

/** The new node with the meter by message: a function node the harness feeds every second. */
function zeroFlow(key, device) {
  return [
    { id: `feed-${key}`, type: 'function', func: 'return msg;', outputs: 1, wires: [[`zero-${key}`]] },
    {
      id: `zero-${key}`,
      type: 'localbattery-zero-feed-in',
      device,
      meterSource: 'message',
      meterInterval: '1',
      target: String(TARGET_W),
      deadBand: '',
      maxCharge: '',
      maxDischarge: '',
      chargeSoc: '',
      dischargeSoc: '',
      meterTimeout: '',
      onTimeout: '',
      gridCharge: false,
      onStop: 'self-consumption',
      wires: [[]],
    },
  ];
}

const withTimeout = (promise, ms, what) =>
  Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms).unref())]);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The Node-RED controllers: each its own simulator and device configuration; all run at once. */
async function live(settings, house, specs, notes) {
  const runs = [];
  for (const spec of specs) {
    const sim = new DeviceSimulator({
      port: 0,
      udpPort: null,
      password: PASSWORD,
      latencyMs: spec.latency,
      rejectEarly: true,
      timeScale: 0,
      workingMode: REAL_TIME.mode,
      house,
      deadTimeS: DEAD_TIME_S,
      lagS: spec.lag,
      meterDelayS: settings.meterDelay,
    });
    await sim.start();
    const device = `dev-${spec.key}`;
    const config = {
      id: device,
      type: 'localbattery-device',
      name: spec.key,
      host: '127.0.0.1',
      port: sim.port,
      username: 'opend',
      namespace: 'Vendor',
      minInterval: 1000,
      timeout: 10000,
    };
    const flow = spec.kind === 'zero' ? zeroFlow(spec.key, device) : spec.kind === 'example' ? oldExample(spec.key, device) : [];
    runs.push({ spec, sim, nodes: [config, ...flow], credentials: { [device]: { password: PASSWORD } }, record: recorder() });
  }
  const modules = [ourNode('device'), ourNode('read'), ourNode('control'), core('function/10-function.js'), core('function/89-delay.js')];
  let loaded = runs;
  const load = (list, extra) =>
    withTimeout(
      helper.load(
        [...modules, ...extra],
        list.flatMap((r) => r.nodes),
        Object.assign({}, ...list.map((r) => r.credentials)),
      ),
      20000,
      'loading the flow',
    );
  try {
    await load(runs, runs.some((r) => r.spec.kind === 'zero') ? [require(ZERO_FILE)] : []);
  } catch (error) {
    notes.push(`the flow with localbattery-zero-feed-in did not load (${error.message}); ran without it`);
    await helper.unload().catch(() => undefined);
    for (const r of runs.filter((r) => r.spec.kind === 'zero')) await r.sim.stop();
    loaded = runs.filter((r) => r.spec.kind !== 'zero');
    await load(loaded, []);
  }
  for (const r of loaded.filter((r) => r.spec.kind === 'zero')) countMeterAlarms(helper.getNode(`zero-${r.spec.key}`), r.record);
  await sleep(1500); // nodes start; the simulators' clocks have not
  for (const r of loaded) r.sim.timeScale = 1;
  const feed = setInterval(() => {
    for (const r of loaded) {
      if (r.spec.kind !== 'zero') continue;
      try {
        helper.getNode(`feed-${r.spec.key}`)?.receive({ payload: r.sim.meterPower });
      } catch (error) {
        notes.push(`feeding ${r.spec.key}: ${error.message}`);
      }
    }
  }, 1000);
  const sample = setInterval(() => {
    for (const r of loaded) r.record.take(r.sim);
  }, SAMPLE_MS);
  const started = performance.now();
  while (performance.now() - started < settings.seconds * 1000) {
    await sleep(1000);
    const done = Math.floor((performance.now() - started) / 1000);
    if (done % 30 === 0) process.stderr.write(`… ${done} s of ${settings.seconds} s\n`);
  }
  clearInterval(feed);
  clearInterval(sample);
  for (const r of loaded) r.sim.timeScale = 0;
  const results = loaded.map((r) => ({ spec: r.spec, record: r.record, stats: r.sim.stats }));
  await withTimeout(helper.unload(), 15000, 'unloading the flow').catch((error) => notes.push(error.message));
  for (const r of loaded) await r.sim.stop();
  return results;
}

function table(title, rows, columns) {
  console.log(`\n${title}\n`);
  console.log(`| controller | ${columns.map(([label]) => label).join(' | ')} |`);
  console.log(`|---|${columns.map(() => '---').join('|')}|`);
  for (const row of rows) console.log(`| ${row.label} | ${columns.map(([, key]) => row.figures[key]).join(' | ')} |`);
}

async function main() {
  const settings = options(process.argv.slice(2));
  const house = scenario(settings.scale);
  const scenarioChanges = changes(house, settings.seconds);
  const notes = [];
  const has = (name) => settings.only.includes(name);
  const zeroExists = fs.existsSync(ZERO_FILE);
  if (has('zero') && !zeroExists) notes.push(`no ${path.relative(process.cwd(), ZERO_FILE)}: the node's rows are left out`);

  const speed = (latency) => (latency === FAST ? 'fast answers (~0.1 s)' : 'slow answers (~1 s)');
  const specs = [];
  for (const latency of [FAST, SLOW]) {
    if (has('zero') && zeroExists)
      specs.push({ key: `zero-${latency[0]}`, kind: 'zero', latency, lag: LAG_S, label: `zero feed-in node, ${speed(latency)}` });
    if (has('example'))
      specs.push({ key: `example-${latency[0]}`, kind: 'example', latency, lag: LAG_S, label: `old example flow, ${speed(latency)}` });
  }
  for (const lag of [0.5, 5])
    if (has('zero') && zeroExists)
      specs.push({ key: `zero-lag${lag}`, kind: 'zero', latency: FAST, lag, label: `zero feed-in node, lag ${lag} s, fast answers` });

  console.log(
    `Zero feed-in, closed loop: ${settings.seconds} s of the house scenario (timeline ×${settings.scale}), dead time ${DEAD_TIME_S} s, ` +
      `lag ${LAG_S} s unless said, meter delay ${settings.meterDelay} s, target ${TARGET_W} W, ±${BAND_W} W for ${SETTLED_S} s counts as settled.`,
  );
  let liveResults = [];
  if (specs.length > 0) {
    await new Promise((resolve) => helper.startServer(resolve));
    try {
      liveResults = await live(settings, house, specs, notes);
    } finally {
      await new Promise((resolve) => helper.stopServer(resolve));
    }
  }
  const rows = liveResults.map((r) => ({ ...r.spec, figures: figures(r.record, r.stats, scenarioChanges, settings.seconds) }));
  const offlineRow = (label, lag, decide) => {
    const { record, stats } = offline(house, lag, settings.seconds, settings.meterDelay, decide);
    return { label, lag, figures: figures(record, stats, scenarioChanges, settings.seconds) };
  };
  if (has('none')) rows.push(offlineRow('no control (battery idle)', LAG_S, undefined));
  if (has('oracle'))
    for (const lag of [LAG_S, 0.5, 5]) {
      rows.push(offlineRow(`oracle (knows the load, writes once a second), lag ${lag} s`, lag, oracle));
      rows.push(offlineRow(`oracle that also overdrives the lag (deadbeat), lag ${lag} s`, lag, deadbeat(lag)));
      rows.push(offlineRow(`the same, no pulse below the grid-charging floor, lag ${lag} s`, lag, deadbeat(lag, true)));
    }

  const main = rows.filter((r) => r.lag === LAG_S);
  table(`Lag ${LAG_S} s. 2 kW steps: ${scenarioChanges.steps.map((s) => `${s.label} at ${Math.round(s.at)} s`).join(', ')}.`, main, [
    ['grid error ∫|grid − target| (Wh)', 'errorWh'],
    ['exported (Wh)', 'exportedWh'],
    ['imported (Wh)', 'importedWh'],
    ['2 kW steps: settled after (overshoot)', 'settling'],
    ['other changes and ramp ends: slowest settling', 'otherSettling'],
    ['setpoint reversals at constant load (most in one stretch)', 'reversals'],
    ['writes per minute', 'writesPerMinute'],
    ['requests under the minimum / in parallel / 503', 'requests'],
    ['meter alarms (must be 0)', 'meterAlarms'],
  ]);
  const other = rows.filter((r) => r.lag !== LAG_S);
  if (other.length > 0)
    table('Other lags (fast answers)', other, [
      ['grid error (Wh)', 'errorWh'],
      ['2 kW steps: settled after (overshoot)', 'settling'],
      ['setpoint reversals', 'reversals'],
      ['sustained oscillation', 'oscillation'],
      ['writes per minute', 'writesPerMinute'],
      ['meter alarms (must be 0)', 'meterAlarms'],
    ]);
  for (const note of notes) console.log(`\nNote: ${note}`);
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
