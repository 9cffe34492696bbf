#!/usr/bin/env node
// The Node-RED part of `npm run bench`: this package's nodes in real Node-RED (as the tests load it, through
// node-red-node-test-helper), against the simulator behind a loopback relay that adds a random one-way delay to every
// chunk each way, with the simulator answering after a latency and rejecting too-early requests with 503, as devices
// do. Prints one table row per scenario (markdown, for the README). Needs `npm run build:test`.
//
// Options (all optional):
//   --seconds <n>        length of each scenario (default 30)
//   --delay <min-max>    one-way delay of the relay in ms, each way (default 0-50)
//   --latency <min-max>  the simulator's answer time in ms (default 1000)
//   --only <names>       comma-separated scenarios: poll1, poll10, poll50 (K nodes polling every second), poll10x2s
//                        (ten every 2 s: what they ask fits in the device's capacity), control, control+monitoring,
//                        first-setpoint
//
// Figures: requests per interval (and their ratio to the device's limit of one request per minimum interval), poll
// outputs per node per tick (min and median over the nodes), setpoint staleness at the device (the age of the setpoint
// the simulator holds, counted from when the feed produced it, sampled every 50 ms: median, p95, worst), arrivals
// under the minimum interval as the simulator saw them, 503s, and the smallest gap between arrivals.
const path = require('node:path');

const dist = path.resolve(__dirname, '..', 'dist');
const { helper, PASSWORD } = require(path.join(dist, 'test', 'support.js'));
const { startRelay } = require(path.join(dist, 'test', 'relay.js'));
const { DeviceSimulator, READ_POINTS, REAL_TIME } = require(path.join(dist, 'src'));
const nodes = ['device', 'read', 'control'].map((name) => require(path.join(dist, 'nodes', `localbattery-${name}.js`)));

const INTERVAL_MS = 1000;
const SCENARIOS = ['poll1', 'poll10', 'poll50', 'poll10x2s', 'control', 'control+monitoring', 'first-setpoint'];

function range(text, flag) {
  const match = /^(\d+)(?:-(\d+))?$/.exec(text ?? '');
  if (!match) throw new Error(`${flag} needs <ms> or <min>-<max>, got "${text}"`);
  const min = Number(match[1]);
  const max = match[2] === undefined ? min : Number(match[2]);
  if (max < min) throw new Error(`${flag}: min must not exceed max`);
  return [min, max];
}

function options(argv) {
  const chosen = { seconds: 30, delay: [0, 50], latency: [1000, 1000], only: SCENARIOS };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--seconds') chosen.seconds = Number(value);
    else if (flag === '--delay') chosen.delay = range(value, flag);
    else if (flag === '--latency') chosen.latency = range(value, flag);
    else if (flag === '--only') chosen.only = value.split(',');
    else throw new Error(`unknown option ${flag}`);
  }
  if (!(chosen.seconds >= 3)) throw new Error('--seconds needs 3 or more');
  for (const name of chosen.only)
    if (!SCENARIOS.includes(name)) throw new Error(`unknown scenario ${name}; one of ${SCENARIOS.join(', ')}`);
  return chosen;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const quantile = (values, q) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const median = (values) => quantile(values, 0.5);

/** A simulator behind the relay, and the flow's device configuration pointing at the relay. */
async function device(settings, simulatorOptions = {}) {
  const simulator = new DeviceSimulator({
    port: 0,
    udpPort: null,
    password: PASSWORD,
    latencyMs: settings.latency,
    rejectEarly: true,
    timeScale: 0,
    ...simulatorOptions,
  });
  await simulator.start();
  const relay = await startRelay(simulator.port, { minMs: settings.delay[0], maxMs: settings.delay[1] });
  const config = {
    id: 'device1',
    type: 'localbattery-device',
    name: 'bench',
    host: '127.0.0.1',
    port: relay.port,
    username: 'opend',
    namespace: 'Vendor',
    minInterval: INTERVAL_MS,
    timeout: 10000,
  };
  return { simulator, relay, config, credentials: { device1: { password: PASSWORD } } };
}

