#!/usr/bin/env node
// `npm start`: the simulator as a stand-in device on loopback, and Node-RED on 127.0.0.1 with this package
// (from the working tree), FlowFuse Dashboard 2 (the devDependency that `npm install` brought; no network needed)
// and the demo flows deployed. Ctrl-C stops both.
// Environment: DEMO_PORT, the editor's port (default 1880, or a free one); DEMO_DIR, the user directory (.demo).
const fs = require('fs');
const path = require('path');
const net = require('net');
const { spawn } = require('child_process');
const { DEMO_HOUSE, DeviceSimulator } = require('../dist/src/simulator');

const root = path.join(__dirname, '..');
const userDir = process.env.DEMO_DIR ? path.resolve(process.env.DEMO_DIR) : path.join(root, '.demo');
const pkg = require('../package.json');
const DEMO_PASSWORD = 'demo-pass-1';
const DEMO_EXAMPLES = ['Monitoring.json', 'Dashboard.json', 'Zero feed-in.json'];
// Examples whose writing nodes the demo enables: the simulator is no battery to protect. The dashboard's zero feed-in
// runs from the start against the simulator's house (its mode buttons on the page switch hold, charge, standby). The others
// stay inert as imported, so that one regulator steers: the Zero feed-in tab's own would fight the dashboard's.
const ARMED_EXAMPLES = ['Dashboard.json'];
const WRITING_TYPES = ['localbattery-control', 'localbattery-write', 'localbattery-zero-feed-in'];
// The demo has no MQTT broker: inputs from one stay disabled (they would only retry a connection).
const NEEDS_BROKER = ['mqtt in', 'mqtt out'];
const DASHBOARD = '@flowfuse/node-red-dashboard';
const DASHBOARD_PATH = '/dashboard/battery';

function freePort(preferred) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => {
      const fallback = net.createServer();
      fallback.listen(0, '127.0.0.1', () => {
        const { port } = fallback.address();
        fallback.close(() => resolve(port));
      });
    });
    server.listen(preferred, '127.0.0.1', () => server.close(() => resolve(preferred)));
  });
}

/** The demo flows: the chosen examples, each pointed at the simulator and armed, one tab each. */
function demoFlows(port) {
  const flows = [];
  const device = {
    id: 'demo-device',
    type: 'localbattery-device',
    name: 'Simulator',
    host: '127.0.0.1',
    port,
    auth: 'digest',
    username: 'opend',
    namespace: '',
    minInterval: 1000,
    timeout: 10000,
  };
  flows.push(device);
  for (const file of DEMO_EXAMPLES) {
    const example = JSON.parse(fs.readFileSync(path.join(root, 'examples', file), 'utf8'));
    const tab = { id: `demo-tab-${file.replace(/\W/g, '-')}`, type: 'tab', label: file.replace('.json', '') };
    flows.push(tab);
    for (const node of example) {
      if (node.type === 'localbattery-device') continue;
      const copy = { ...node, z: tab.id };
      if ('device' in copy) copy.device = device.id;
      if (WRITING_TYPES.includes(copy.type)) {
        if (ARMED_EXAMPLES.includes(file)) delete copy.d;
        else copy.d = true;
      }
      if (NEEDS_BROKER.includes(copy.type)) copy.d = true;
      flows.push(copy);
    }
  }
  return flows;
}

/** `link` as a symbolic link to `target`, replacing whatever was there (e.g. an install by an older demo). */
function linkTo(link, target) {
  try {
    if (fs.readlinkSync(link) === target) return;
  } catch {
    // Not a link (or nothing): replaced below.
  }
  fs.rmSync(link, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(link), { recursive: true });
  fs.symlinkSync(target, link, 'junction');
}

/**
 * The demo's user directory gets this package (the working tree) and the dashboard (the project's devDependency)
 * as links in its node_modules, where Node-RED looks, as a user's ~/.node-red would have them installed. Nothing
 * is downloaded: `npm start` works offline once `npm install` has run.
 */
