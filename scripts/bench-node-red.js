#!/usr/bin/env node
// The Node-RED part of `npm run bench`: this package's nodes in real Node-RED (as the tests load it, through
// node-red-node-test-helper), against the simulator behind a loopback relay that adds a random one-way delay to every
// chunk each way, with the simulator answering after a latency and rejecting too-early requests with 503, as devices
// do. Prints one table row per scenario (markdown, for docs/benchmarks.md). Needs `npm run build:test`.
//
// Options (all optional):
//   --seconds <n>        length of each scenario (default 30)
//   --delay <list>       one-way delays of the relay in ms, each way, comma-separated <ms> or <min>-<max>: one run per
//                        network (default 0,0-50: loopback, and a jittery Wi-Fi)
//   --latency <list>     the simulator's answer times in ms, the same way: one run per device (default
//                        1000,900-1100,100-1500: a fixed second, a busy device, a very uneven one)
//   --only <names>       comma-separated scenarios: poll1, poll10, poll50 (K nodes polling every second), poll10x2s
//                        (ten every 2 s: what they ask fits in the device's capacity), control, control+monitoring,
//                        first-setpoint, setpoint-delay (a 10 Hz feed beside a 1 s monitor: how long each setpoint
//                        takes to reach the device, against two slots)
//   --baseline           also runs every scenario with the margin of before issue 16 (the spread of answer times),
//                        shown in brackets next to each figure
//
// Figures: requests per interval, next to the limit (the mean of max(interval, answer time + way back + the next
// connection's handshake + its way there): what a client can do that knows every delay and opens each connection when
// the answer is in; and the same for a client that cannot see each delay, only knows their true range) and their
// ratio to the first (capacity used), poll outputs per node per tick (min and median over the
// nodes), setpoint staleness at the device (the age of the setpoint the simulator holds, counted from when the feed
// produced it, sampled every 50 ms: median, p95, worst), arrivals under the minimum interval as the simulator saw
// them, 503s, and the smallest gap between arrivals.
const path = require('node:path');
const { ClientRequest } = require('node:http');

const dist = path.resolve(__dirname, '..', 'dist');
const { helper, PASSWORD } = require(path.join(dist, 'test', 'support.js'));
const { startRelay } = require(path.join(dist, 'test', 'relay.js'));
const { DeviceSimulator, READ_POINTS, REAL_TIME } = require(path.join(dist, 'src'));
const { ArrivalMargin } = require(path.join(dist, 'src', 'device', 'scheduler.js'));
const nodes = ['device', 'read', 'control'].map((name) => require(path.join(dist, 'nodes', `localbattery-${name}.js`)));

const INTERVAL_MS = 1000;
const SCENARIOS = ['poll1', 'poll10', 'poll50', 'poll10x2s', 'control', 'control+monitoring', 'first-setpoint', 'setpoint-delay'];

function range(text, flag) {
  const match = /^(\d+)(?:-(\d+))?$/.exec(text ?? '');
  if (!match) throw new Error(`${flag} needs <ms> or <min>-<max>, got "${text}"`);
  const min = Number(match[1]);
  const max = match[2] === undefined ? min : Number(match[2]);
  if (max < min) throw new Error(`${flag}: min must not exceed max`);
  return [min, max];
}

const ranges = (text, flag) => (text ?? '').split(',').map((item) => range(item, flag));