/** K read nodes polling every `seconds`, each a different small set of points, each wired to its own counter. */
function readers(k, seconds, first = 0) {
  const points = READ_POINTS.filter((p) => p.type !== 'string' && !p.category.includes('Pack') && !p.category.includes('beyond'));
  const flow = [];
  for (let i = first; i < first + k; i++) {
    const mine = [points[(i * 3) % points.length], points[(i * 3 + 1) % points.length]].map((p) => p.name);
    flow.push({
      id: `read${i}`,
      type: 'localbattery-read',
      device: 'device1',
      points: mine,
      interval: seconds,
      output: 'object',
      wires: [[`out${i}`]],
    });
    flow.push({ id: `out${i}`, type: 'helper' });
  }
  return flow;
}

/** The times of each poller's outputs. */
function countOutputs(ids) {
  const counts = new Map(ids.map((id) => [id, []]));
  for (const id of ids) helper.getNode(`out${id.slice(4)}`).on('input', () => counts.get(id).push(performance.now()));
  return counts;
}

/** Runs `flow` for the scenario's time; `during` may drive it; returns the simulator's view and the counts. */
async function run(settings, flow, { simulatorOptions, during, pollers = [] } = {}) {
  const { simulator, relay, config, credentials } = await device(settings, simulatorOptions);
  try {
    await helper.load(nodes, [config, ...flow], credentials);
    const counts = countOutputs(pollers.map((p) => p.id));
    const requestsBefore = simulator.stats.requests;
    const started = performance.now();
    const driven = during ? during(simulator) : undefined;
    await sleep(settings.seconds * 1000);
    const elapsedMs = performance.now() - started;
    const samples = driven ? await driven.stop() : undefined;
    const stats = simulator.stats;
    await helper.unload();
    return { stats, requests: stats.requests - requestsBefore, elapsedMs, counts, samples };
  } finally {
    await relay.close();
    await simulator.stop();
  }
}

function requestFigures(result) {
  const perInterval = result.requests / (result.elapsedMs / INTERVAL_MS);
  return {
    requestsPerInterval: perInterval.toFixed(2),
    early:
      result.stats.violations.filter((v) => v.kind === 'interval').length +
      result.stats.violations.filter((v) => v.kind === 'parallel').length,
    rejected503: result.stats.rejectedEarly,
    minGapMs: result.stats.minGapMs === undefined ? '–' : Math.round(result.stats.minGapMs),
  };
}

/** Outputs per tick between a node's first and last output (the first answer's wait is not a missed tick). */
function pollFigures(result, pollers) {
  const perTick = pollers.map((p) => {
    const times = result.counts.get(p.id);
    return times.length < 2 ? 0 : (times.length - 1) / ((times.at(-1) - times[0]) / (p.seconds * 1000));
  });
  return perTick.length === 0 ? '–' : `${Math.min(...perTick).toFixed(2)} / ${median(perTick).toFixed(2)}`;
}

/** A 10 Hz control feed of discharge setpoints, each a new power; samples the age of the one the device holds. */
function controlFeed(simulator) {
  const producedAt = new Map();
  let power = 800;
  const ages = [];
  const feed = setInterval(() => {
    power = power >= 2300 ? 800 : power + 1;
    producedAt.set(power, performance.now());
    helper.getNode('control').receive({ payload: power });
  }, 100);
  const sample = setInterval(() => {
    const held = simulator.control;
    const at = held.state === 2 ? producedAt.get(held.power) : undefined;
    if (at !== undefined) ages.push(performance.now() - at);
  }, 50);
  return {
    stop: async () => {
      clearInterval(feed);
      clearInterval(sample);
      await sleep(50);
      return ages;
    },
  };
}

const controlNode = { id: 'control', type: 'localbattery-control', device: 'device1', repeat: 0, skipped: 'drop', wires: [[]] };

async function pollScenario(settings, k, seconds = 1) {
  const flow = readers(k, seconds);
  const pollers = flow.filter((n) => n.type === 'localbattery-read').map((n) => ({ id: n.id, seconds }));
  const result = await run(settings, flow, { pollers });
  return {
    scenario: `${k} read node${k > 1 ? 's' : ''} polling every ${seconds} s`,
    ...requestFigures(result),
    outputsPerTick: pollFigures(result, pollers),
    staleness: '–',
  };
}