function linkDemoModules() {
  let dashboardDir;
  try {
    dashboardDir = path.dirname(require.resolve(`${DASHBOARD}/package.json`, { paths: [root] }));
  } catch {
    throw new Error(`${DASHBOARD} is missing: run \`npm install\` (with its dev dependencies) first`);
  }
  const modules = path.join(userDir, 'node_modules');
  linkTo(path.join(modules, ...pkg.name.split('/')), root);
  linkTo(path.join(modules, ...DASHBOARD.split('/')), dashboardDir);
  // The palette manager reads the user directory's package.json to list what is installed.
  const manifest = {
    name: 'local-battery-demo',
    private: true,
    dependencies: { [pkg.name]: 'file:..', [DASHBOARD]: pkg.devDependencies[DASHBOARD] },
  };
  fs.writeFileSync(path.join(userDir, 'package.json'), JSON.stringify(manifest, null, 2));
}

async function main() {
  const simPort = await freePort(18080);
  const uiPort = process.env.DEMO_PORT ? Number(process.env.DEMO_PORT) : await freePort(1880);
  // Self-consumption at start, until the dashboard's zero feed-in takes over within a second; its meter is the
  // simulator's meter point (11016), which the battery's power changes.
  const simulator = new DeviceSimulator({
    host: '127.0.0.1',
    port: simPort,
    udpPort: null,
    password: DEMO_PASSWORD,
    namespace: 'Indevolt',
    // A house for the zero feed-in to hold at 0 W (a kettle every 5 min, PV with a passing cloud), and a battery that,
    // like a real one, follows its setpoint after a dead time and a lag; in real time, so the regulator meets them.
    house: DEMO_HOUSE,
    deadTimeS: 1,
    lagS: 1.5,
  });
  await simulator.start();

  fs.mkdirSync(userDir, { recursive: true });
  linkDemoModules();
  fs.writeFileSync(path.join(userDir, 'flows.json'), JSON.stringify(demoFlows(simPort), null, 2));
  // The demo keeps its credentials unencrypted: it is a throwaway user directory on loopback.
  fs.writeFileSync(path.join(userDir, 'flows_cred.json'), JSON.stringify({ 'demo-device': { password: DEMO_PASSWORD } }));
  fs.writeFileSync(
    path.join(userDir, 'settings.js'),
    `module.exports = ${JSON.stringify(
      {
        uiHost: '127.0.0.1',
        uiPort,
        flowFile: 'flows.json',
        credentialSecret: false,
        telemetry: { enabled: false },
        editorTheme: { tours: false, projects: { enabled: false } },
        logging: { console: { level: 'info' } },
      },
      null,
      2,
    )};\n`,
  );

  const red = spawn(
    process.execPath,
    [require.resolve('node-red/red.js'), '--userDir', userDir, '--settings', path.join(userDir, 'settings.js')],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let announced = false;
  red.stdout.on('data', (chunk) => {
    process.stdout.write(chunk);
    if (!announced && /Started flows/.test(chunk.toString())) {
      announced = true;
      console.log(`\n  Demo ready. Open the editor:    http://127.0.0.1:${uiPort}/`);
      console.log(`  and the dashboard:             http://127.0.0.1:${uiPort}${DASHBOARD_PATH}`);
      console.log(`  Simulated battery at http://127.0.0.1:${simPort} (user opend). Ctrl-C stops both.\n`);
    }
  });

  let stopping = false;
  const redExited = new Promise((resolve) => red.once('exit', (code) => resolve(code ?? 0)));
  // Exits once Node-RED and the simulator have both stopped: nothing is left running.
  const stop = (code) => {
    if (stopping) return;
    stopping = true;
    red.kill('SIGINT');
    Promise.all([redExited, simulator.stop()]).then(
      () => process.exit(code),
      (error) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop(0));
  process.on('SIGTERM', () => stop(0));
  void redExited.then((code) => stop(code));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