function options(argv) {
  const chosen = {
    seconds: 30,
    delays: ranges('0,0-50'),
    latencies: ranges('1000,900-1100,100-1500'),
    only: SCENARIOS,
    baseline: false,
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--baseline') {
      chosen.baseline = true;
      i--;
    } else if (flag === '--seconds') chosen.seconds = Number(value);
    else if (flag === '--delay') chosen.delays = ranges(value, flag);
    else if (flag === '--latency') chosen.latencies = ranges(value, flag);
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

const uniform = ([min, max]) => min + Math.random() * (max - min);

/**
 * Requests per interval that a client can reach at best. `limit`: it knows every delay, opens each connection as soon
 * as the answer before is in and sends at once, so each arrival is max(interval, answer time + way back + the handshake
 * there and back + the way there) after the one before. `unseen`: the same client without seeing each delay, only
 * their true range, which no client can measure (a round trip mixes both ways): to keep every arrival an interval
 * apart it sends each request the interval plus that range after the one before, so one is sent every
 * max(interval + range, way there + answer time + way back + handshake).
 */
function limits(settings) {
  const spread = settings.delay[1] - settings.delay[0];
  let seeing = 0;
  let unseen = 0;
  const n = 200000;
  for (let i = 0; i < n; i++) {
    const network = uniform(settings.delay) + uniform(settings.delay) + uniform(settings.delay) + uniform(settings.delay);
    const answer = uniform(settings.latency);
    seeing += Math.max(INTERVAL_MS, answer + network);
    unseen += Math.max(INTERVAL_MS + spread, answer + network);
  }
  return { limit: INTERVAL_MS / (seeing / n), unseen: INTERVAL_MS / (unseen / n) };
}

/**
 * For --baseline: the margin before issue 16, the whole spread of the last 16 answer times (sent to answered) plus
 * 10 ms, 100 ms while fewer than 8 are timed, plus the 503 steps, at most 400 ms. Swapped into the queue's margin.
 */
const newMargin = {
  connected: ArrivalMargin.prototype.connected,
  answered: ArrivalMargin.prototype.answered,
  ms: Object.getOwnPropertyDescriptor(ArrivalMargin.prototype, 'ms'),
};
const oldMargin = {
  connected() {
    this.sentAt = performance.now();
  },
  answered() {
    newMargin.answered.call(this);
    if (this.sentAt === undefined) return;
    this.answerTimes = [...(this.answerTimes ?? []), performance.now() - this.sentAt].slice(-16);
    this.sentAt = undefined;
  },
  ms: {
    configurable: true,
    get() {
      const times = this.answerTimes ?? [];
      const spread = times.length < 8 ? 100 : Math.max(...times) - Math.min(...times);
      return Math.min(400, Math.ceil(10 + spread + this.tooEarly));
    },
  },
};
function useMargin(margin) {
  ArrivalMargin.prototype.connected = margin.connected;
  ArrivalMargin.prototype.answered = margin.answered;
  Object.defineProperty(ArrivalMargin.prototype, 'ms', margin.ms);
}

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

function requestFigures(result, settings) {
  const perInterval = result.requests / (result.elapsedMs / INTERVAL_MS);
  return {
    requestsPerInterval: perInterval.toFixed(2),
    capacityUsed: (perInterval / settings.limit).toFixed(2),
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
  return perTick.length === 0 ? '–' : `${Math.min(...perTick).toFixed(2)}`;
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
    ...requestFigures(result, settings),
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
    ...requestFigures(result, settings),
    outputsPerTick: pollFigures(result, pollers),
    staleness: `${Math.round(median(ages))} / ${Math.round(quantile(ages, 0.95))} / ${Math.round(Math.max(...ages))}`,
  };
}

/**
 * Time from a control node's first message to the setpoint at the device. `before`: 'read' (a read of the working mode
 * first), 'started' (the message comes once the node's own start read is answered), 'redeploy' (an earlier flow set
 * setpoints, then the flows were deployed anew) or 'redeploy-app' (the same, and meanwhile the owner's app put the
 * device back to self-consumption).
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
    if (before === 'started') await sleep(2 * INTERVAL_MS + 200); // the start's read of the mode has been answered
    if (before?.startsWith('redeploy')) {
      // The earlier flow has run for a while (a redeploy follows work): its setpoints have timed the network's
      // handshakes, as in any running installation; a queue that has timed none holds a prior margin of 100 ms.
      for (let watts = 900; watts < 900 + EARLIER_SETPOINTS; watts++) {
        helper.getNode('control').receive({ payload: watts });
        while (simulator.control.power !== watts) await sleep(5);
      }
      await helper.unload();
      if (before === 'redeploy-app') simulator.changeWorkingMode(1);
      await helper.load(nodes, [config, ...flow], credentials);
      await sleep(INTERVAL_MS + 200);
    }
    const started = performance.now();
    const requestsBefore = simulator.stats.requests;
    helper.getNode('control').receive({ payload: 1234 });
    while (simulator.control.power !== 1234 && performance.now() - started < 15000) await sleep(2);
    const ms = performance.now() - started;
    const requests = simulator.stats.requests - requestsBefore;
    await helper.unload();
    return { ms, requests };
  } finally {
    await relay.close();
    await simulator.stop();
  }
}

/** Setpoints the flow before a redeploy sends: more than the connections the queue times before it trusts its data. */
const EARLIER_SETPOINTS = 10;

const FIRST_SETPOINT_CASES = [
  ['device in working mode 1 (nothing known)', 1, undefined, 2],
  ['device in real-time control, nothing known (Node-RED just started)', REAL_TIME.mode, undefined, 1],
  ['device in real-time control, fresh node, message after its start read', REAL_TIME.mode, 'started', 1],
  ['device in real-time control, known from a read', REAL_TIME.mode, 'read', 1],
  ['device in real-time control, after a redeploy', REAL_TIME.mode, 'redeploy', 1],
  ['after a redeploy, the app meanwhile set working mode 1', REAL_TIME.mode, 'redeploy-app', 2],
];

/**
 * Each control write's arrival at the simulator (its power) that was carried out, from the simulator's own record of
 * arrivals, wrapped; and when each request's bytes left the client (a request may still be on its way when a setpoint
 * is fed: it is no slot the setpoint missed).
 */
function watchArrivals(simulator) {
  const http = simulator.http;
  const record = http.recordArrival.bind(http);
  const departures = [];
  // Inherited from OutgoingMessage: patched on ClientRequest, and the patch deleted afterwards.
  const end = Reflect.get(ClientRequest.prototype, 'end');
  ClientRequest.prototype.end = function (...args) {
    if (this.path.startsWith('/rpc/')) departures.push(performance.now());
    return end.apply(this, args);
  };
  const arrivals = [];
  const setpoints = [];
  http.recordArrival = (arrival, path, operation, req, query) => {
    const early = record(arrival, path, operation, req, query);
    arrivals.push(arrival);
    if (!early && operation.endsWith('.SetData')) {
      const config = JSON.parse(decodeURIComponent(query.replace(/^config=/, '')));
      if (config.t === REAL_TIME.stateAddress) setpoints.push({ at: arrival, power: config.v[1] });
    }
    return early;
  };
  return { arrivals, setpoints, departures, stop: () => delete ClientRequest.prototype.end };
}

/**
 * A control node fed at 10 Hz beside a read node polling every second: for each setpoint fed, the time until the
 * device has it or a newer one, against two slots (twice the mean time between arrivals); and how many took more
 * than two arrivals after they were fed.
 */
async function setpointDelay(settings) {
  const { simulator, relay, config, credentials } = await device(settings, { workingMode: REAL_TIME.mode });
  const fed = [];
  try {
    await helper.load(nodes, [config, controlNode, ...readers(1, 1)], credentials);
    await sleep(3 * INTERVAL_MS); // the start read answered and the poll running
    const watched = watchArrivals(simulator);
    let power = 800;
    const feed = setInterval(() => {
      power += 1;
      fed.push({ at: performance.now(), power });
      helper.getNode('control').receive({ payload: power });
    }, 100);
    await sleep(settings.seconds * 1000);
    clearInterval(feed);
    await sleep(3 * INTERVAL_MS); // the last setpoints arrive
    await helper.unload();
    watched.stop();
    const { arrivals, setpoints, departures } = watched;
    const delays = [];
    let overTwo = 0;
    for (const { at, power: watts } of fed) {
      const reached = setpoints.find((s) => s.power >= watts && s.at >= at);
      if (!reached) continue;
      delays.push(reached.at - at);
      // Requests that left after the setpoint was fed, up to the one that brought it.
      if (departures.filter((d) => d > at && d <= reached.at).length > 2) overTwo++;
    }
    const slot = (arrivals.at(-1) - arrivals[0]) / (arrivals.length - 1);
    return {
      max: Math.round(Math.max(...delays)),
      p99: Math.round(quantile(delays, 0.99)),
      twoSlots: Math.round(2 * slot),
      overTwo,
      count: delays.length,
    };
  } finally {
    await relay.close();
    await simulator.stop();
  }
}

/** `figure` of the new margin's run, and of the baseline's in brackets. */
const pair = (result, figure) => (result.old ? `${result.now[figure]} (${result.old[figure]})` : `${result.now[figure]}`);

async function withBaseline(settings, measure) {
  useMargin(newMargin);
  const now = await measure();
  if (!settings.baseline) return { now };
  useMargin(oldMargin);
  try {
    return { now, old: await measure() };
  } finally {
    useMargin(newMargin);
  }
}

async function main() {
  const chosen = options(process.argv.slice(2));
  await new Promise((resolve) => helper.startServer(resolve));
  console.log(
    `Node-RED with this package; simulator rejecting too-early requests with 503, behind a relay; minimum interval` +
      ` ${INTERVAL_MS} ms; ${chosen.seconds} s per scenario.` +
      (chosen.baseline ? ' In brackets: the same with the margin of before (the spread of answer times).' : '') +
      '\n',
  );
  const rows = [];
  const starts = [];
  const delays = [];
  for (const delay of chosen.delays)
    for (const latency of chosen.latencies) {
      const settings = { ...chosen, delay, latency };
      Object.assign(settings, limits(settings));
      const device = `${latency[0] === latency[1] ? latency[0] : latency.join('-')} ms`;
      const network = delay[1] === 0 ? 'loopback' : `${delay.join('-')} ms`;
      const scenarios = [];
      for (const k of [1, 10, 50]) if (chosen.only.includes(`poll${k}`)) scenarios.push(() => pollScenario(settings, k));
      if (chosen.only.includes('poll10x2s')) scenarios.push(() => pollScenario(settings, 10, 2));
      if (chosen.only.includes('control')) scenarios.push(() => controlScenario(settings, false));
      if (chosen.only.includes('control+monitoring')) scenarios.push(() => controlScenario(settings, true));
      for (const scenario of scenarios) {
        const result = await withBaseline(settings, scenario);
        rows.push({
          device,
          network,
          limit: settings.limit.toFixed(2),
          unseen: settings.unseen.toFixed(2),
          scenario: result.now.scenario,
          result,
        });
        console.error(`done: ${device}, ${network}, ${result.now.scenario}`);
      }
      if (chosen.only.includes('first-setpoint'))
        for (const [label, mode, before, intervals] of FIRST_SETPOINT_CASES) {
          const result = await withBaseline(settings, async () => {
            const { ms, requests } = await firstSetpoint(settings, mode, before);
            return { ms: Math.round(ms), requests };
          });
          starts.push({ device, network, label, intervals, result });
          console.error(`done: ${device}, ${network}, ${label}`);
        }
      if (chosen.only.includes('setpoint-delay')) {
        delays.push({ device, network, result: await withBaseline(settings, () => setpointDelay(settings)) });
        console.error(`done: ${device}, ${network}, setpoint delay`);
      }
    }
  if (rows.length > 0) {
    console.log(
      '| device answers | network (each way) | scenario | requests per interval | limit | limit, delays unseen | capacity used | arrivals under the minimum | 503s | smallest gap (ms) | outputs per tick (min) | setpoint age, ms (median / p95 / worst) |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const { device, network, limit, unseen, scenario, result } of rows)
      console.log(
        `| ${device} | ${network} | ${scenario} | ${pair(result, 'requestsPerInterval')} | ${limit} | ${unseen} | ${pair(result, 'capacityUsed')} | ` +
          `${pair(result, 'early')} | ${pair(result, 'rejected503')} | ${pair(result, 'minGapMs')} | ${pair(result, 'outputsPerTick')} | ` +
          `${pair(result, 'staleness')} |`,
      );
  }
  if (starts.length > 0) {
    console.log(
      '\n| device answers | network (each way) | first setpoint of a control node | at the device after, ms | requests | target |',
    );
    console.log('|---|---|---|---|---|---|');
    for (const { device, network, label, intervals, result } of starts)
      console.log(
        `| ${device} | ${network} | ${label} | ${pair(result, 'ms')} | ${pair(result, 'requests')} | ≤ ${intervals * INTERVAL_MS} ms |`,
      );
  }
  if (delays.length > 0) {
    console.log(
      '\n| device answers | network (each way) | 10 Hz setpoints beside a 1 s monitor: delay to the device, max / p99 (ms) | two slots (ms) | setpoints over two slots | setpoints |',
    );
    console.log('|---|---|---|---|---|---|');
    for (const { device, network, result } of delays)
      console.log(
        `| ${device} | ${network} | ${pair(result, 'max')} / ${pair(result, 'p99')} | ${pair(result, 'twoSlots')} | ${pair(result, 'overTwo')} | ${pair(result, 'count')} |`,
      );
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