async function controlScenario(settings, monitoring) {
  const flow = [controlNode];
  const pollers = [];
  if (monitoring) {
    const every1 = readers(1, 1, 0);
    const every2 = readers(1, 2, 1);
    flow.push(...every1, ...every2);
    pollers.push({ id: 'read0', seconds: 1 }, { id: 'read1', seconds: 2 });
  }
  const result = await run(settings, flow, { simulatorOptions: { workingMode: REAL_TIME.mode }, during: controlFeed, pollers });
  const ages = result.samples;
  return {
    scenario: monitoring ? '10 Hz control + reads every 1 s and 2 s' : '10 Hz control feed',
    ...requestFigures(result),
    outputsPerTick: pollFigures(result, pollers),
    staleness: `${Math.round(median(ages))} / ${Math.round(quantile(ages, 0.95))} / ${Math.round(Math.max(...ages))} ms`,
  };
}

/**
 * Time from a control node's first message to the setpoint at the device. `before`: 'read' (a read of the working mode
 * first) or 'redeploy' (an earlier flow set a setpoint, then the flows were deployed anew).
 */
async function firstSetpoint(settings, workingMode, before) {
  const knownByRead = before === 'read';
  const flow = [controlNode];
  if (knownByRead)
    flow.push(
      { id: 'mode', type: 'localbattery-read', device: 'device1', points: ['workingMode'], wires: [['modeOut']] },
      { id: 'modeOut', type: 'helper' },
    );
  const { simulator, relay, config, credentials } = await device(settings, { workingMode });
  try {
    await helper.load(nodes, [config, ...flow], credentials);
    if (knownByRead) {
      const read = new Promise((resolve) => helper.getNode('modeOut').once('input', resolve));
      helper.getNode('mode').receive({});
      await read;
      await sleep(INTERVAL_MS + 200); // the next request slot is free again
    }
    if (before === 'redeploy') {
      helper.getNode('control').receive({ payload: 900 });
      while (simulator.control.power !== 900) await sleep(5);
      await helper.unload();
      await helper.load(nodes, [config, ...flow], credentials);
      await sleep(INTERVAL_MS + 200);
    }
    const started = performance.now();
    helper.getNode('control').receive({ payload: 1234 });
    while (simulator.control.power !== 1234 && performance.now() - started < 15000) await sleep(2);
    const ms = performance.now() - started;
    await helper.unload();
    return { ms, stats: simulator.stats };
  } finally {
    await relay.close();
    await simulator.stop();
  }
}

async function main() {
  const settings = options(process.argv.slice(2));
  await new Promise((resolve) => helper.startServer(resolve));
  console.log(
    `Node-RED with this package; simulator answering in ${settings.latency.join('-')} ms and rejecting too-early requests with 503,` +
      ` behind a relay adding ${settings.delay.join('-')} ms each way; minimum interval ${INTERVAL_MS} ms; ${settings.seconds} s per scenario.\n`,
  );
  const rows = [];
  for (const k of [1, 10, 50]) if (settings.only.includes(`poll${k}`)) rows.push(await pollScenario(settings, k));
  if (settings.only.includes('poll10x2s')) rows.push(await pollScenario(settings, 10, 2));
  if (settings.only.includes('control')) rows.push(await controlScenario(settings, false));
  if (settings.only.includes('control+monitoring')) rows.push(await controlScenario(settings, true));
  if (rows.length > 0) {
    console.log(
      '| scenario | requests per interval (limit 1) | arrivals under the minimum | 503s | smallest gap | outputs per tick (min / median) | setpoint age (median / p95 / worst) |',
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const r of rows)
      console.log(
        `| ${r.scenario} | ${r.requestsPerInterval} | ${r.early} | ${r.rejected503} | ${r.minGapMs} ms | ${r.outputsPerTick} | ${r.staleness} |`,
      );
  }
  if (settings.only.includes('first-setpoint')) {
    console.log('\n| first setpoint | at the device after | requests |');
    console.log('|---|---|---|');
    for (const [label, mode, before] of [
      ['device in working mode 1 (mode written first, without reading it)', 1, undefined],
      ['device in real-time control, nothing known (Node-RED just started)', REAL_TIME.mode, undefined],
      ['device in real-time control, known from a read', REAL_TIME.mode, 'read'],
      ['device in real-time control, after a redeploy', REAL_TIME.mode, 'redeploy'],
    ]) {
      const result = await firstSetpoint(settings, mode, before);
      console.log(`| ${label} | ${Math.round(result.ms)} ms | ${JSON.stringify(result.stats.byOperation).replace(/"/g, '')} |`);
    }
  }
  await new Promise((resolve) => helper.stopServer(resolve));
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
